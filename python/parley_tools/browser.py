"""Helpers for the web debugger's browser tests (Tests/web): a parleyd with its web debugger on, an app in the
original framing that records states and receives replays, PNG screenshots made here, and a headless Chromium."""
import importlib.util
import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from pathlib import Path

from parley_tools import parleyd

REPOSITORY = parleyd.REPOSITORY
PARLEYD = Path(os.environ.get("PARLEYD", REPOSITORY / ".build" / "debug" / "parleyd"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(os.environ.get("WEB_TEST_ARTIFACTS", "/tmp/parley-web-tests"))
# The pages built into parleyd by default; a folder of pages instead when this is set (scripts/web-tests sets it
# when the built-in copy is older than Sources/ParleyWeb/Assets).
ASSETS_DIRECTORY = os.environ.get("PARLEY_WEB_ASSETS_DIRECTORY")

_spec = importlib.util.spec_from_file_location("original_debugger_app", REPOSITORY / "scripts" / "interop" / "original_debugger_app.py")
original_app = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(original_app)


# PNG screenshots, encoded here (zlib + CRC32; no imaging library needed).

def png(width, height, pixel):
    """A truecolour PNG; pixel(x, y) answers (r, g, b)."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            rows.extend(pixel(x, y))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")


def app_screenshot(items, width=180, height=320, accent=(47, 111, 221)):
    """Something that looks like a list app: a title bar, then one row per item (a dot and a bar of its length)."""
    row_height = 28

    def pixel(x, y):
        if y < 36:
            return accent
        row, inside = divmod(y - 44, row_height)
        if 0 <= row < len(items) and y >= 44:
            if inside == row_height - 1:
                return (225, 228, 232)
            if 8 <= inside <= 19:
                if 10 <= x <= 21:
                    return accent
                if 32 <= x < 32 + min(130, 8 * len(str(items[row]))):
                    return (60, 64, 72)
        return (250, 250, 252)

    return png(width, height, pixel)


# parleyd

class Parleyd(parleyd.Parleyd):
    """A parleyd with its own data directory, in its own process group; `web` is its web debugger's URL."""

    def __init__(self, extra_arguments=(), executable=PARLEYD, config=None, environment=None):
        self.directory = tempfile.mkdtemp(prefix="parley-web-")
        os.chmod(self.directory, 0o700)
        arguments = [
            "--no-discovery", "--port", "0", "--web-listen", "127.0.0.1:0",
            "--data-directory", self.directory, "--control-socket", os.path.join(self.directory, "ctl.sock"),
            *extra_arguments,
        ]
        if config is not None:
            config_path = os.path.join(self.directory, "parleyd.json")
            with open(config_path, "w") as file:
                json.dump(config, file)
            arguments += ["--config", config_path]
        if ASSETS_DIRECTORY:
            arguments += ["--web-assets-directory", str(Path(ASSETS_DIRECTORY).resolve())]
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.directory, **(environment or {})}
        try:
            super().__init__(executable, arguments, environment=environment)
        except parleyd.ParleydError:
            subprocess.run(["rm", "-rf", self.directory], check=False)
            raise

    def stop(self):
        """SIGTERM to the whole process group, SIGKILL if it is not gone within 5 s."""
        super().stop(timeout=5)
        subprocess.run(["rm", "-rf", self.directory], check=False)

    def get(self, path):
        """GET on the web API (from Python, for checks); answers the decoded JSON."""
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(self.web + path, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            error.msg = f"{error.msg}: GET {path}: {error.read().decode('utf-8', 'replace')}"
            raise


# An app in the original framing

class OriginalApp:
    """Connects to parleyd's port, records states (one frame each) and collects the states parleyd replays."""

    def __init__(self, port, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.settimeout(None)
        self.received = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                header = original_app.read_exactly(self.sock, 5)
            except OSError:
                header = None
            if header is None or header[0] != original_app.START_BYTE:
                return
            (length,) = struct.unpack("<i", header[1:5])
            body = original_app.read_exactly(self.sock, length)
            if body is None:
                return
            with self.arrived:
                self.received.append(body)
                self.arrived.notify_all()

    def send(self, action, state, screenshot=b""):
        """state: bytes (sent byte for byte) or a value to encode as JSON."""
        state_bytes = state if isinstance(state, bytes) else json.dumps(state, separators=(",", ":")).encode()
        self.sock.sendall(original_app.frame(action, state_bytes, screenshot))

    def wait_for_replay(self, count=1, timeout=10):
        deadline = time.monotonic() + timeout
        with self.arrived:
            while len(self.received) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"the app received {len(self.received)} replayed states, expected {count}")
                self.arrived.wait(remaining)
            return self.received[count - 1]

    def close(self):
        try:
            # shutdown first: the reader thread's recv holds the socket open, so close alone would send no FIN.
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def wait_until(parleyd, predicate, what, timeout=20):
    """Waits until predicate() holds, checking again after every event of parleyd's live stream: subscribe first,
    then look, so that a change in between is seen either way. A change that sends no event is still seen
    within a second (the read times out and the predicate is checked again)."""
    import urllib.request
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(parleyd.web + "/api/events", headers={"Accept": "text/event-stream"})
    while True:
        # A read that timed out leaves the stream unusable: each round subscribes afresh.
        with urllib.request.urlopen(request, timeout=1) as stream:
            try:
                while True:
                    result = predicate()
                    if result:
                        return result
                    if time.monotonic() > deadline:
                        raise AssertionError(f"timed out waiting for {what}")
                    if not stream.readline():
                        raise AssertionError(f"parleyd closed the live stream while waiting for {what}")
            except (socket.timeout, TimeoutError):
                pass


def wait_for_entries(parleyd, entries=1, timeout=20):
    """Waits until the newest session holds `entries` entries; answers that session."""
    def newest():
        sessions = parleyd.get("/api/sessions?limit=1")["sessions"]
        return sessions[0] if sessions and sessions[0]["entryCount"] >= entries else None
    return wait_until(parleyd, newest, f"{entries} entries in the newest session", timeout)


# Chromium

def start_browser(width=1440, height=900):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", f"--window-size={width},{height}",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--metrics-recording-only", "--password-store=basic"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER, popen_kw={"start_new_session": True})
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(30)
    return driver, service


def stop_browser(driver, service):
    pid = service.process.pid if service.process else None
    try:
        driver.quit()
    finally:
        # chromedriver and every Chromium process it started share its process group: give Chromium a moment to
        # end on its own (and reap its helpers), then kill whatever is left of the group.
        if pid:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and _group_alive(pid):
                time.sleep(0.05)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _group_alive(pgid):
    """True while a process of group `pgid` is running (zombies awaiting their parent do not count)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def request_mark(driver):
    """The page's clock now: `requests_since` lists what the page fetched after it."""
    return driver.execute_script("return performance.now()")


def requests_since(driver, mark):
    """The paths (with query) of the requests the page made after `mark` and that completed (Resource Timing), so a
    test can tell a change that came through the live stream from one the page fetched again."""
    return driver.execute_script("""
        return performance.getEntriesByType('resource')
          .filter((entry) => entry.startTime >= arguments[0])
          .map((entry) => { const url = new URL(entry.name); return url.pathname + url.search; });""", mark)


def severe_console_entries(driver):
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
