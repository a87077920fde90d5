"""§4 Handshake in open mode, with parleyd as the acceptor (we dial it) and as the dialer (--static-peer)."""
import json
import re
import socket
import struct
import time
import uuid

import pytest

from parley_tools import wire


# ------------------------------------------------------------------------------------------- acceptor

def test_acceptor_sends_nothing_before_the_first_frame(parleyd):
    with parleyd.connect() as conn:
        # §4 step 2: the acceptor waits for the first frame. A bounded read that must time out.
        conn.expect_silence(0.5)
        wire.handshake(conn)
        assert conn.peer_hello.kind == wire.HELLO


def test_acceptor_hello_fields(parleyd):
    with parleyd.dial() as conn:
        hello = conn.peer_hello
        # §3 hello: 0xCF, UInt32 LE body length, kind 0x01, two UInt16 LE versions, then JSON.
        assert hello.raw[0] == 0xCF
        assert struct.unpack_from("<I", hello.raw, 1)[0] == len(hello.raw) - 5
        assert hello.raw[5] == wire.HELLO
        # §1: Parley currently speaks exactly 1…1.
        assert (hello.minimum, hello.maximum) == (1, 1)
        body = hello.json
        for key, kind in (("peerID", str), ("name", str), ("capabilities", list), ("accepts", list)):
            assert isinstance(body.get(key), kind), f"required key {key!r}: {body}"
        assert str(uuid.UUID(body["peerID"])) == parleyd.peer_id.lower()
        assert body["name"] == "conformance"
        # §6: Parley lists "heartbeat" by default.
        assert "heartbeat" in body["capabilities"]
        assert all(isinstance(name, str) for name in body["accepts"])
        # §4: the auth offer is absent in open mode.
        assert "auth" not in body


def test_wider_version_range_is_accepted_and_acceptor_announces_its_own_range(parleyd):
    with parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json(), minimum=0, maximum=7)
        hello = conn.recv()
        assert hello.kind == wire.HELLO, hello
        # §4 step 3: the acceptor's hello carries its own range, not the chosen version.
        assert (hello.minimum, hello.maximum) == (1, 1)
        conn.assert_alive()


@pytest.mark.parametrize("versions", [(2, 3), (0, 0)], ids=["above", "below"])
def test_incompatible_version_is_refused(parleyd, versions):
    with parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json(), *versions)
        # §4 step 6: a close frame instead of the hello, then the connection closes within about 1 s.
        close = conn.expect_close(wire.INCOMPATIBLE_VERSION, timeout=3)
        # §4 step 3: the reason names both ranges (Parley's 1…1 and ours).
        numbers = re.findall(r"\d+", close.text)
        assert "1" in numbers and str(versions[0]) in numbers and str(versions[1]) in numbers, close.text


def test_hello_body_shorter_than_five_bytes_is_refused(parleyd):
    with parleyd.connect() as conn:
        conn.send_raw(wire.frame(bytes([wire.HELLO, 1, 0, 1])))
        conn.expect_close(wire.PROTOCOL_VIOLATION)


@pytest.mark.parametrize("json_bytes", [
    b"not json",
    b"[1,2]",
    b'{"name":"x","capabilities":[],"accepts":[]}',
    b'{"peerID":"%s","capabilities":[],"accepts":[]}' % str(uuid.uuid4()).encode(),
    b'{"peerID":"%s","name":"x","accepts":[]}' % str(uuid.uuid4()).encode(),
    b'{"peerID":"%s","name":"x","capabilities":[]}' % str(uuid.uuid4()).encode(),
    b'{"peerID":"not-a-uuid","name":"x","capabilities":[],"accepts":[]}',
    b'{"peerID":"%s","name":"x","capabilities":"heartbeat","accepts":[]}' % str(uuid.uuid4()).encode(),
], ids=["invalid-json", "not-an-object", "no-peerID", "no-name", "no-capabilities", "no-accepts",
        "peerID-not-uuid", "capabilities-not-array"])
def test_invalid_hello_json_is_refused_with_protocol_violation(parleyd, json_bytes):
    with parleyd.connect() as conn:
        wire.send_hello(conn, json_bytes)
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_unknown_keys_and_capabilities_are_ignored_and_peer_id_is_stored_lower_case(parleyd, control):
    peer_id = str(uuid.uuid4())
    hello = wire.make_hello_json(peer_id=peer_id.upper(), name="upper-case-id",
                                 capabilities=["future-feature"], accepts=["conf.Note"],
                                 futureKey={"nested": [1, 2]})
    with parleyd.dial(hello=hello):
        rid = control.send_message("parley.control.Peers", b"{}", request=True)
        peers = json.loads(control.recv_answer(rid).payload)["peers"]
        ids = {peer["name"]: peer["id"] for peer in peers}
        # §4 Hello JSON: a UUID in any case; Parley stores it lower-case.
        assert ids.get("upper-case-id") == peer_id.lower(), peers


