"""§3 message frames, §7 requests and replies, typed send and broadcast, through parleyd's routing between two
or more Python peers and a local client on its control socket (docs/operations.md, Control socket)."""
import json
import struct
import uuid

import pytest

from parley_tools import wire

# Bytes that are not JSON and not UTF-8: the payload is opaque (§3), forwarded untouched.
OPAQUE = bytes(range(256)) + b'{"not":"decoded"}'


@pytest.fixture
def alice(parleyd):
    conn = parleyd.dial(name=f"alice-{uuid.uuid4().hex[:6]}", accepts=["conf.Note", "conf.Echo"])
    yield conn
    conn.close()


@pytest.fixture
def bob(parleyd):
    conn = parleyd.dial(name=f"bob-{uuid.uuid4().hex[:6]}", accepts=["conf.Note"])
    yield conn
    conn.close()


def subscribe(control, types=()):
    rid = control.send_message("parley.control.Subscribe", json.dumps({"types": list(types)}).encode(),
                               request=True)
    answer = control.recv_answer(rid)
    assert answer.kind == wire.MESSAGE and answer.type_name == "parley.control.OK", answer


def check_message_layout(f: wire.Frame):
    """§3 message: fixed 20-byte header, then the name, then the payload; id non-zero."""
    name_length = struct.unpack_from("<H", f.body, 18)[0]  # frame offset 23
    assert len(f.body) == 20 + name_length + len(f.payload)
    assert f.id != 0


# ------------------------------------------------------------------------------------------- examples

def test_message_example_of_section_3_encodes_as_documented():
    documented = bytes.fromhex("cf 1c 00 00 00 10 01 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 06 00 "
                               "74 2e 50 69 6e 67 7b 7d")
    assert wire.frame(wire.message_body("t.Ping", b"{}", id=1, flags=wire.EXPECTS_REPLY)) == documented


SECTION_12_HELLO = bytes.fromhex("""
cf 81 00 00 00 01 01 00 01 00
7b 22 70 65 65 72 49 44 22 3a 22 36 66 31 63 37 61 35 32 2d 39 33 63 34 2d 34 64 30 65 2d 39 61
37 64 2d 30 62 37 66 36 66 31 66 30 61 31 31 22 2c 22 6e 61 6d 65 22 3a 22 74 61 62 6c 65 74 22
2c 22 63 61 70 61 62 69 6c 69 74 69 65 73 22 3a 5b 22 68 65 61 72 74 62 65 61 74 22 5d 2c 22 61
63 63 65 70 74 73 22 3a 5b 22 6c 69 73 74 72 2e 49 74 65 6d 41 64 64 65 64 22 5d 7d""")
SECTION_12_REQUEST = bytes.fromhex("""
cf 38 00 00 00 10 01 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 14 00
6c 69 73 74 72 2e 41 64 64 49 74 65 6d 43 6f 6d 6d 61 6e 64 7b 22 74 69 74 6c 65 22 3a 22 6d 69 6c 6b 22 7d""")
SECTION_12_ERROR_REPLY = (bytes.fromhex("cf 3d 00 00 00 11 01 00 00 00 00 00 00 00 05 00")
                          + b'no handler for message type "listr.AddItemCommand"')
SECTION_12_CLOSE = bytes.fromhex("cf 1a 00 00 00 30 00 00 74 61 62 6c 65 74 20 69 73 20 73 68 75 74 74 69 "
                                 "6e 67 20 64 6f 77 6e")


def test_example_exchange_of_section_12_byte_for_byte(parleyd):
    # The dialer's hello as documented is the one our encoder makes of the documented JSON.
    hello = {"peerID": "6f1c7a52-93c4-4d0e-9a7d-0b7f6f1f0a11", "name": "tablet", "capabilities": ["heartbeat"],
             "accepts": ["listr.ItemAdded"]}
    assert wire.frame(wire.hello_body(json.dumps(hello, separators=(",", ":")).encode())) == SECTION_12_HELLO
    assert wire.frame(wire.message_body("listr.AddItemCommand", b'{"title":"milk"}', id=1,
                                        flags=wire.EXPECTS_REPLY)) == SECTION_12_REQUEST
    assert wire.frame(wire.close_body(wire.GOING_AWAY, "tablet is shutting down")) == SECTION_12_CLOSE
    with parleyd.connect() as conn:
        conn.send_raw(SECTION_12_HELLO)
        assert conn.recv().kind == wire.HELLO
        conn.send_raw(SECTION_12_REQUEST)
        # parleyd has no handler for the type and no subscriber: the documented error-reply, byte for byte.
        answer = conn.recv_until(lambda f: f.kind != wire.PING)
        assert answer.raw == SECTION_12_ERROR_REPLY, answer
        conn.send_raw(SECTION_12_CLOSE)
        conn.half_close()
        # §8 Graceful close: no close frame in answer, the connection just ends.
        rest = conn.expect_eof(3)
        while rest:
            conn.buffer, rest = rest, b""
            f = conn.recv()
            assert f.kind == wire.PING, f"only pings may follow (the hello listed heartbeat): {f}"
            rest = conn.buffer


# ------------------------------------------------------------------------------------------- typed send

def test_one_way_message_from_a_peer_reaches_a_subscribed_local_client_untouched(parleyd, control, alice):
    subscribe(control, ["conf.Note"])
    alice_id = alice.hello["peerID"]
    mid = alice.send_message("conf.Note", OPAQUE)
    got = control.recv_message()
    # docs/operations.md: delivered as @<sender peer id>/<Type>, payload untouched.
    assert got.type_name == f"@{alice_id}/conf.Note"
    assert got.payload == OPAQUE
    assert got.flags & wire.EXPECTS_REPLY == 0 and got.in_reply_to == 0
    check_message_layout(got)
    assert mid == 1


