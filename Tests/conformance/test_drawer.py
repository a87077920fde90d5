"""The debug drawer (docs/drawer.md) at the protocol level, through a real parleyd: apps written from the documents
alone (scripts/interop/drawer_app.py, and the conformance client of parley_tools.wire speaking the drawer's messages
by hand), driven by parleyctl (drawer, set, invoke) and by the web API (/api/drawers, the live stream). What an app
receives is read from its event lines or its socket, with deadlines; nothing sleeps and hopes."""
from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import textwrap
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from parley_tools import waiting, wire
from parley_tools.drawer_app import DrawerApp

ROOT = Path(__file__).resolve().parents[2]
PARLEYCTL = Path(os.environ.get("PARLEYCTL", ROOT / ".build" / "debug" / "parleyctl"))
DRAWER_APP = ROOT / "scripts" / "interop" / "drawer_app.py"
TIMEOUT = 15.0

SET, INVOKE, RESULT = "parley.drawer.Set", "parley.drawer.Invoke", "parley.drawer.Result"
DECLARE, CHANGED = "parley.drawer.Declare", "parley.drawer.Changed"
REMEMBERED, VALUES = "parley.drawer.Remembered", "parley.drawer.Values"

# The drawer drawer_app.py declares (its docstring), by item id.
APP_ITEMS = {
    "network.slow": {"kind": "toggle", "value": False, "remember": True, "section": "Network"},
    "latency": {"kind": "number", "value": 0, "min": 0, "max": 5000, "step": 100, "section": "Network"},
    "theme": {"kind": "choice", "value": "light", "options": [{"id": "light", "label": "Light"}, {"id": "dark", "label": "Dark"}]},
    "greeting": {"kind": "text", "value": "Hello", "maxLength": 64},
    "reset": {"kind": "action", "destructive": True},
    "build": {"kind": "info"},
}


# ---------------------------------------------------------------------------------------------- helpers