@pytest.mark.parametrize("first", [
    wire.message_body("conf.Early", b"{}", id=1),
    wire.message_body("conf.Early", b"{}", id=1, flags=wire.EXPECTS_REPLY),
    wire.error_reply_body(1, wire.UNKNOWN_TYPE, "early"),
    wire.ping_body(1),
    wire.pong_body(1),
    wire.auth_body(bytes(32)),
    bytes([wire.SEALED]) + bytes(16),
    bytes([0x7F]),
    b"",
], ids=["message", "request", "error-reply", "ping", "pong", "auth", "sealed", "unknown-kind", "empty-body"])
def test_anything_but_a_hello_first_is_a_protocol_violation(parleyd, first):
    with parleyd.connect() as conn:
        conn.send_raw(wire.frame(first))
        # §4 step 7; §9: any connection-fatal error as the first frame is protocol-violation.
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_frame_too_large_as_first_frame_is_a_protocol_violation(parleyd):
    with parleyd.connect() as conn:
        # §2: during the handshake an over-long frame is protocol-violation; refused from the prefix alone.
        conn.send_raw(bytes([0xCF]) + struct.pack("<I", 64 * 1024 * 1024 + 1) + bytes([wire.HELLO]))
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_close_frame_instead_of_hello_is_not_answered(parleyd):
    with parleyd.connect() as conn:
        conn.send_raw(wire.frame(wire.close_body(wire.GOING_AWAY, "never mind")))
        # §4 step 6: a close frame instead of a hello is a refusal; it is not answered.
        assert conn.expect_eof(3) == b""


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.0\r\n\r\n", b"\x00"], ids=["http", "zero"])
def test_garbage_first_byte_is_a_protocol_violation(parleyd, garbage):
    with parleyd.connect() as conn:
        conn.send_raw(garbage)
        # §2: any other first byte closes the connection; §9: malformed-frame, but as the first frame of the
        # handshake protocol-violation.
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_connected_to_self_is_refused_after_the_acceptors_hello(parleyd):
    with parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json(peer_id=parleyd.peer_id))
        # §4 step 8: the acceptor has already sent its hello, then closes with connected-to-self.
        first = conn.recv()
        assert first.kind == wire.HELLO, first
        conn.expect_close(wire.CONNECTED_TO_SELF)


def test_auth_offer_to_an_open_node_is_refused_with_authentication_required(parleyd):
    offer = wire.Offer()
    with parleyd.connect() as conn:
        wire.send_hello(conn, wire.make_hello_json(auth=offer.json()))
        # §4 step 10.
        conn.expect_close(wire.AUTHENTICATION_REQUIRED)


def test_dialer_sends_nothing_more_after_a_valid_hello(parleyd):
    with parleyd.dial() as conn:
        # §4 step 5: the handshake is complete; without "heartbeat" nothing else comes unasked.
        conn.expect_silence(0.5)


# ------------------------------------------------------------------------------------------- timeouts

@pytest.fixture(scope="module")
def quick_handshake(start_parleyd):
    return start_parleyd("--handshake-timeout", "0.5s")


def test_handshake_timeout_for_a_begun_hello(quick_handshake):
    with quick_handshake.connect() as conn:
        conn.send_raw(bytes([0xCF]) + struct.pack("<I", 100))
        # §4 step 9: no first frame within the handshake timeout -> handshake-timeout.
        conn.expect_close(wire.HANDSHAKE_TIMEOUT, timeout=3)


def test_handshake_clock_of_an_accepted_connection_starts_at_its_first_byte(quick_handshake):
    with quick_handshake.connect() as conn:
        # §4 step 9 (and §11 Pending connections): below half a full pending pool, the acceptor's clock starts
        # at the first byte, so that an app of the original debugger may connect long before its first state.
        # A bounded read that must time out: three handshake timeouts of silence, and nothing happens.
        conn.expect_silence(1.5)
        conn.send_raw(b"\xcf")
        started = time.monotonic()
        conn.expect_close(wire.HANDSHAKE_TIMEOUT, timeout=3)
        assert time.monotonic() - started < 2.0


# ------------------------------------------------------------------------------------------- duplicates

def test_duplicate_connection_from_the_same_address_keeps_the_newer(parleyd):
    peer_id = str(uuid.uuid4())
    older = parleyd.dial(peer_id=peer_id, name="twin")
    try:
        with parleyd.dial(peer_id=peer_id, name="twin") as newer:
            # §8 Duplicate connections: same dialer, same address -> the newer one survives.
            older.expect_close(wire.DUPLICATE_CONNECTION)
            newer.assert_alive()
    finally:
        older.close()


