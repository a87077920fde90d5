"""parleyctl --json against a real parleyd: each command's objects have exactly the keys docs/cli.md ("JSON output")
documents for it. The documented shapes are read from docs/cli.md itself -- the example line after each
`$ parleyctl … --json` and the table's "Left out when empty" column -- so the doc's examples are what is tested."""
from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from parley_tools import waiting, wire

ROOT = Path(__file__).resolve().parents[2]
PARLEYCTL = Path(os.environ.get("PARLEYCTL", ROOT / ".build" / "debug" / "parleyctl"))
DOC = ROOT / "docs" / "cli.md"
DRAWER_APP = ROOT / "scripts" / "interop" / "drawer_app.py"
TIMEOUT = 15.0

RECORD, RESTORE = "parley.debugger.record", "parley.debugger.restore"
FILTERS = {"noisy": {"anyOf": ["tick*", "heartbeat"]}, "quiet": {"not": {"filter": "noisy"}}}

# Values whose content is the app's or the user's, not parleyctl's: their keys are not checked.
FREE_FORM = {"state", "payload", "txt", "txtBase64", "value"}
TIME_KEYS = {"time", "started", "ended", "connectedAt", "receivedAt"}
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

COMMANDS = {"browse", "send", "send --reply", "listen", "peers", "status", "reload", "sessions", "sessions delete",
            "sessions prune", "history", "show", "diff", "replay", "import", "filters", "drawer", "set", "invoke", "web",
            "logs", "traces", "trace", "otel-env", "devices", "pair"}


# ---------------------------------------------------------------------------------------------- the doc