def test_typed_send_to_one_peer(parleyd, control, alice, bob):
    alice_id = alice.hello["peerID"]
    control.send_message(f"@{alice_id}/conf.Note", OPAQUE)
    got = alice.recv_message()
    # §3: a one-way message: flags 0, a non-zero id, in-reply-to 0, the type and the payload as sent.
    assert (got.flags, got.in_reply_to, got.type_name, got.payload) == (0, 0, "conf.Note", OPAQUE)
    check_message_layout(got)
    # Bob, not addressed, receives nothing (bounded read that must time out).
    bob.expect_silence(0.3)


def test_broadcast_reaches_every_peer(parleyd, control, alice, bob):
    control.send_message("@*/conf.Note", b'{"to":"everyone"}')
    for peer in (alice, bob):
        got = peer.recv_message()
        assert (got.flags, got.in_reply_to, got.type_name, got.payload) == (0, 0, "conf.Note", b'{"to":"everyone"}')
        check_message_layout(got)


def test_ids_are_non_zero_and_increase_on_a_connection(parleyd, control, alice):
    alice_id = alice.hello["peerID"]
    for n in range(4):
        control.send_message(f"@{alice_id}/conf.Note", b"%d" % n)
    ids = [alice.recv_message().id for _ in range(4)]
    # §3 Ids: Parley numbers from one counter per node: increasing on one connection, possibly with gaps.
    assert all(i > 0 for i in ids) and ids == sorted(set(ids)), ids


# ------------------------------------------------------------------------------------------- request/reply

def test_request_and_reply_between_two_peers(parleyd, control, alice):
    alice_id = alice.hello["peerID"]
    rid = control.send_message(f"@{alice_id}/conf.Echo", b'{"text":"milk"}', request=True)
    request = alice.recv_message()
    # §7: a request carries expects-reply.
    assert request.flags & wire.EXPECTS_REPLY and request.in_reply_to == 0 and request.type_name == "conf.Echo"
    assert request.payload == b'{"text":"milk"}'
    # Our reply uses id 1 like the first message anyone sends: ids are per sender (§3).
    reply_id = alice.reply(request, "conf.Echoed", OPAQUE)
    reply = control.recv_answer(rid)
    # The reply comes back with in-reply-to = the requester's id, flags 0, its own id and type, payload untouched.
    assert reply.kind == wire.MESSAGE, reply
    assert (reply.in_reply_to, reply.flags, reply.type_name, reply.payload) == (rid, 0, "conf.Echoed", OPAQUE)
    assert reply.id != 0
    assert reply_id >= 1


def test_replies_are_matched_by_in_reply_to_in_any_order(parleyd, alice):
    alice_id = alice.hello["peerID"]
    # Two requesters (parleyd handles one connection's messages one at a time, §7, and its router waits for
    # the reply of a forwarded request, so concurrent requests come from two local clients).
    first_client, second_client = parleyd.control(), parleyd.control()
    with first_client, second_client:
        first = first_client.send_message(f"@{alice_id}/conf.Echo", b"1", request=True)
        r1 = alice.recv_message()
        second = second_client.send_message(f"@{alice_id}/conf.Echo", b"2", request=True)
        r2 = alice.recv_message()
        assert (r1.payload, r2.payload) == (b"1", b"2") and r1.id != r2.id
        alice.reply(r2, "conf.Echo", b"two")
        alice.reply(r1, "conf.Echo", b"one")
        assert second_client.recv_answer(second).payload == b"two"
        assert first_client.recv_answer(first).payload == b"one"


def test_a_reply_is_never_dispatched_even_with_expects_reply_set(parleyd, alice):
    # §7: a message with a non-zero in-reply-to is a reply: never dispatched, its flags ignored; a reply
    # matching no outstanding request is ignored. So nothing comes back (bounded read that must time out) ...
    alice.send(wire.message_body("conf.NobodyHandlesThis", b"{}", id=alice.new_id(), in_reply_to=424242,
                                 flags=wire.EXPECTS_REPLY))
    alice.send(wire.error_reply_body(434343, wire.HANDLER_FAILED, "late"))
    alice.expect_silence(0.5)
    # ... and the connection carries on.
    alice.assert_alive()


def test_one_way_message_of_an_unknown_type_gets_no_error_reply(parleyd, alice):
    alice.send_message("conf.NobodyHandlesThis", b"{}")
    # §7: a message without expects-reply never gets a reply or an error-reply. Bounded read.
    alice.expect_silence(0.5)
    alice.assert_alive()


def test_both_sides_may_use_the_same_ids(parleyd, control, alice):
    alice_id = alice.hello["peerID"]
    # Alice's request with id 1 (per-connection counting, §13.4) is independent of parleyd's ids.
    own = alice.send_message("conf.NobodyHandlesThis", b"{}", request=True)
    control.send_message(f"@{alice_id}/conf.Note", b"x")
    # Both arrive, in either order.
    frames = [alice.recv(), alice.recv()]
    answer = next(f for f in frames if f.kind == wire.ERROR_REPLY)
    note = next(f for f in frames if f.kind == wire.MESSAGE)
    assert answer.in_reply_to == own and answer.code == wire.UNKNOWN_TYPE
    assert note.type_name == "conf.Note" and note.in_reply_to == 0