def ctl(daemon, *arguments: str, timeout: float = 30) -> subprocess.CompletedProcess:
    if not PARLEYCTL.exists():
        pytest.fail(f"{PARLEYCTL} is missing: build it first (swift build)")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARLEY_")}
    env["NO_COLOR"] = "1"
    return subprocess.run([str(PARLEYCTL), *arguments, "--socket", daemon.control_socket], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def ctl_json(daemon, *arguments: str) -> list[dict]:
    result = ctl(daemon, *arguments, "--json")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def drawer_of(daemon, name: str) -> dict | None:
    """parleyctl drawer --json: the drawer of the app called `name`, or None."""
    return next((d for d in ctl_json(daemon, "drawer") if d["peer"]["name"] == name), None)


def values_of(daemon, name: str) -> dict:
    return {item["id"]: item.get("value") for item in drawer_of(daemon, name)["items"]}


def wait_until(predicate, what: str, timeout: float = TIMEOUT):
    return waiting.wait_until(predicate, what, timeout)


def assert_refused(result: subprocess.CompletedProcess, *words: str) -> None:
    """A refusal: non-zero status, nothing on stdout, one clear error line naming `words`."""
    assert result.returncode != 0, f"accepted: {result.stdout!r}"
    assert result.stdout == "", result.stdout
    assert result.stderr.startswith("parleyctl: error: "), result.stderr
    for word in words:
        assert word.lower() in result.stderr.lower(), f"{word!r} not in {result.stderr!r}"


def receives_nothing(daemon, app: DrawerApp, start: int) -> None:
    """The app received nothing since `start`: the next thing it sees is a set sent now (its connection keeps
    order, so anything sent to it before would have come first)."""
    token = f"sentinel-{uuid.uuid4().hex[:8]}"
    result = ctl(daemon, "set", app.name, "greeting", token)
    assert result.returncode == 0, result.stderr
    sentinel = app.wait_for(lambda e: e["event"] == "set" and e["value"] == token, "the sentinel set", start)
    received = [e for e in app.since(start) if e["event"] in ("set", "invoked", "refused")]
    assert received == [sentinel], f"the app received {received[:-1]}"


class LiveStream:
    """GET /api/events (server-sent events) read by a thread: a list of (event, data)."""

    def __init__(self, web: str):
        host, port = re.match(r"http://([^:/]+):(\d+)", web).groups()
        self.connection = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
        self.connection.request("GET", "/api/events", headers={"Accept": "text/event-stream"})
        self.response = self.connection.getresponse()
        assert self.response.status == 200
        self.connection.sock.settimeout(None)
        self.events: list[tuple[str, dict]] = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name, data = "message", []
        try:
            while True:
                line = self.response.readline()
                if not line:
                    return
                line = line.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
                elif line == "":
                    if data:
                        with self.changed:
                            self.events.append((name, json.loads("\n".join(data))))
                            self.changed.notify_all()
                    name, data = "message", []
        except (OSError, ValueError, http.client.HTTPException, AttributeError):
            # The stream ended. Closed by the test while this thread reads, http.client fails in its own ways
            # (an AttributeError on the file it has just dropped, among them): all of them mean the same.
            return

    def mark(self) -> int:
        with self.changed:
            return len(self.events)

    def wait_for(self, predicate, what: str, start: int = 0, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for name, data in self.events[start:]:
                    if name == "drawer" and predicate(data):
                        return data
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no drawer event with {what}; drawer events: "
                                         f"{[d for n, d in self.events[start:] if n == 'drawer']}")
                self.changed.wait(remaining)

    def close(self) -> None:
        try:
            self.connection.sock.shutdown(2)
        except OSError:
            pass
        self.connection.close()


class _KeepRedirect(urllib.request.HTTPRedirectHandler):
    """Hands a redirect back as it is: the sign-in link's answer carries the cookie."""

    def redirect_request(self, *arguments, **keywords):
        return None


class Web:
    """The web API from Python: the session cookie of the sign-in link (`parleyctl web`), JSON in and out, problems
    as answers."""

    def __init__(self, base: str, sign_in_url: str):
        self.base = base
        try:
            urllib.request.build_opener(_KeepRedirect).open(sign_in_url, timeout=TIMEOUT)
            raise AssertionError("the sign-in link did not redirect")
        except urllib.error.HTTPError as answer:
            assert answer.code == 303, answer.code
            cookie = answer.headers.get("Set-Cookie", "")
        self.cookie = cookie.split(";", 1)[0]
        assert self.cookie.startswith("parley_web="), cookie

    def call(self, method: str, path: str, body=None, *, cookie: bool = True, headers: dict | None = None, raw: bytes | None = None):
        """Answers (status, content type, decoded JSON body or None)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if cookie:
            request.add_header("Cookie", self.cookie)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                content = response.read()
                return response.status, response.headers.get("Content-Type", ""), json.loads(content) if content else None
        except urllib.error.HTTPError as error:
            content = error.read()
            return error.code, error.headers.get("Content-Type", ""), json.loads(content) if content else None


def item_path(peer_id: str, item: str) -> str:
    return f"/api/drawers/{peer_id}/items/{item}"


# ---------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def daemon(start_parleyd):
    """parleyd with its web debugger on 127.0.0.1 (a port of its own), for the web API's side of the drawer."""
    return start_parleyd("--web-listen", "127.0.0.1:0")


@pytest.fixture
def start_app(daemon):
    apps: list[DrawerApp] = []

    def start(*arguments: str, name: str | None = None) -> DrawerApp:
        app = DrawerApp(daemon.port, *arguments, name=name or f"drawer-{uuid.uuid4().hex[:8]}", timeout=TIMEOUT)
        apps.append(app)
        return app

    yield start
    for app in apps:
        app.stop()


@pytest.fixture(scope="module")
def app(daemon):
    """One drawer app for the tests that only set and look (each leaves the values as it found them or does not
    care); each test reads the app's events from its own mark on."""
    app = DrawerApp(daemon.port, name=f"shared-{uuid.uuid4().hex[:8]}", timeout=TIMEOUT)
    yield app
    app.stop()


@pytest.fixture
def web(daemon):
    return Web(daemon.web, daemon.sign_in_url())


def raw_app(daemon, name: str | None = None) -> wire.Connection:
    """The conformance client as an app offering a drawer: hello accepting Set and Invoke, no heartbeat."""
    return daemon.dial(name=name or f"raw-{uuid.uuid4().hex[:8]}", accepts=[SET, INVOKE])


def declare(conn: wire.Connection, items: list[dict]) -> None:
    conn.send_message(DECLARE, json.dumps({"items": items}).encode())


RAW_ITEMS = [
    {"id": "latency", "label": "Latency", "kind": "number", "value": 0, "min": 0, "max": 1000, "step": 100},
    {"id": "reset", "label": "Reset", "kind": "action"},
    {"id": "mode", "label": "Mode", "kind": "choice", "value": "a", "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]},
]


# ---------------------------------------------------------------------------------------------- parleyctl drawer

def test_drawer_lists_the_items_with_their_values(daemon, app):
    drawer = drawer_of(daemon, app.name)
    assert drawer is not None, ctl(daemon, "drawer").stdout
    assert re.fullmatch(r"[0-9a-f-]{36}", drawer["peer"]["id"]), drawer["peer"]
    listed = {item["id"]: item for item in drawer["items"]}
    assert list(listed) == [item["id"] for item in app.declared["items"]], "in the order the app declared them"
    for declared in app.declared["items"]:
        # Everything the app declared comes back as it was (values included).
        assert listed[declared["id"]] == declared, (listed[declared["id"]], declared)
    for item_id, expected in APP_ITEMS.items():
        assert {key: listed[item_id].get(key) for key in expected} == expected

    # One app, by name or by id prefix; the text form names each item with its value.
    assert [d["peer"]["name"] for d in ctl_json(daemon, "drawer", app.name)] == [app.name]
    assert [d["peer"]["name"] for d in ctl_json(daemon, "drawer", drawer["peer"]["id"][:8])] == [app.name]
    text = ctl(daemon, "drawer", app.name)
    assert text.returncode == 0, text.stderr
    assert app.name in text.stdout
    for item_id, value in [("network.slow", "false"), ("latency", "0"), ("theme", "light"), ("greeting", "Hello"), ("reset", "(action, destructive)"), ("build", "drawer_app.py")]:
        line = next((line for line in text.stdout.splitlines() if line.split() and line.split()[0] == item_id), None)
        assert line is not None, f"no line for {item_id}:\n{text.stdout}"
        if value is not None:
            assert value in line, line


def test_drawer_of_an_unknown_app_is_an_error(daemon, app):
    assert_refused(ctl(daemon, "drawer", "no-such-app-here"), "no-such-app-here")


# ---------------------------------------------------------------------------------------------- parleyctl set

@pytest.mark.parametrize("item, argument, value", [
    ("network.slow", "true", True),
    ("network.slow", "false", False),
    ("theme", "dark", "dark"),          # bare text for a choice
    ("theme", '"light"', "light"),      # or JSON
    ("latency", "300", 300),
    ("latency", "5000", 5000),          # the maximum itself
    ("latency", "0", 0),                # the minimum itself
    ("greeting", "Hi there", "Hi there"),
    ("greeting", '"quoted"', "quoted"),
    ("greeting", "x" * 64, "x" * 64),   # exactly maxLength
])
def test_a_valid_set_reaches_the_app_and_is_answered_with_its_value(daemon, app, item, argument, value):
    start = app.mark()
    result = ctl(daemon, "set", app.name, item, argument, "--json")
    assert result.returncode == 0, result.stderr
    event = app.wait_for(lambda e: e["event"] == "set", "the set", start)
    assert (event["item"], event["value"]) == (item, value)
    assert type(event["value"]) is type(value), f"the app received {event['value']!r}"
    assert json.loads(result.stdout) == {"value": value}
    assert values_of(daemon, app.name)[item] == value
    # Text output: the item and its new value.
    start = app.mark()
    text = ctl(daemon, "set", app.name, item, argument)
    assert text.returncode == 0 and item in text.stdout, (text.stdout, text.stderr)
    app.wait_for(lambda e: e["event"] == "set", "the second set", start)


@pytest.mark.parametrize("item, argument, words", [
    ("network.slow", "3", ["network.slow"]),                  # wrong type: a number for a toggle
    ("network.slow", "yes", ["network.slow"]),                # bare text for a toggle
    ("network.slow", '"true"', ["network.slow"]),             # a string, not a boolean
    ("latency", '"fast"', ["latency"]),                       # a string for a number
    ("latency", "true", ["latency"]),
    ("latency", "5100", ["latency", "5000"]),                 # above max
    ("latency", "150", ["latency", "100"]),                   # off the step
    ("latency", "100.5", ["latency", "100"]),
    ("theme", "blue", ["theme", "blue"]),                     # not an option
    ("theme", "Dark", ["theme", "Dark"]),                     # option ids are compared exactly (the label is Dark)
    ("theme", "true", ["theme"]),                             # a boolean for a choice
    ("greeting", "x" * 65, ["greeting", "64"]),               # longer than maxLength
    ("no.such.item", "1", ["no.such.item"]),                  # unknown item
    ("reset", "true", ["reset"]),                             # set on an action
    ("build", '"x"', ["build"]),                              # set on info
])
def test_an_invalid_value_is_refused_and_the_app_receives_nothing(daemon, app, item, argument, words):
    before = values_of(daemon, app.name)
    start = app.mark()
    result = ctl(daemon, "set", app.name, item, argument)
    assert_refused(result, *words)
    assert "\n" not in result.stderr.rstrip("\n"), f"one line: {result.stderr!r}"
    assert values_of(daemon, app.name) == before
    receives_nothing(daemon, app, start)


def test_a_number_below_the_minimum_is_refused(daemon, app):
    """A negative number is a value (JSON), refused here because it is below the minimum; after `--` too."""
    start = app.mark()
    result = subprocess.run([str(PARLEYCTL), "set", "--socket", daemon.control_socket, "--", app.name, "latency", "-100"],
                            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert_refused(result, "latency", "-100")
    receives_nothing(daemon, app, start)
    # Without `--`, as people type it: still the value, not an unknown option.
    start = app.mark()
    assert_refused(ctl(daemon, "set", app.name, "latency", "-100"), "latency", "-100")
    receives_nothing(daemon, app, start)


def test_a_set_for_an_unknown_app_is_refused(daemon, app):
    start = app.mark()
    assert_refused(ctl(daemon, "set", "no-such-app-here", "theme", "dark"), "no-such-app-here")
    assert_refused(ctl(daemon, "invoke", "no-such-app-here", "reset"), "no-such-app-here")
    receives_nothing(daemon, app, start)


def test_two_apps_of_one_name_are_told_apart_by_id(daemon, start_app):
    name = f"twin-{uuid.uuid4().hex[:8]}"
    one, two = start_app(name=name), start_app(name=name)
    drawers = [d for d in ctl_json(daemon, "drawer") if d["peer"]["name"] == name]
    assert len(drawers) == 2
    start_one, start_two = one.mark(), two.mark()
    assert_refused(ctl(daemon, "set", name, "theme", "dark"), name)
    # By id: exactly that app.
    ids = [d["peer"]["id"] for d in drawers]
    assert ctl(daemon, "set", ids[0], "greeting", "first").returncode == 0
    assert ctl(daemon, "set", ids[1][:13], "greeting", "second").returncode == 0
    got = {one.wait_for(lambda e: e["event"] == "set", "a set", start_one)["value"],
           two.wait_for(lambda e: e["event"] == "set", "a set", start_two)["value"]}
    assert got == {"first", "second"}
    assert len([e for e in one.since(start_one) + two.since(start_two) if e["event"] == "set"]) == 2


def test_an_app_that_refuses_a_value_says_why(daemon, start_app):
    app = start_app("--refuse", "greeting", "--refuse", "reset")
    start = app.mark()
    result = ctl(daemon, "set", app.name, "greeting", "Hi")
    assert_refused(result, "cannot be changed right now")
    app.wait_for(lambda e: e["event"] == "refused", "its refusal", start)
    assert values_of(daemon, app.name)["greeting"] == "Hello", "a refused value is not the drawer's"
    start = app.mark()
    assert_refused(ctl(daemon, "invoke", app.name, "reset"), "reset cannot be run right now")
    app.wait_for(lambda e: e["event"] == "refused" and e["item"] == "reset", "its refusal of the action", start)


# ---------------------------------------------------------------------------------------------- parleyctl invoke

def test_invoke_runs_the_action_and_prints_its_message(daemon, start_app):
    app = start_app()
    assert ctl(daemon, "set", app.name, "theme", "dark").returncode == 0
    start = app.mark()
    result = ctl(daemon, "invoke", app.name, "reset", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"message": "1 setting reset"}
    assert app.wait_for(lambda e: e["event"] == "invoked", "the invocation", start)["item"] == "reset"
    # The app put theme back itself and said so (Changed): parleyd's drawer follows.
    app.wait_for(lambda e: e["event"] == "changed" and e["item"] == "theme", "its own change", start)
    wait_until(lambda: values_of(daemon, app.name)["theme"] == "light", "theme back to light in parleyd's drawer")
    text = ctl(daemon, "invoke", app.name, "reset")
    assert text.returncode == 0 and "0 settings reset" in text.stdout, (text.stdout, text.stderr)


@pytest.mark.parametrize("item", ["network.slow", "build", "no.such.item"])
def test_invoke_of_what_is_not_an_action_is_refused(daemon, app, item):
    start = app.mark()
    assert_refused(ctl(daemon, "invoke", app.name, item), item)
    receives_nothing(daemon, app, start)


# ---------------------------------------------------------------------------------------------- remembered values

def test_remembered_values_come_back_to_a_restarted_app(daemon, start_app):
    name = f"remember-{uuid.uuid4().hex[:8]}"
    first = start_app(name=name)
    assert first.remembered == {}
    assert ctl(daemon, "set", name, "network.slow", "true").returncode == 0
    assert ctl(daemon, "set", name, "latency", "300").returncode == 0   # not declared with remember
    first.wait_for(lambda e: e["event"] == "set" and e["item"] == "latency", "the set of latency")
    assert first.stop() == 0
    wait_until(lambda: drawer_of(daemon, name) is None, "the drawer to go with its app")

    second = start_app(name=name)
    assert second.remembered == {"network.slow": True}
    declared = {item["id"]: item.get("value") for item in second.declared["items"]}
    assert declared["network.slow"] is True and declared["latency"] == 0
    assert values_of(daemon, name)["network.slow"] is True


def test_only_values_set_from_outside_are_remembered(daemon, start_app):
    name = f"remember-{uuid.uuid4().hex[:8]}"
    first = start_app(name=name)
    assert ctl(daemon, "set", name, "network.slow", "true").returncode == 0
    first.stop()
    wait_until(lambda: drawer_of(daemon, name) is None, "the drawer to go with its app")
    # The app turns it off itself (Changed): that is not a value set from outside.
    second = start_app("--change-after", "0", "network.slow=false", name=name)
    assert second.remembered == {"network.slow": True}
    second.wait_for(lambda e: e["event"] == "changed", "its own change")
    wait_until(lambda: values_of(daemon, name)["network.slow"] is False, "the app's own change in parleyd's drawer")
    second.stop()
    wait_until(lambda: drawer_of(daemon, name) is None, "the drawer to go with its app")
    third = start_app(name=name)
    assert third.remembered == {"network.slow": True}


def test_remembered_values_are_per_app_name(daemon, start_app):
    one = start_app(name=f"remember-{uuid.uuid4().hex[:8]}")
    assert ctl(daemon, "set", one.name, "network.slow", "true").returncode == 0
    other = start_app(name=f"remember-{uuid.uuid4().hex[:8]}")
    assert other.remembered == {}


# ---------------------------------------------------------------------------------------------- the messages on the wire

def test_the_drawer_messages_on_the_wire(daemon):
    """Remembered → Values; Declare; Set and Invoke arrive as requests with the documented payloads; the app's
    Result value is the drawer's value (even when it is not the one asked for); an error reply is the app's refusal."""
    name = f"raw-{uuid.uuid4().hex[:8]}"
    conn = raw_app(daemon, name)
    try:
        rid = conn.send_message(REMEMBERED, b"{}", request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.MESSAGE and answer.type_name == VALUES, answer
        assert json.loads(answer.payload) == {"values": {}}
        declare(conn, RAW_ITEMS)
        wait_until(lambda: drawer_of(daemon, name), "the declared drawer")

        # Set: a request; the app answers another value than the one asked for (it rounds, say): that one counts.
        child = subprocess.Popen([str(PARLEYCTL), "set", name, "latency", "300", "--json", "--socket", daemon.control_socket],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        request = conn.recv_message(type_name=SET)
        assert request.flags & wire.EXPECTS_REPLY, "Set is a request"
        assert json.loads(request.payload) == {"item": "latency", "value": 300}
        conn.reply(request, RESULT, b'{"value":200}')
        out, err = child.communicate(timeout=TIMEOUT)
        assert child.returncode == 0, err
        assert json.loads(out) == {"value": 200}
        assert values_of(daemon, name)["latency"] == 200

        # The app refuses: an error reply handler-failed with its reason.
        child = subprocess.Popen([str(PARLEYCTL), "set", name, "mode", "b", "--socket", daemon.control_socket],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        request = conn.recv_message(type_name=SET)
        assert json.loads(request.payload) == {"item": "mode", "value": "b"}
        conn.send(wire.error_reply_body(request.id, wire.HANDLER_FAILED, "mode b needs a restart"))
        out, err = child.communicate(timeout=TIMEOUT)
        assert child.returncode != 0 and "mode b needs a restart" in err, (out, err)
        assert values_of(daemon, name)["mode"] == "a"

        # Invoke: a request with the item; the Result's message is what parleyctl prints.
        child = subprocess.Popen([str(PARLEYCTL), "invoke", name, "reset", "--json", "--socket", daemon.control_socket],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        request = conn.recv_message(type_name=INVOKE)
        assert request.flags & wire.EXPECTS_REPLY, "Invoke is a request"
        assert json.loads(request.payload) == {"item": "reset"}
        conn.reply(request, RESULT, b'{"message":"3 items removed"}')
        out, err = child.communicate(timeout=TIMEOUT)
        assert child.returncode == 0, err
        assert json.loads(out) == {"message": "3 items removed"}

        # Changed: the app's own change is the drawer's value.
        conn.send_message(CHANGED, b'{"item":"mode","value":"b"}')
        wait_until(lambda: values_of(daemon, name)["mode"] == "b", "the app's own change")

        # Declare again: the new drawer replaces the old one.
        declare(conn, [{"id": "only", "label": "Only", "kind": "toggle", "value": True}])
        wait_until(lambda: [i["id"] for i in drawer_of(daemon, name)["items"]] == ["only"], "the second declaration")
        conn.assert_alive()
    finally:
        conn.close()
    wait_until(lambda: drawer_of(daemon, name) is None, "the drawer to go with its connection")


def test_an_invalid_declaration_is_not_listed(daemon):
    """A drawer of more than 256 items, or with an item id twice, is not taken (docs/drawer.md, Items)."""
    for items in (
        [{"id": f"t{i}", "label": "t", "kind": "toggle", "value": False} for i in range(257)],
        [{"id": "same", "label": "a", "kind": "toggle", "value": False}, {"id": "same", "label": "b", "kind": "toggle", "value": True}],
        [{"id": "c", "label": "c", "kind": "choice", "value": "x", "options": []}],
    ):
        name = f"raw-{uuid.uuid4().hex[:8]}"
        conn = raw_app(daemon, name)
        try:
            declare(conn, items)
            conn.assert_alive()   # handled (the one-way Declare came before this request on the connection)
            assert drawer_of(daemon, name) is None
        finally:
            conn.close()


DECLARE_LIMIT = 256 * 1024


def declare_payload(size: int) -> bytes:
    """A Declare of exactly `size` bytes whose every field is within its own limit: info items of up to 4096
    bytes each, the last one's value cut to make up the size (at least 64 bytes over 256 KiB needs 65 items)."""
    items, used = [], 0
    template = lambda i, value: {"id": f"info{i:03d}", "label": "Info", "kind": "info", "value": value}
    overhead = len(json.dumps({"items": []}).encode())
    while True:
        i = len(items)
        empty = len(json.dumps(template(i, "")).encode()) + (2 if items else 0)   # ", " between items
        room = size - overhead - used - empty
        assert room >= 0, "no room for another item"
        if room <= 4096:
            items.append(template(i, "x" * room))
            break
        items.append(template(i, "x" * 4000))
        used += empty + 4000
    payload = json.dumps({"items": items}).encode()
    assert len(payload) == size, (len(payload), size)
    return payload


def test_a_declaration_up_to_256_kib_is_taken_and_a_larger_one_refused(daemon):
    """docs/drawer.md, Items: a Declare payload is at most 256 KiB. One of exactly 262144 bytes is listed; one
    byte more, every field still within its own limit, is refused: the drawer taken before is no longer listed
    (a refused Declare replaces it), parleyd logs why, and an app that sent it as a request is answered why
    (Messages: handler-failed, or undecodable-payload for what is not a declaration)."""
    name = f"raw-{uuid.uuid4().hex[:8]}"
    conn = raw_app(daemon, name)
    try:
        conn.send_message(DECLARE, declare_payload(DECLARE_LIMIT))
        drawer = wait_until(lambda: drawer_of(daemon, name), "the declaration of 256 KiB")
        assert len(drawer["items"]) == len(json.loads(declare_payload(DECLARE_LIMIT))["items"])

        mark = daemon.mark()
        conn.send_message(DECLARE, declare_payload(DECLARE_LIMIT + 1))
        line = daemon.wait_for_line("drawer declaration refused", start=mark)
        assert "262145 bytes" in line and "256 KiB" in line, line
        assert drawer_of(daemon, name) is None, "the drawer before the refused declaration is still listed"

        # As a request: the error reply says why.
        rid = conn.send_message(DECLARE, declare_payload(DECLARE_LIMIT + 1), request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.HANDLER_FAILED, answer
        assert "262145 bytes" in answer.text and "256 KiB" in answer.text, answer.text
        # A valid one sent as a request is taken, and answered as any one-way type asked for a reply.
        rid = conn.send_message(DECLARE, json.dumps({"items": RAW_ITEMS}).encode(), request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.NO_RESPONDER, answer
        assert [item["id"] for item in drawer_of(daemon, name)["items"]] == [item["id"] for item in RAW_ITEMS]
        # Not a declaration at all: undecodable-payload, and no drawer either.
        rid = conn.send_message(DECLARE, b'{"items": 3}', request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.UNDECODABLE_PAYLOAD, answer
        assert drawer_of(daemon, name) is None
        conn.assert_alive()
    finally:
        conn.close()


def test_a_change_up_to_256_kib_is_recorded_and_a_larger_one_refused(daemon):
    """docs/drawer.md, Messages: a Changed payload is at most 256 KiB, like a Declare. Within it, even a value
    outside the app's own rules is recorded; one byte more is refused and logged (answered why, if sent as a
    request), the drawer keeps the value before it, and the connection and its later changes are unaffected."""
    name = f"raw-{uuid.uuid4().hex[:8]}"
    conn = raw_app(daemon, name)

    def changed(size: int) -> bytes:
        empty = json.dumps({"item": "note", "value": ""}).encode()
        payload = json.dumps({"item": "note", "value": "x" * (size - len(empty))}).encode()
        assert len(payload) == size
        return payload

    try:
        declare(conn, [{"id": "note", "label": "Note", "kind": "text", "value": "a", "maxLength": 64}])
        wait_until(lambda: drawer_of(daemon, name), "the declaration")
        conn.send_message(CHANGED, changed(DECLARE_LIMIT))
        wait_until(lambda: len(values_of(daemon, name)["note"]) > 64, "the 256 KiB change, outside its rules, recorded")

        conn.send_message(CHANGED, json.dumps({"item": "note", "value": "b"}).encode())
        wait_until(lambda: values_of(daemon, name)["note"] == "b", "a small change")
        mark = daemon.mark()
        conn.send_message(CHANGED, changed(DECLARE_LIMIT + 1))
        line = daemon.wait_for_line("drawer change refused", start=mark)
        assert "262145 bytes" in line and "256 KiB" in line, line
        rid = conn.send_message(CHANGED, changed(DECLARE_LIMIT + 1), request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.HANDLER_FAILED, answer
        assert "262145 bytes" in answer.text, answer.text
        assert values_of(daemon, name)["note"] == "b", "a refused change is not the drawer's value"

        conn.send_message(CHANGED, json.dumps({"item": "note", "value": "c"}).encode())
        wait_until(lambda: values_of(daemon, name)["note"] == "c", "the change after the refused ones")
        conn.assert_alive()
    finally:
        conn.close()


def choice(option_id: str, label: str = "A") -> dict:
    return {"id": "c", "label": "C", "kind": "choice", "value": option_id, "options": [{"id": option_id, "label": label}]}


@pytest.mark.parametrize("item, fitting, words", [
    (choice("a", "L" * 257), choice("a", "L" * 256), ["option labels", "256"]),
    (choice("a" * 129), choice("a" * 128), ["option id", "128"]),
    (choice(""), None, ["option id"]),
    ({"id": "i", "label": "I", "kind": "info", "value": "é" * 2049},    # 2049 characters, 4098 bytes
     {"id": "i", "label": "I", "kind": "info", "value": "é" * 2048}, ["4098 bytes", "4096"]),
    ({"id": "i", "label": "I", "kind": "info", "value": 3}, None, ["info", "text"]),
    ({"id": "t", "label": "T", "kind": "text", "value": "", "maxLength": 65537},
     {"id": "t", "label": "T", "kind": "text", "value": "", "maxLength": 65536}, ["maxLength", "65536"]),
    ({"id": "t", "label": "T", "kind": "text", "value": "", "maxLength": -1}, None, ["maxLength"]),
    ({"id": "s", "label": "S", "kind": "toggle", "value": False, "section": "S" * 257},
     {"id": "s", "label": "S", "kind": "toggle", "value": False, "section": "S" * 256}, ["256"]),
    ({"id": "d", "label": "D", "kind": "toggle", "value": False, "destructive": True},
     {"id": "d", "label": "D", "kind": "action", "destructive": True}, ["toggle", "only an action can be destructive"]),
])
def test_a_field_over_its_limit_is_refused(daemon, item, fitting, words):
    """docs/drawer.md, Items: option ids (1–128 bytes) and labels (≤ 256 bytes), info values (text, ≤ 4096
    bytes), maxLength (0–65536), sections (≤ 256 bytes), destructive (actions only). An app that asks is answered
    why; nothing is listed. Just within the limit, the same item is taken."""
    name = f"raw-{uuid.uuid4().hex[:8]}"
    conn = raw_app(daemon, name)
    try:
        rid = conn.send_message(DECLARE, json.dumps({"items": [item]}).encode(), request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.HANDLER_FAILED, answer
        for word in words:
            assert word in answer.text, (word, answer.text)
        assert drawer_of(daemon, name) is None
        if fitting is not None:
            rid = conn.send_message(DECLARE, json.dumps({"items": [fitting]}).encode(), request=True)
            assert conn.recv_answer(rid).code == wire.NO_RESPONDER
            assert drawer_of(daemon, name)["items"] == [fitting]
    finally:
        conn.close()


@pytest.mark.parametrize("type_name, payload", [
    ("parley.drawer.control.Drawers", {}),
    ("parley.drawer.control.Set", {"app": "{app}", "item": "network.slow", "value": True}),
    ("parley.drawer.control.Invoke", {"app": "{app}", "item": "reset"}),
])
def test_drawer_control_is_for_the_control_socket_only(daemon, app, type_name, payload):
    """docs/drawer.md, Security: parleyd takes drawer control only from its control socket and the web debugger. A
    peer on the network asking with parleyctl's own requests finds no handler (§7: unknown-type)."""
    start = app.mark()
    body = json.dumps({key: (value.format(app=app.name) if isinstance(value, str) else value) for key, value in payload.items()})
    conn = daemon.dial(name=f"lan-{uuid.uuid4().hex[:8]}")
    try:
        rid = conn.send_message(type_name, body.encode(), request=True)
        answer = conn.recv_answer(rid)
        assert answer.kind == wire.ERROR_REPLY and answer.code == wire.UNKNOWN_TYPE, answer
    finally:
        conn.close()
    receives_nothing(daemon, app, start)


# ---------------------------------------------------------------------------------------------- the web API

def test_web_lists_sets_and_invokes(daemon, start_app, web):
    app = start_app()
    status, _, body = web.call("GET", "/api/drawers")
    assert status == 200
    drawer = next(d for d in body["drawers"] if d["peer"]["name"] == app.name)
    assert [item["id"] for item in drawer["items"]] == list(APP_ITEMS)
    peer = drawer["peer"]["id"]

    start = app.mark()
    status, _, body = web.call("POST", item_path(peer, "network.slow"), {"value": True})
    assert (status, body) == (200, {"value": True})
    assert app.wait_for(lambda e: e["event"] == "set", "the set", start)["value"] is True
    status, _, body = web.call("POST", item_path(peer, "theme"), {"value": "dark"})
    assert (status, body) == (200, {"value": "dark"})

    start = app.mark()
    status, _, body = web.call("POST", item_path(peer, "reset") + "/invoke")
    assert (status, body) == (200, {"message": "2 settings reset"})
    app.wait_for(lambda e: e["event"] == "invoked", "the invocation", start)


@pytest.mark.parametrize("path, body, status", [
    ("{peer}/items/latency", {"value": 5100}, 400),         # out of range
    ("{peer}/items/latency", {"value": 150}, 400),          # off the step
    ("{peer}/items/latency", {"value": "fast"}, 400),       # wrong type
    ("{peer}/items/theme", {"value": "blue"}, 400),         # not an option
    ("{peer}/items/greeting", {"value": "x" * 65}, 400),    # too long
    ("{peer}/items/reset", {"value": True}, 400),           # set on an action
    ("{peer}/items/build", {"value": "x"}, 400),            # set on info
    ("{peer}/items/network.slow", {"nothing": 1}, 400),     # no value
    ("{peer}/items/network.slow", None, 400),               # no body
    ("{peer}/items/no.such.item", {"value": True}, 404),    # unknown item
    ("{peer}/items/no.such.item/invoke", None, 404),
    ("{peer}/items/theme/invoke", None, 400),               # invoke of a choice
    ("00000000-0000-4000-8000-000000000000/items/theme", {"value": "dark"}, 404),   # unknown app
    ("00000000-0000-4000-8000-000000000000/items/reset/invoke", None, 404),
])
def test_web_refusals_are_problems_and_the_app_receives_nothing(daemon, app, web, path, body, status):
    peer = drawer_of(daemon, app.name)["peer"]["id"]
    start = app.mark()
    got, content_type, problem = web.call("POST", "/api/drawers/" + path.format(peer=peer), body)
    assert got == status, problem
    assert content_type.startswith("application/problem+json"), content_type
    assert problem["status"] == status and problem["title"] and problem.get("detail"), problem
    receives_nothing(daemon, app, start)


def test_web_an_app_refusal_is_409(daemon, start_app, web):
    app = start_app("--refuse", "greeting")
    peer = drawer_of(daemon, app.name)["peer"]["id"]
    status, content_type, problem = web.call("POST", item_path(peer, "greeting"), {"value": "Hi"})
    assert status == 409, problem
    assert "cannot be changed right now" in problem["detail"], problem


def test_web_changes_need_write_access(daemon, app, web):
    peer = drawer_of(daemon, app.name)["peer"]["id"]
    start = app.mark()
    # No session cookie (another program, or a page of another site without the cookie): refused.
    status, _, problem = web.call("POST", item_path(peer, "network.slow"), {"value": True}, cookie=False)
    assert status == 403, problem
    status, _, problem = web.call("POST", item_path(peer, "reset") + "/invoke", cookie=False)
    assert status == 403, problem
    # The cookie, but from another origin: refused too.
    status, _, problem = web.call("POST", item_path(peer, "network.slow"), {"value": True},
                                  headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert status == 403, problem
    receives_nothing(daemon, app, start)


def test_web_live_stream_carries_drawer_events(daemon, start_app, web):
    stream = LiveStream(daemon.web)
    try:
        app = start_app()
        declared = stream.wait_for(lambda d: d["peer"]["name"] == app.name and d["items"], "the declaration")
        assert [item["id"] for item in declared["items"]] == list(APP_ITEMS)
        peer = declared["peer"]["id"]
        # Set from outside (parleyctl): an event with the new value.
        mark = stream.mark()
        assert ctl(daemon, "set", app.name, "latency", "700").returncode == 0
        stream.wait_for(lambda d: d["peer"]["id"] == peer and {i["id"]: i.get("value") for i in d["items"]}["latency"] == 700,
                        "latency 700", mark)
        # Changed by the app itself.
        mark = stream.mark()
        assert web.call("POST", item_path(peer, "reset") + "/invoke")[0] == 200
        stream.wait_for(lambda d: d["peer"]["id"] == peer and {i["id"]: i.get("value") for i in d["items"]}["latency"] == 0,
                        "latency back to 0 (the app's own change)", mark)
        # Gone with the app: items [].
        mark = stream.mark()
        app.stop()
        gone = stream.wait_for(lambda d: d["peer"]["id"] == peer and d["items"] == [], "no items", mark)
        assert gone["peer"]["name"] == app.name
    finally:
        stream.close()


def test_an_app_that_does_not_answer_times_out(daemon, web):
    """docs/drawer.md: 504 when the app does not answer within 10 s; parleyctl fails too."""
    name = f"raw-{uuid.uuid4().hex[:8]}"
    conn = raw_app(daemon, name)
    try:
        declare(conn, RAW_ITEMS)
        peer = wait_until(lambda: drawer_of(daemon, name), "the declared drawer")["peer"]["id"]
        child = subprocess.Popen([str(PARLEYCTL), "set", name, "latency", "100", "--socket", daemon.control_socket],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        began = time.monotonic()
        status, _, problem = web.call("POST", item_path(peer, "latency"), {"value": 200})
        elapsed = time.monotonic() - began
        assert status == 504, problem
        assert 9 <= elapsed <= 15, elapsed
        out, err = child.communicate(timeout=TIMEOUT)
        assert child.returncode != 0 and err.startswith("parleyctl: error: "), (out, err)
        # Both requests did reach the app (which never answered).
        seen = []
        while len(seen) < 2:
            seen.append(json.loads(conn.recv_message(type_name=SET, timeout=1).payload))
        assert sorted(s["value"] for s in seen) == [100, 200]
        assert values_of(daemon, name)["latency"] == 0
    finally:
        conn.close()


def test_web_the_docs_curl_recipe_changes_a_value(daemon, start_app):
    """docs/web.md's recipe for a program that changes something, run as written (curl, a cookie jar from the link
    parleyctl web prints),
    against this parleyd and a fresh app; without the cookie the same request is refused."""
    docs = (ROOT / "docs" / "web.md").read_text()
    recipe = re.search(r"```sh\n(\s*jar=\$\(mktemp\)\n.*?)\n\s*```", docs, re.S)
    assert recipe, "docs/web.md has no curl recipe"
    app = start_app()
    parleyctl = daemon.executable.with_name("parleyctl")
    script = (textwrap.dedent(recipe.group(1)).replace("http://127.0.0.1:7207", daemon.web)
              .replace("parleyctl web", f"{parleyctl} web --socket {daemon.control_socket}")
              .replace("/api/drawers/listr/", f"/api/drawers/{app.name}/"))
    start = app.mark()
    done = subprocess.run(["bash", "-euc", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done
    assert json.loads(done.stdout) == {"value": True}, done.stdout
    event = app.wait_for(lambda e: e["event"] == "set", "the set", start)
    assert (event["item"], event["value"]) == ("network.slow", True), event
    refused = subprocess.run(["bash", "-euc", script.replace('-b "$jar" ', "")], capture_output=True, text=True, timeout=30)
    assert '"status":403' in refused.stdout.replace(" ", ""), refused.stdout
