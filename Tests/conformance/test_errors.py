"""§7 error-replies (codes 5–8) and §9 connection-fatal errors after the handshake, with their close codes."""
import struct

import pytest

from parley_tools import wire


def record_payload(action: str, state: str, png: bytes = b"") -> bytes:
    """docs/debugger.md: parley.debugger.record's binary payload (action, state, screenshot)."""
    a, s = action.encode(), state.encode()
    return struct.pack("<I", len(a)) + a + struct.pack("<I", len(s)) + s + png


def check_error_reply_layout(f: wire.Frame):
    # §3 error-reply: kind, UInt64 in-reply-to, UInt16 code, then N − 11 bytes of UTF-8 text.
    assert f.kind == wire.ERROR_REPLY
    assert len(f.body) == 11 + len(f.text.encode())
    assert f.text, "the text says what failed"


# ------------------------------------------------------------------------------------------- error-replies

def test_unknown_type(parleyd):
    with parleyd.dial() as peer:
        rid = peer.send_message("conf.NobodyHandlesThis", b"{}", request=True)
        answer = peer.recv_answer(rid)
        check_error_reply_layout(answer)
        assert (answer.in_reply_to, answer.code) == (rid, wire.UNKNOWN_TYPE), answer


def test_unknown_type_for_a_handler_only_local_clients_may_use(parleyd):
    with parleyd.dial() as peer:
        # §7 code 5: a handler that only local clients may use counts as none for a network peer.
        rid = peer.send_message("parley.control.Status", b"{}", request=True)
        answer = peer.recv_answer(rid)
        check_error_reply_layout(answer)
        assert answer.code == wire.UNKNOWN_TYPE, answer


def test_undecodable_payload(parleyd):
    # parleyd's network-facing handler takes a binary record it parses itself (a failure there is the
    # handler's, code 8, below); its decoding handlers are the control requests (JSON), reached over the
    # control socket, which speaks the same protocol.
    control = parleyd.control()
    with control:
        rid = control.send_message("parley.control.Subscribe", b'{"types": 5}', request=True)
        answer = control.recv_answer(rid)
        check_error_reply_layout(answer)
        assert (answer.in_reply_to, answer.code) == (rid, wire.UNDECODABLE_PAYLOAD), answer


def test_no_responder(parleyd):
    with parleyd.dial() as peer:
        # parley.debugger.record has a one-way handler: it runs (the record is stored), no reply comes.
        rid = peer.send_message("parley.debugger.record", record_payload("load", '{"items":[]}'), request=True)
        answer = peer.recv_answer(rid)
        check_error_reply_layout(answer)
        assert (answer.in_reply_to, answer.code) == (rid, wire.NO_RESPONDER), answer


def test_handler_failed(parleyd):
    with parleyd.dial() as peer:
        # A record too short to hold its action length: the handler throws; the text says what.
        rid = peer.send_message("parley.debugger.record", b"\x01", request=True)
        answer = peer.recv_answer(rid)
        check_error_reply_layout(answer)
        assert (answer.in_reply_to, answer.code) == (rid, wire.HANDLER_FAILED), answer


def test_one_way_messages_get_no_error_reply_whatever_fails(parleyd):
    with parleyd.dial() as peer:
        peer.send_message("conf.NobodyHandlesThis", b"{}")
        peer.send_message("parley.debugger.record", b"\x01")
        peer.send_message("parley.control.Status", b"{}")
        # §7: failures of one-way messages are only logged. A bounded read that must time out.
        peer.expect_silence(0.5)
        peer.assert_alive()


def test_an_error_reply_with_an_unknown_code_is_accepted(parleyd):
    with parleyd.dial(name="odd-coder") as peer:
        control = parleyd.control()
        with control:
            rid = control.send_message(f"@{peer.hello['peerID']}/conf.Echo", b"{}", request=True)
            request = peer.recv_message()
            # §13.6: ignore unknown error codes; the requester's request fails, nothing else happens.
            peer.send(wire.error_reply_body(request.id, 999, "from the future"))
            answer = control.recv_answer(rid)
            assert answer.kind == wire.ERROR_REPLY, answer
        peer.assert_alive()


# ------------------------------------------------------------------------------------------- fatal errors

def fatal(parleyd, data: bytes, code: int):
    with parleyd.dial() as peer:
        peer.send_raw(data)
        return peer.expect_close(code)


@pytest.mark.parametrize("data", [
    b"\x00" + struct.pack("<I", 9) + wire.ping_body(1),
    wire.original_frame(b"{}"),
], ids=["start-byte-0x00", "original-framing-frame"])
def test_wrong_start_byte_after_the_handshake_is_malformed(parleyd, data):
    fatal(parleyd, data, wire.MALFORMED_FRAME)


