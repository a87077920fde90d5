"""Starts a parleyd and waits until it is ready, from its machine-readable readiness line.

Once parleyd listens (and discovery has settled, and the web debugger listens when it is on), it logs
"parleyd ready" and writes one JSON line to stdout (docs/operations.md, Logs):

    {"parleyd":"ready","pid":1234,"port":41235,"peerId":"…","name":"…","controlSocket":"…","web":"http://…"|null,"otlp":"http://…"|null,
     "dataDirectory":"…","discovery":"…"}

`Parleyd` starts the process in a process group of its own, collects its log (stderr) line by line in a thread,
and waits for that line; `stop()` ends the group.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

REPOSITORY = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 30.0


class ParleydError(RuntimeError):
    """parleyd exited, or did not say what was waited for in time; the message ends with the end of its log."""


def find_parleyd(*candidates: str | os.PathLike | None) -> Path:
    """The first of $PARLEYD and `candidates` (relative to the repository) that is a file; ParleydError if none is."""
    for candidate in (os.environ.get("PARLEYD"), *candidates):
        if candidate and (REPOSITORY / candidate).is_file():
            return REPOSITORY / candidate
    tried = ", ".join(str(c) for c in candidates)
    raise ParleydError(f"no parleyd binary found (tried $PARLEYD, {tried}): build one first (swift build --product parleyd)")


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without what would change parleyd's behaviour: PARLEY_* (parleyd refuses those it
    does not know, and known ones change its defaults) and systemd's JOURNAL_STREAM and NOTIFY_SOCKET."""
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("PARLEY_") and key not in ("JOURNAL_STREAM", "NOTIFY_SOCKET")}
    environment.update(overrides)
    # Tests run side by side: the OTLP receiver on a free port, not on OTLP's default one, which only one could have.
    environment.setdefault("PARLEY_OTLP_LISTEN", "127.0.0.1:0")
    return environment


class Parleyd:
    """One running parleyd. After the constructor returns, `ready` holds the readiness line's fields, and `port`,
    `peer_id`, `web` (None when the web debugger is off), `control_socket` and `pid` are set."""

    def __init__(self, executable: str | os.PathLike, arguments: Sequence[str] = (), *,
                 environment: Mapping[str, str] | None = None, ready_timeout: float = READY_TIMEOUT):
        if not Path(executable).is_file():
            raise ParleydError(f"{executable} is missing: build it first (swift build --product parleyd)")
        self.lines: list[str] = []
        self.line_times: list[float] = []  # time.monotonic() of each line in `lines`
        self.ready: dict | None = None
        self.exited = False
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [str(executable), *arguments], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(environment) if environment is not None else clean_environment(), start_new_session=True)
        self.pid = self.process.pid
        # Both pipes are read until parleyd exits: a full pipe would block its logging.
        self._readers = [threading.Thread(target=self._read_log, daemon=True),
                         threading.Thread(target=self._read_stdout, daemon=True)]
        for reader in self._readers:
            reader.start()
        try:
            self.ready = self._wait(lambda: self.ready, "its readiness line", ready_timeout)
        except ParleydError:
            self.stop()
            raise
        self.port: int = self.ready["port"]
        self.peer_id: str = self.ready["peerId"]
        self.web: str | None = self.ready["web"].rstrip("/") if self.ready["web"] else None
        self.control_socket: str = self.ready["controlSocket"]
        self.otlp: str | None = self.ready.get("otlp")  # the OTLP/HTTP endpoint; None when off or its port was taken
        self.executable = Path(executable)

    def sign_in_url(self, path: str = "/") -> str:
        """The web debugger's address with its sign-in token, as `parleyctl web` prints it (asked over the control
        socket, as a person does): opening it gives the browser the cookie that lets it change things. `path` is
        where the browser lands."""
        parleyctl = self.executable.with_name("parleyctl")
        result = subprocess.run([str(parleyctl), "web", "--socket", self.control_socket], capture_output=True, text=True,
                                timeout=20, env=clean_environment())
        if result.returncode != 0:
            raise ParleydError(f"parleyctl web failed ({result.returncode}): {result.stderr.strip()}")
        url = result.stdout.strip()
        base, _, query = url.partition("?")
        return base.rstrip("/") + path + ("?" + query if query else "")

    def _read_log(self) -> None:
        for raw in self.process.stderr:
            with self._changed:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.line_times.append(time.monotonic())
                self._changed.notify_all()
        with self._changed:
            self.exited = True
            self._changed.notify_all()

    def _read_stdout(self) -> None:
        for raw in self.process.stdout:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and line.get("parleyd") == "ready":
                with self._changed:
                    self.ready = line
                    self._changed.notify_all()

    def _wait(self, found: Callable[[], object], what: str, timeout: float):
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = found()
                if result:
                    return result
                if self.exited:
                    raise ParleydError(f"parleyd exited (status {self.process.poll()}) before {what}:\n{self.tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ParleydError(f"parleyd did not give {what} within {timeout} s:\n{self.tail()}")
                self._changed.wait(remaining)

    def wait_for_line(self, text: str | Callable[[str], bool], timeout: float = 5.0, start: int = 0) -> str:
        """The first log line from index `start` on that contains `text` (or satisfies it, when it is a function),
        waiting up to `timeout` seconds for it."""
        matches = text if callable(text) else (lambda line: text in line)
        return self._wait(lambda: next((line for line in self.lines[start:] if matches(line)), None),
                          f"logging {text!r}" if isinstance(text, str) else "the line waited for", timeout)

    def mark(self) -> int:
        """Where the log is now: `wait_for_line(…, start=mark)` looks only at what comes after."""
        with self._changed:
            return len(self.lines)

    def log(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def lines_between(self, start: float, end: float) -> list[str]:
        """The log lines that arrived between two time.monotonic() instants."""
        with self._changed:
            return [line for when, line in zip(self.line_times, self.lines) if start <= when <= end]

    def tail(self, count: int = 30) -> str:
        return "\n".join(self.lines[-count:])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """`sig` to parleyd's process group, SIGKILL when it has not exited within `timeout` s; its exit status."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
            except ProcessLookupError:
                pass
        for reader in self._readers:
            reader.join(5)
        return self.process.wait()
