"""Fixtures: a real parleyd per test module (or per configuration), started on 127.0.0.1 with discovery off, ready
once it has written its readiness line (parley_tools.parleyd; docs/operations.md, Logs)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from parley_tools import wire
from parley_tools.parleyd import REPOSITORY, Parleyd, ParleydError

PARLEYD = Path(os.environ.get("PARLEYD", REPOSITORY / ".build" / "debug" / "parleyd"))


def _optional_flags() -> list[str]:
    """Flags for features that may or may not be in the binary under test: a parleyd that serves the web
    debugger on 127.0.0.1:7207 by default is started with it off, so that several can run at once."""
    try:
        help_text = subprocess.run([str(PARLEYD), "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--web-listen", "off"] if "--web-listen" in help_text else []


OPTIONAL_FLAGS: list[str] | None = None


class Daemon(Parleyd):
    """One parleyd in a temporary data directory of its own, with the conformance suite's defaults (optionally a
    shared secret and a configuration file); its log is attached to a failing test's report."""

    def __init__(self, *args: str, secret: bytes | None = None, config: dict | None = None):
        self.directory = tempfile.mkdtemp(prefix="parley-conf-")
        self.secret = secret
        command = ["--no-discovery", "--port", "0", "--data-directory", self.directory,
                   "--control-socket", os.path.join(self.directory, "ctl.sock"), "--name", "conformance"]
        if secret is not None:
            # §4.1: one line of 64 hexadecimal digits and a newline, accessible to its owner only.
            self.secret_file = os.path.join(self.directory, "secret")
            fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(secret.hex() + "\n")
            command += ["--secret-file", self.secret_file]
        if config is not None:
            self.config_file = os.path.join(self.directory, "parleyd.json")
            with open(self.config_file, "w") as file:
                json.dump(config, file)
            command += ["--config", self.config_file]
        global OPTIONAL_FLAGS
        if OPTIONAL_FLAGS is None:
            OPTIONAL_FLAGS = _optional_flags()
        RUNNING.append(self)
        try:
            super().__init__(PARLEYD, command + OPTIONAL_FLAGS + list(args))
        except ParleydError as error:
            self.stop()
            pytest.fail(str(error))

    def wait_for_line(self, text: str, timeout: float = 5.0, start: int = 0) -> str:
        """Waits for a log line containing `text` (from line index `start` on); fails the test when none comes."""
        try:
            return super().wait_for_line(text, timeout, start)
        except ParleydError as error:
            pytest.fail(str(error))

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

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        status = super().stop(sig, timeout) if hasattr(self, "process") else None
        if self in RUNNING:
            RUNNING.remove(self)
        shutil.rmtree(self.directory, ignore_errors=True)
        return status


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


@pytest.fixture(scope="module")
def device():
    """A device of the suite's own (docs/protocol.md §4.2), as `wire.make_device` makes it."""
    directory = tempfile.mkdtemp(prefix="parley-device-")
    yield wire.make_device(directory, "python-peer")
    shutil.rmtree(directory, ignore_errors=True)