@pytest.mark.parametrize("body", [
    b"",
    bytes([0x7F]),
    bytes([0x04]),
    wire.message_body("conf.X", b"", id=1)[:19],
    wire.message_body("conf.X", b"{}", id=1, name_length=0),
    wire.message_body("x" * 1025, b"", id=1),
    wire.message_body("conf.X", b"", id=1, name_length=7),
    wire.message_body("conf.X", b"{}", id=0),
    wire.ping_body(1)[:8],
    wire.ping_body(1) + b"\x00",
    wire.pong_body(1)[:8],
    wire.pong_body(1) + b"\x00",
    wire.error_reply_body(1, 5)[:10],
    bytes([wire.CLOSE, 0]),
    bytes([wire.HELLO, 1, 0, 1]),
    bytes([wire.SEALED]) + bytes(16),
], ids=["empty-body", "unknown-kind-0x7f", "unknown-kind-0x04", "message-shorter-than-20",
        "name-length-0", "name-length-1025", "name-past-the-body", "message-id-0", "ping-8-bytes",
        "ping-10-bytes", "pong-8-bytes", "pong-10-bytes", "error-reply-shorter-than-11",
        "close-shorter-than-3", "hello-shorter-than-5", "sealed-shorter-than-17"])
def test_malformed_frames_after_the_handshake(parleyd, body):
    # §9: unknown kind byte; body too short for its kind; name length 0 or > 1024; id 0; ping/pong not 9 bytes.
    # A hello or sealed frame too short for its kind is malformed before it is out of place (§3: "A body
    # shorter than 5 (17) bytes is malformed").
    fatal(parleyd, wire.frame(body), wire.MALFORMED_FRAME)


def test_type_name_of_1024_bytes_is_accepted(parleyd):
    with parleyd.dial() as peer:
        # §3: type name length 1…1024.
        rid = peer.send_message("t" * 1024, b"{}", request=True)
        answer = peer.recv_answer(rid)
        assert answer.code == wire.UNKNOWN_TYPE, answer
        rid = peer.send_message("t", b"", request=True)
        assert peer.recv_answer(rid).code == wire.UNKNOWN_TYPE


def test_unused_flag_bits_are_ignored(parleyd):
    with parleyd.dial() as peer:
        # §3: other flag bits: send 0, ignore on receipt.
        rid = peer.new_id()
        peer.send(wire.message_body("conf.NobodyHandlesThis", b"{}", id=rid, flags=0xFF))
        assert peer.recv_answer(rid).code == wire.UNKNOWN_TYPE
        peer.send(wire.message_body("conf.NobodyHandlesThis", b"{}", id=peer.new_id(), flags=0xFE))
        peer.expect_silence(0.3)  # not a request: no answer (bounded read)
        peer.assert_alive()


@pytest.mark.parametrize("body", [
    wire.hello_body(b'{"peerID":"00000000-0000-4000-8000-000000000001","name":"again","capabilities":[],"accepts":[]}'),
    wire.auth_body(bytes(32)),
    bytes([wire.SEALED]) + bytes(32),
], ids=["hello", "auth", "sealed-on-open"])
def test_handshake_frames_after_the_handshake_are_protocol_violations(parleyd, body):
    # §9: hello, auth or sealed (on an open connection) frame after the handshake.
    fatal(parleyd, wire.frame(body), wire.PROTOCOL_VIOLATION)


def test_frames_before_a_fatal_one_are_handled(parleyd):
    with parleyd.dial() as peer:
        rid = peer.new_id()
        peer.send_raw(wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=rid,
                                                   flags=wire.EXPECTS_REPLY)) + wire.frame(bytes([0x7F])))
        # §9: the close frame is queued behind pending frames.
        answer = peer.recv_until(lambda f: f.kind in (wire.ERROR_REPLY, wire.CLOSE))
        assert answer.kind == wire.ERROR_REPLY and answer.in_reply_to == rid, answer
        peer.expect_close(wire.MALFORMED_FRAME)


def test_truncated_frame_then_end_of_stream(parleyd):
    with parleyd.dial() as peer:
        peer.send_raw(wire.frame(wire.ping_body(1))[:7])
        peer.half_close()
        # §9: connection ends inside a frame -> malformed-frame ("usually unread: the peer is gone"; with a
        # half-close we are still there to read it), then the connection closes.
        peer.expect_close(wire.MALFORMED_FRAME)


# ------------------------------------------------------------------------------------------- through the router

def test_a_request_handed_to_subscribed_local_clients_gets_no_responder(parleyd):
    control = parleyd.control()
    with control, parleyd.dial() as peer:
        rid = control.send_message("parley.control.Subscribe", b'{"types":["conf.Routed"]}', request=True)
        assert control.recv_answer(rid).type_name == "parley.control.OK"
        request_id = peer.send_message("conf.Routed", b'{"q":1}', request=True)
        # §7 code 7 (docs/operations.md, From the LAN): the local client gets it as a one-way message, the
        # requester no-responder at once.
        forwarded = control.recv_message()
        assert forwarded.type_name.endswith("/conf.Routed") and forwarded.flags & wire.EXPECTS_REPLY == 0
        answer = peer.recv_answer(request_id)
        assert answer.code == wire.NO_RESPONDER, answer


def test_a_local_clients_request_to_no_connected_peer_gets_no_matching_peer(parleyd):
    control = parleyd.control()
    with control:
        rid = control.send_message("@no-such-peer/conf.Note", b"{}", request=True)
        answer = control.recv_answer(rid)
        check_error_reply_layout(answer)
        # §7: parleyd's own code for its local clients, matched by number; the text is for a person.
        assert answer.code == wire.NO_MATCHING_PEER and "no-such-peer" in answer.text, answer