def test_claiming_the_id_of_a_peer_connected_from_another_address_is_refused(parleyd):
    peer_id = str(uuid.uuid4())
    with parleyd.dial(peer_id=peer_id, name="owner") as owner:
        # A second loopback address stands for another host.
        with parleyd.connect(source="127.0.0.2") as impostor:
            wire.send_hello(impostor, wire.make_hello_json(peer_id=peer_id, name="impostor"))
            frames = []
            while True:
                f = impostor.recv()
                frames.append(f)
                if f.kind == wire.CLOSE:
                    break
            assert frames[-1].code == wire.PEER_ID_IN_USE, frames
            impostor.expect_eof(3)
        # The connected peer keeps its connection.
        owner.assert_alive()


# ------------------------------------------------------------------------------------------- parleyd dials

class Listener:
    """A TCP listener on 127.0.0.1 that parleyd dials as a static peer."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]

    def accept(self, timeout=10.0) -> wire.Connection:
        self.sock.settimeout(timeout)
        client, _ = self.sock.accept()
        return wire.Connection(client)

    def close(self):
        self.sock.close()


@pytest.fixture
def dialing_parleyd(start_parleyd):
    """A fresh parleyd that dials our listener at start-up (a static peer), so that we are the acceptor."""
    listener = Listener()
    daemon = start_parleyd("--static-peer", f"127.0.0.1:{listener.port}", "--handshake-timeout", "1s")
    conn = listener.accept()
    yield daemon, conn
    conn.close()
    daemon.stop()
    listener.close()


def test_dialer_speaks_first_with_a_hello(dialing_parleyd):
    daemon, conn = dialing_parleyd
    # §4 step 1: the dialer writes its hello at once, without waiting.
    hello = conn.recv(3)
    assert hello.kind == wire.HELLO and (hello.minimum, hello.maximum) == (1, 1), hello
    assert hello.json["peerID"].lower() == daemon.peer_id.lower()
    wire.send_hello(conn, wire.make_hello_json(name="py-acceptor"))
    # §4 step 5: the dialer, on a valid hello, sends nothing more for the handshake (no heartbeat listed).
    conn.expect_silence(0.5)
    conn.assert_alive()


def test_dialer_refuses_an_original_framing_frame_with_protocol_violation(dialing_parleyd):
    _, conn = dialing_parleyd
    assert conn.recv(3).kind == wire.HELLO
    conn.send_raw(wire.original_frame(b"{}"))
    # §4 step 7: a 0xCE frame received by the dialer is refused with protocol-violation.
    conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_dialer_refuses_an_incompatible_acceptor_hello(dialing_parleyd):
    _, conn = dialing_parleyd
    assert conn.recv(3).kind == wire.HELLO
    wire.send_hello(conn, wire.make_hello_json(), 2, 2)
    # §4 step 3: the receiver of a hello (here the dialer) refuses with incompatible-version.
    conn.expect_close(wire.INCOMPATIBLE_VERSION)


def test_dialer_does_not_answer_a_refusal(dialing_parleyd):
    _, conn = dialing_parleyd
    assert conn.recv(3).kind == wire.HELLO
    conn.send(wire.close_body(wire.INCOMPATIBLE_VERSION, "go away"))
    # §4 step 6: a close frame instead of a hello is a refusal by the other side; it is not answered.
    assert conn.expect_eof(3) == b""


def test_dialer_times_out_an_acceptor_that_never_answers(dialing_parleyd):
    _, conn = dialing_parleyd
    assert conn.recv(3).kind == wire.HELLO
    # §4 step 9: each side closes with handshake-timeout (1 s here).
    conn.expect_close(wire.HANDSHAKE_TIMEOUT, timeout=4)


@pytest.mark.parametrize("ours_is_smaller", [True, False], ids=["our-id-smaller", "our-id-larger"])
def test_duplicate_connections_dialed_by_different_peers_keep_the_one_dialed_by_the_smaller_id(
        dialing_parleyd, ours_is_smaller):
    daemon, dialed_by_parleyd = dialing_parleyd
    # An id below or above parleyd's, compared as lower-case canonical UUID strings (§8).
    peer_id = "00000000-0000-4000-8000-000000000000" if ours_is_smaller else "ffffffff-ffff-4fff-bfff-ffffffffffff"
    assert (peer_id < daemon.peer_id.lower()) == ours_is_smaller
    assert dialed_by_parleyd.recv(3).kind == wire.HELLO
    wire.send_hello(dialed_by_parleyd, wire.make_hello_json(peer_id=peer_id, name="both-ways"))
    dialed_by_parleyd.assert_alive()
    with daemon.connect() as dialed_by_us:
        wire.handshake(dialed_by_us, wire.make_hello_json(peer_id=peer_id, name="both-ways"))
        # The losing connection gets close(duplicate-connection); the other carries on.
        loser, winner = (dialed_by_parleyd, dialed_by_us) if ours_is_smaller else (dialed_by_us, dialed_by_parleyd)
        loser.expect_close(wire.DUPLICATE_CONNECTION)
        winner.assert_alive()
