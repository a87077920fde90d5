"""§5 The original framing (0xCE): an app of the original Swift Talk debugger, seen through parleyd's debugger
(docs/debugger.md) and a local client on the control socket."""
import json
import signal
import struct
import time

import pytest

from parley_tools import wire

RECORD = b'{"state":{"items":[],"total":1.10},"action":"load","imageData":""}'


@pytest.fixture
def follower(parleyd):
    """A local client following the debugger's history: each record parleyd stores arrives as
    parley.debugger.Appended (docs/operations.md, Control socket)."""
    conn = parleyd.control()
    rid = conn.send_message("parley.debugger.Follow", b"{}", request=True)
    answer = conn.recv_answer(rid)
    assert answer.type_name == "parley.debugger.Following", answer
    yield conn
    conn.close()


def app_peer_id(control, address: str) -> str:
    rid = control.send_message("parley.control.Peers", b"{}", request=True)
    peers = json.loads(control.recv_answer(rid).payload)["peers"]
    matching = [peer for peer in peers if peer["name"] == f"debugger app at {address}"]
    assert len(matching) == 1, peers
    return matching[0]


def connect_app(parleyd, follower):
    """An app connected and known to parleyd (its first record stored); returns (app, its peer entry)."""
    app = parleyd.connect()
    app.send_raw(wire.original_frame(RECORD))
    appended = follower.recv_message(type_name="parley.debugger.Appended")
    host, port = app.sock.getsockname()
    return app, app_peer_id(follower, f"{host}:{port}"), appended


def test_a_frame_from_the_app_becomes_a_record(parleyd, follower):
    app, peer, appended = connect_app(parleyd, follower)
    with app:
        entry = json.loads(appended.payload)["entry"]
        assert entry["action"] == "load"
        # §3 Payload: Parley's typed API writes a Date as seconds since 2001-01-01T00:00:00Z.
        assert abs(entry["time"] + 978307200 - time.time()) < 60, entry["time"]
        # §5: the pipeline stands for the app as an ordinary peer named "debugger app at <address>", which
        # accepts the types it can carry back.
        assert peer["accepts"] == ["parley.debugger.restore"], peer


def test_the_app_receives_nothing_unasked(parleyd, follower):
    app, _, _ = connect_app(parleyd, follower)
    with app:
        # §5: no hello, no ping, no close frame: more than a heartbeat interval of silence (bounded read).
        app.expect_silence(1.5)


def test_restore_goes_back_as_a_0xCE_frame_with_the_bare_state(parleyd, follower):
    app, peer, _ = connect_app(parleyd, follower)
    with app:
        state = b'{"items":["x"],"total":1.10}'
        follower.send_message(f"@{peer['id']}/parley.debugger.restore", state)
        # §5: 0xCE, Int32 LE length, the bare state JSON byte for byte.
        assert app.recv_raw_frame(start=0xCE) == bytes([0xCE]) + struct.pack("<i", len(state)) + state


def test_a_request_of_another_type_is_answered_with_unknown_type(parleyd, follower):
    app, peer, _ = connect_app(parleyd, follower)
    with app:
        rid = follower.send_message(f"@{peer['id']}/conf.Other", b"{}", request=True)
        answer = follower.recv_answer(rid)
        # §5: answered at once with unknown-type (5). parleyd's router relays a peer's error-reply to its local
        # client as handler-failed naming the peer's code (docs/operations.md, Control socket).
        assert answer.kind == wire.ERROR_REPLY and "unknown-type" in answer.text, answer
        app.expect_silence(0.2)  # the app sees none of it


def test_an_unreadable_frame_is_dropped_and_the_connection_stays(parleyd, follower):
    app, _, _ = connect_app(parleyd, follower)
    with app:
        app.send_raw(wire.original_frame(b"not json") + wire.original_frame(b'{"action":"no state"}')
                     + wire.original_frame(b'{"state":{"a":1},"action":"second"}'))
        entry = json.loads(follower.recv_message(type_name="parley.debugger.Appended").payload)["entry"]
        assert entry["action"] == "second"


@pytest.mark.parametrize("data", [
    b"\xcf" + struct.pack("<I", 9) + wire.ping_body(1),
    struct.pack("<Bi", 0xCE, -1),
    struct.pack("<Bi", 0xCE, 64 * 1024 * 1024 + 1),
], ids=["0xCF-frame", "negative-length", "oversized-length"])
def test_a_bad_frame_closes_without_a_word(parleyd, follower, data):
    app, _, _ = connect_app(parleyd, follower)
    with app:
        app.send_raw(data)
        # §5: the connection is closed without a word: FIN, never a 0xCF frame.
        assert app.expect_eof(3) == b""


def test_a_first_frame_with_a_negative_length_closes_without_a_word(parleyd):
    with parleyd.connect() as app:
        app.send_raw(struct.pack("<Bi", 0xCE, -5))
        # §2, §5: a negative length in the original framing is refused; the app gets no 0xCF frame.
        assert app.expect_eof(3) == b""


def test_shutdown_closes_a_bare_0xCE_client_with_a_FIN_only(start_parleyd):
    daemon = start_parleyd()
    follower = daemon.control()
    rid = follower.send_message("parley.debugger.Follow", b"{}", request=True)
    follower.recv_answer(rid)
    app, _, _ = connect_app(daemon, follower)
    with app, follower:
        daemon.process.send_signal(signal.SIGTERM)
        # §5: when the node shuts down, a bare 0xCE client just sees the TCP connection close.
        assert app.expect_eof(5) == b""
    assert daemon.stop() == 0
