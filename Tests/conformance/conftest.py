"""Fixtures: a real parleyd per test module (or per configuration), started on 127.0.0.1 with discovery off,
its port read from the `parleyd ready … port=N` log line (docs/operations.md, Logs)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

import parley_wire as wire

ROOT = Path(__file__).resolve().parents[2]
PARLEYD = Path(os.environ.get("PARLEYD", ROOT / ".build" / "debug" / "parleyd"))
READY_TIMEOUT = 20.0


def _optional_flags() -> list[str]:
    """Flags for features that may or may not be in the binary under test: a parleyd that serves the web
    debugger on 127.0.0.1:7207 by default is started with it off, so that several can run at once."""
    try:
        help_text = subprocess.run([str(PARLEYD), "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--web-listen", "off"] if "--web-listen" in help_text else []


OPTIONAL_FLAGS: list[str] | None = None


class Daemon:
    """One parleyd process in a process group of its own, with its stderr collected by a thread."""

    def __init__(self, *args: str, secret: bytes | None = None, config: dict | None = None):
        if not PARLEYD.exists():
            pytest.fail(f"{PARLEYD} is missing: build it first (swift build)")
        self.directory = tempfile.mkdtemp(prefix="parley-conf-")
        self.control_socket = os.path.join(self.directory, "ctl.sock")
        self.secret = secret
        command = [str(PARLEYD), "--no-discovery", "--port", "0", "--data-directory", self.directory,
                   "--control-socket", self.control_socket, "--name", "conformance"]
        if secret is not None:
            # §4.1: one line of 64 hexadecimal digits and a newline, accessible to its owner only.
            self.secret_file = os.path.join(self.directory, "secret")
            fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(secret.hex() + "\n")
            command += ["--secret-file", self.secret_file]
        if config is not None:
            import json
            self.config_file = os.path.join(self.directory, "parleyd.json")
            with open(self.config_file, "w") as file:
                json.dump(config, file)
            command += ["--config", self.config_file]
        global OPTIONAL_FLAGS
        if OPTIONAL_FLAGS is None:
            OPTIONAL_FLAGS = _optional_flags()
        command += OPTIONAL_FLAGS + list(args)
        env = {key: value for key, value in os.environ.items() if not key.startswith("PARLEY_")}
        env.pop("JOURNAL_STREAM", None)
        env.pop("NOTIFY_SOCKET", None)
        self.lines: list[str] = []
        self.lines_changed = threading.Condition()
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env, start_new_session=True)
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()
        RUNNING.append(self)
        ready = self.wait_for_line("parleyd ready", READY_TIMEOUT)
        self.port = int(re.search(r"\bport=(\d+)", ready).group(1))
        self.peer_id = re.search(r"\bpeer-id=([0-9a-fA-F-]{36})", ready).group(1)

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            with self.lines_changed:
                self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))
                self.lines_changed.notify_all()
        with self.lines_changed:
            self.lines.append("<stderr closed>")
            self.lines_changed.notify_all()

    def wait_for_line(self, text: str, timeout: float = 5.0, start: int = 0) -> str:
        """Waits for a log line containing `text` (from line index `start` on)."""
        deadline = time.monotonic() + timeout
        with self.lines_changed:
            while True:
                for line in self.lines[start:]:
                    if text in line:
                        return line
                if "<stderr closed>" in self.lines:
                    pytest.fail(f"parleyd exited (status {self.process.poll()}) before logging {text!r}:\n"
                                + "\n".join(self.lines[-30:]))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"parleyd did not log {text!r} within {timeout} s:\n" + "\n".join(self.lines[-30:]))
                self.lines_changed.wait(remaining)

    def mark(self) -> int:
        with self.lines_changed:
            return len(self.lines)

    def log(self) -> str:
        with self.lines_changed:
            return "\n".join(self.lines)

    # -- peers
    def dial(self, **kwargs) -> wire.Connection:
        if self.secret is not None:
            kwargs.setdefault("secret", self.secret)
        return wire.dial(self.port, **kwargs)

    def connect(self, **kwargs) -> wire.Connection:
        return wire.connect_tcp(self.port, **kwargs)

    def control(self) -> wire.Connection:
        """A local client on the control socket: the ordinary protocol, always open (§1)."""
        conn = wire.connect_unix(self.control_socket)
        wire.handshake(conn, name="py-control")
        return conn

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)
        self.reader.join(5)
        if self in RUNNING:
            RUNNING.remove(self)
        shutil.rmtree(self.directory, ignore_errors=True)
        return self.process.returncode


@pytest.fixture(scope="module")
def start_parleyd():
    """A factory: start_parleyd('--flag', 'value', secret=..., config=...) -> Daemon, stopped after the module."""
    daemons: list[Daemon] = []

    def start(*args: str, **kwargs) -> Daemon:
        daemon = Daemon(*args, **kwargs)
        daemons.append(daemon)
        return daemon

    yield start
    for daemon in daemons:
        daemon.stop()


@pytest.fixture(scope="module")
def parleyd(start_parleyd) -> Daemon:
    """parleyd with its defaults (open mode)."""
    return start_parleyd()


@pytest.fixture
def control(parleyd):
    conn = parleyd.control()
    yield conn
    conn.close()


RUNNING: list[Daemon] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        # parleyd's log says why it did what it did: attach the end of each running daemon's log.
        for daemon in RUNNING:
            if daemon.process.poll() is None or daemon.lines:
                report.sections.append((f"parleyd log (port {getattr(daemon, 'port', '?')})",
                                        "\n".join(daemon.lines[-40:])))