def _section() -> str:
    text = DOC.read_text()
    start = text.index("\n## JSON output\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _command_of(words: list[str]) -> str:
    """`parleyctl sessions delete 3 --json` -> "sessions delete"; `send … --reply` -> "send --reply"."""
    command = words[0]
    if command == "sessions" and len(words) > 1 and words[1] in ("delete", "prune", "list"):
        return command if words[1] == "list" else f"{command} {words[1]}"
    if command == "send" and "--reply" in words:
        return "send --reply"
    return command


def documented() -> dict[str, dict]:
    """Command -> {"example": the example object, "optional": keys the table says may be left out}."""
    section = _section()
    optional: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        command = cells[0].strip("`")
        without_asides = re.sub(r"\([^()]*\)", "", cells[2])
        optional[command] = set(re.findall(r"`([A-Za-z][A-Za-z0-9]*)`", without_asides))
    examples: dict[str, dict] = {}
    lines = section.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("$ parleyctl ") and line.rstrip().endswith("--json"):
            command = _command_of(line.split()[2:])
            assert command not in examples, f"two examples for {command}"
            examples[command] = json.loads(lines[index + 1])
    return {command: {"example": examples.get(command), "optional": optional.get(command)}
            for command in set(examples) | set(optional)}


DOCUMENTED = documented()


def check_shape(actual, example, optional: set[str], where: str) -> None:
    """`actual` has the keys of `example` (less the optional ones) and no others (but the optional ones), at every
    level; a list of objects in the example documents its items' keys by their union (all allowed) and
    intersection (all required)."""
    if isinstance(example, dict):
        assert isinstance(actual, dict), f"{where}: {actual!r} is not an object"
        allowed, required = set(example) | optional, set(example) - optional
        assert set(actual) <= allowed, f"{where}: keys not documented: {sorted(set(actual) - allowed)} in {actual}"
        assert required <= set(actual), f"{where}: documented keys missing: {sorted(required - set(actual))} in {actual}"
        for key, value in actual.items():
            if key in TIME_KEYS and value is not None:
                assert isinstance(value, str) and RFC3339_UTC.match(value), f"{where}.{key}: {value!r} is not RFC 3339 UTC"
            if key in FREE_FORM or key not in example:
                continue
            check_shape(value, example[key], optional, f"{where}.{key}")
    elif isinstance(example, list) and example and all(isinstance(item, dict) for item in example):
        assert isinstance(actual, list), f"{where}: {actual!r} is not an array"
        union = {key for item in example for key in item}
        common = set.intersection(*(set(item) for item in example))
        merged: dict = {}
        for item in example:
            for key, value in item.items():
                merged.setdefault(key, value)
        for index, item in enumerate(actual):
            check_shape(item, merged, optional | (union - common), f"{where}[{index}]")
    elif example is None:
        pass  # documented as null: anything (checked where it matters)
    else:
        assert not isinstance(actual, dict), f"{where}: an object where the doc has {example!r}"


def assert_documented(command: str, objects: list[dict]) -> None:
    doc = DOCUMENTED[command]
    assert doc["example"] is not None, f"docs/cli.md has no --json example for {command}"
    for index, item in enumerate(objects):
        check_shape(item, doc["example"], doc["optional"] or set(), f"{command}[{index}]")


# ---------------------------------------------------------------------------------------------- helpers

def ctl(daemon, *arguments: str, timeout: float = 30) -> subprocess.CompletedProcess:
    if not PARLEYCTL.exists():
        pytest.fail(f"{PARLEYCTL} is missing: build it first (swift build)")
    return subprocess.run([str(PARLEYCTL), *arguments, "--socket", daemon.control_socket], capture_output=True,
                          text=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL)


def _env() -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PARLEY_")}
    env["NO_COLOR"] = "1"
    return env


def ctl_json(daemon, *arguments: str) -> list[dict]:
    """The command with --json: exit 0, and every line of standard output one JSON object."""
    result = ctl(daemon, *arguments, "--json")
    assert result.returncode == 0, f"parleyctl {' '.join(arguments)} --json: {result.stderr}"
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(isinstance(item, dict) for item in objects), result.stdout
    return objects


def one(daemon, command: str, *arguments: str) -> dict:
    objects = ctl_json(daemon, *arguments)
    assert len(objects) == 1, f"{command}: one object expected, got {objects}"
    assert_documented(command, objects)
    return objects[0]


def record_payload(action: str, state: str, png: bytes = b"") -> bytes:
    """docs/debugger.md: parley.debugger.record's binary payload (action, state, screenshot)."""
    a, s = action.encode(), state.encode()
    return struct.pack("<I", len(a)) + a + struct.pack("<I", len(s)) + s + png


def wait_until(predicate, what: str, timeout: float = TIMEOUT):
    return waiting.wait_until(predicate, what, timeout)


# ---------------------------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def bare(start_parleyd):
    """parleyd with no apps, its web debugger on."""
    return start_parleyd("--web-listen", "127.0.0.1:0")


@pytest.fixture(scope="module")
def daemon(start_parleyd):
    """parleyd with saved filters, for the app-side tests."""
    return start_parleyd(config={"actionFilters": FILTERS})


@pytest.fixture(scope="module")
def recorder(daemon):
    """A debugger app (the conformance client): it accepts restores, asks and notes, and has recorded two states."""
    name = f"rec-{uuid.uuid4().hex[:8]}"
    conn = daemon.dial(name=name, accepts=[RESTORE, "test.Ask", "test.Note"])
    conn.send_message(RECORD, record_payload("load", '{"items":[{"title":"milk"}],"count":1,"draft":true}'))
    conn.send_message(RECORD, record_payload("add", '{"items":[{"title":"oat milk"},{"title":"eggs"}],"count":"2"}',
                                             b"\x89PNG\r\n\x1a\n" + bytes(8)))
    wait_until(lambda: len(ctl_json(daemon, "history")) >= 2, "the two entries")
    conn.name = name
    yield conn
    conn.close()


# ---------------------------------------------------------------------------------------------- the doc itself

def test_the_doc_documents_every_command():
    assert set(DOCUMENTED) == COMMANDS
    for command, doc in DOCUMENTED.items():
        assert doc["example"] is not None, f"no example line for {command}"
        assert doc["optional"] is not None, f"no table row for {command}"


# ---------------------------------------------------------------------------------------------- no apps

def test_status(bare):
    status = one(bare, "status", "status")
    assert status["peerCount"] == 0 and "advertisedName" not in status and status["webURL"].startswith("http://")


def test_devices_and_pair(bare, device):
    listing = one(bare, "devices", "devices")
    assert listing["paired"] == [] and listing["fingerprint"] == one(bare, "status", "status")["fingerprint"]
    certificate, key, mine = device
    conn, _ = wire.connect_device(bare.port, certificate, key)
    try:
        wire.send_hello(conn, wire.make_hello_json(name="json-device"))
        conn.expect_close(wire.CODE_IDS["pairing-requested"])
    finally:
        conn.close()
    waiting_requests = one(bare, "pair", "pair")["pending"]
    assert [request["name"] for request in waiting_requests] == ["json-device"]
    refused = one(bare, "devices", "pair", "refuse", wire.fingerprint_text(mine, 16))
    assert refused["pending"] == [] and "refused json-device" in refused["done"]


def test_reload(bare):
    assert one(bare, "reload", "reload") == {"applied": [], "needRestart": []}


def test_web(bare):
    assert one(bare, "web", "web")["url"].startswith("http://127.0.0.1:")


def test_otel_env(bare):
    # No webTokenFile: no token, so no headers.
    assert one(bare, "otel-env", "otel-env") == {"endpoint": bare.otlp, "name": bare.ready["name"]}


@pytest.mark.parametrize("command", ["peers", "sessions", "history", "drawer"])
def test_a_list_of_nothing_is_no_line(bare, command):
    assert ctl_json(bare, command) == []


def test_no_filters_is_an_empty_object(bare):
    assert ctl_json(bare, "filters") == [{}]


def test_no_sessions_pruned(bare):
    assert one(bare, "sessions prune", "sessions", "prune", "--older-than", "1d") == {"sessions": []}


# ---------------------------------------------------------------------------------------------- one app recording

def test_filters(daemon):
    assert ctl_json(daemon, "filters") == [FILTERS]
    assert set(DOCUMENTED["filters"]["example"]) == set(FILTERS)  # the doc's example is this configuration


def test_peers(daemon, recorder):
    peers = ctl_json(daemon, "peers")
    assert_documented("peers", peers)
    assert [peer["name"] for peer in peers] == [recorder.name]


def test_status_with_a_peer(daemon, recorder):
    status = one(daemon, "status", "status")
    assert status["peerCount"] == 1 and "webURL" not in status


def test_sessions_of_an_open_app(daemon, recorder):
    sessions = ctl_json(daemon, "sessions")
    assert_documented("sessions", sessions)
    assert sessions[0]["ended"] is None and sessions[0]["host"] == "127.0.0.1"


def test_logs_traces_and_trace(daemon, recorder):
    """A log record and a span the recorder sends (protocol.md §14, parley.telemetry.Batch), listed as documented."""
    trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    batch = {"logs": [{"timeUnixNano": "1764288000000000000", "severity": "warning", "label": "app.net", "message": "slow",
                       "metadata": {"count": 3}, "traceId": trace_id, "spanId": span_id}],
             "spans": [{"traceId": trace_id, "spanId": span_id, "name": "GET /items", "kind": "client",
                        "startTimeUnixNano": "1764288000000000000", "endTimeUnixNano": "1764288000900000000",
                        "attributes": {"http.request.method": "GET"}}]}
    recorder.send_message("parley.telemetry.Batch", json.dumps(batch).encode())
    wait_until(lambda: len(ctl_json(daemon, "logs", recorder.name)) >= 1, "the log record")
    logs = ctl_json(daemon, "logs", recorder.name)
    assert_documented("logs", logs)
    traces = ctl_json(daemon, "traces", recorder.name)
    assert_documented("traces", traces)
    assert_documented("trace", ctl_json(daemon, "trace", trace_id))


def test_history(daemon, recorder):
    entries = ctl_json(daemon, "history")
    assert_documented("history", entries)
    assert [entry["action"] for entry in entries[:2]] == ["load", "add"]
    assert entries[1]["screenshotSize"] == 16


def test_show(daemon, recorder):
    entry = one(daemon, "show", "show", "1")
    assert entry["state"] == {"items": [{"title": "milk"}], "count": 1, "draft": True}


@pytest.mark.parametrize("arguments", [["2"], ["1", "2"]])
def test_diff(daemon, recorder, arguments):
    diff = one(daemon, "diff", "diff", *arguments)
    assert {change["kind"] for change in diff["changes"]} == {"countChanged", "added", "removed", "changed", "typeChanged"}
    assert (diff["from"]["sequence"], diff["to"]["sequence"]) == (1, 2)


def test_replay(daemon, recorder):
    replay = one(daemon, "replay", "replay", "1")
    assert replay["sentTo"][0]["name"] == recorder.name
    assert recorder.recv_message(type_name=RESTORE).payload == b'{"items":[{"title":"milk"}],"count":1,"draft":true}'


def test_send(daemon, recorder):
    sent = one(daemon, "send", "send", "test.Note", '{"text":"hi"}', "--to", recorder.name)
    assert (sent["sent"], sent["bytes"], sent["to"]["name"]) == ("test.Note", 13, recorder.name)
    assert recorder.recv_message(type_name="test.Note").payload == b'{"text":"hi"}'


def test_send_reply(daemon, recorder):
    process = subprocess.Popen([str(PARLEYCTL), "send", "test.Ask", "{}", "--to", recorder.name, "--reply", "--json",
                                "--socket", daemon.control_socket], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=_env(), stdin=subprocess.DEVNULL)
    try:
        request = recorder.recv_message(type_name="test.Ask")
        recorder.reply(request, "test.Answer", b'{"ok": true}')
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    objects = [json.loads(line) for line in stdout.splitlines()]
    assert len(objects) == 1
    assert_documented("send --reply", objects)
    assert (objects[0]["type"], objects[0]["payload"]) == ("test.Answer", {"ok": True})


def test_listen(daemon, recorder):
    process = subprocess.Popen([str(PARLEYCTL), "listen", "--type", "test.Heard", "--json", "--socket", daemon.control_socket],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert "listening" in process.stderr.readline()
        recorder.send_message("test.Heard", b'{"text": "hi"}')
        line = process.stdout.readline()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=TIMEOUT)
    message = json.loads(line)
    assert_documented("listen", [message])
    assert (message["type"], message["payload"], message["from"]["name"]) == ("test.Heard", {"text": "hi"}, recorder.name)


def test_import_delete_and_prune(daemon, recorder, tmp_path):
    export = tmp_path / "session.jsonl"
    session = ctl_json(daemon, "sessions")[0]
    result = ctl(daemon, "export", str(session["id"]), str(export))
    assert result.returncode == 0, result.stderr
    imported = one(daemon, "import", "import", str(export))
    assert imported["imported"] is True and imported["host"] is None and imported["id"] != session["id"]
    again = one(daemon, "import", "import", str(export))
    assert again["id"] == imported["id"]
    assert one(daemon, "sessions delete", "sessions", "delete", str(imported["id"])) == {"sessions": [imported["id"]]}
    # The app's own session is still recording: prune keeps it.
    assert one(daemon, "sessions prune", "sessions", "prune", "--older-than", "1s") == {"sessions": []}


def test_an_ended_session_has_its_end(start_parleyd):
    daemon = start_parleyd()
    with daemon.dial(name="short") as conn:
        conn.send_message(RECORD, record_payload("load", "{}"))
        wait_until(lambda: ctl_json(daemon, "history"), "the entry")
    session = wait_until(lambda: next((s for s in ctl_json(daemon, "sessions") if s["ended"]), None), "the session's end")
    assert_documented("sessions", [session])


# ---------------------------------------------------------------------------------------------- the drawer

@pytest.fixture(scope="module")
def drawer_app(daemon):
    name = f"drawer-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen([sys.executable, str(DRAWER_APP), "--connect", "127.0.0.1", str(daemon.port), "--name", name],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    for line in process.stdout:
        if json.loads(line)["event"] == "declared":
            break
    else:
        pytest.fail(f"drawer_app.py exited: {process.stderr.read()}")
    wait_until(lambda: any(d["peer"]["name"] == name for d in ctl_json(daemon, "drawer")), "the declared drawer")
    yield name
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=TIMEOUT)


def test_drawer(daemon, drawer_app):
    drawers = ctl_json(daemon, "drawer", drawer_app)
    assert_documented("drawer", drawers)
    assert drawers[0]["peer"]["name"] == drawer_app


def test_set(daemon, drawer_app):
    assert one(daemon, "set", "set", drawer_app, "theme", "dark")["value"] == "dark"


def test_invoke(daemon, drawer_app):
    assert "message" in one(daemon, "invoke", "invoke", drawer_app, "reset")
