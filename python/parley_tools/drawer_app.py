"""scripts/interop/drawer_app.py (an app offering a drawer, written from docs/drawer.md) as a child process for the
tests: its JSON event lines as they come, and waiting for one of them as an event, never a sleep."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

DRAWER_APP = Path(__file__).resolve().parents[2] / "scripts" / "interop" / "drawer_app.py"


class DrawerApp:
    """drawer_app.py as a child process (its own process group), connected to a parleyd's port; `declared` is its
    declaration event, `remembered` the values parleyd handed it before it declared."""

    def __init__(self, port: int, *arguments: str, name: str = "Drawer Demo", timeout: float = 15):
        self.name = name
        self.timeout = timeout
        self.process = subprocess.Popen(
            [sys.executable, str(DRAWER_APP), "--connect", "127.0.0.1", str(port), "--name", name, *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        self.events: list[dict] = []
        self.changed = threading.Condition()
        self.ended = False
        threading.Thread(target=self._read, daemon=True).start()
        self.declared = self.wait_for(lambda event: event["event"] == "declared", "its declaration")
        self.remembered = next((e["values"] for e in self.events if e["event"] == "remembered"), None)

    def _read(self) -> None:
        for raw in self.process.stdout:
            with self.changed:
                self.events.append(json.loads(raw))
                self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def mark(self) -> int:
        with self.changed:
            return len(self.events)

    def since(self, mark: int) -> list[dict]:
        with self.changed:
            return list(self.events[mark:])

    def wait_for(self, predicate, what: str, start: int = 0, timeout: float | None = None) -> dict:
        """The first event from index `start` on that satisfies `predicate`, once it is there."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        with self.changed:
            while True:
                for event in self.events[start:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if self.ended or remaining <= 0:
                    stderr = self.process.stderr.read().decode() if self.ended else ""
                    raise AssertionError(f"{self.name} did not report {what} ({'it exited' if self.ended else 'timeout'});"
                                         f" its events: {self.events[start:]} {stderr}")
                self.changed.wait(remaining)

    def stop(self) -> int:
        """SIGTERM (the app closes with going-away and exits); SIGKILL if it does not. Answers the exit status."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
            except ProcessLookupError:
                pass
        return self.process.returncode
