"""§2 and §11 limits, each on a parleyd configured with a small value (docs/operations.md keys) so that it is
reached quickly. Every limit protocol.md states: frame body size, hello size, name and type name lengths,
handshake time (test_handshake.py), connections in all / per address / pending, idle time, rate, memory
budget, frame stall. (Bytes queued towards a peer, 8 MiB, is flow control rather than a refusal: test_backpressure.py.)"""
import json
import struct
import time
import uuid

import pytest

from parley_tools import wire


def padded_request(conn: wire.Connection, body_size: int) -> int:
    """A request of an unknown type whose message body is exactly `body_size` bytes."""
    name = b"conf.NobodyHandlesThis"
    rid = conn.new_id()
    body = wire.message_body(name, b"p" * (body_size - 20 - len(name)), id=rid, flags=wire.EXPECTS_REPLY)
    assert len(body) == body_size
    conn.send(body)
    return rid


# ------------------------------------------------------------------------------------------- frame size

@pytest.fixture(scope="module")
def small_frames(start_parleyd):
    return start_parleyd("--max-frame-size", "1024")


def test_a_frame_of_the_maximum_body_size_is_accepted(small_frames):
    with small_frames.dial() as peer:
        rid = padded_request(peer, 1024)
        assert peer.recv_answer(rid).code == wire.UNKNOWN_TYPE


def test_a_longer_frame_is_refused_from_its_prefix_before_the_body(small_frames):
    with small_frames.dial() as peer:
        # §2: the announced length is checked as soon as the 5-byte prefix has arrived: we send nothing more.
        peer.send_raw(bytes([0xCF]) + struct.pack("<I", 1025))
        close = peer.expect_close(wire.FRAME_TOO_LARGE)
        assert "1024" in close.text or "1025" in close.text, close.text


def test_a_longer_first_frame_is_a_protocol_violation(small_frames):
    with small_frames.connect() as conn:
        # §2: during the handshake, frame-too-large becomes protocol-violation.
        conn.send_raw(bytes([0xCF]) + struct.pack("<I", 1025))
        conn.expect_close(wire.PROTOCOL_VIOLATION)


def test_the_largest_frame_is_also_the_limit_for_the_original_framing(small_frames):
    with small_frames.connect() as app:
        # §5: a length above the maximum body size closes the connection without a word.
        app.send_raw(struct.pack("<Bi", 0xCE, 1025))
        assert app.expect_eof(3) == b""


# ------------------------------------------------------------------------------------------- hello limits

def hello_json(pad: int = 0, **fields) -> bytes:
    hello = wire.make_hello_json(**fields)
    if pad:
        hello["padding"] = "a" * pad
    return json.dumps(hello, separators=(",", ":")).encode()


def hello_of_size(size: int) -> bytes:
    base = len(hello_json(pad=1)) - 1
    data = hello_json(pad=size - base)
    assert len(data) == size
    return data


def try_hello(daemon, data: bytes) -> wire.Frame:
    with daemon.connect() as conn:
        wire.send_hello(conn, data)
        answer = conn.recv()
        if answer.kind == wire.CLOSE:
            conn.expect_eof(3)
        return answer


def test_hello_json_of_64_KiB_is_accepted(parleyd):
    assert try_hello(parleyd, hello_of_size(65536)).kind == wire.HELLO


def test_hello_json_above_64_KiB_is_refused(parleyd):
    answer = try_hello(parleyd, hello_of_size(65537))
    assert (answer.kind, answer.code) == (wire.CLOSE, wire.PROTOCOL_VIOLATION), answer


@pytest.mark.parametrize("name", ["n" * 63, "€" * 21, ""], ids=["63-ascii", "63-bytes-utf8", "empty"])
def test_names_of_at_most_63_bytes_are_accepted(parleyd, name):
    assert try_hello(parleyd, hello_json(name=name)).kind == wire.HELLO


@pytest.mark.parametrize("name", ["n" * 64, "€" * 22], ids=["64-ascii", "66-bytes-utf8"])
def test_names_above_63_bytes_are_refused(parleyd, name):
    answer = try_hello(parleyd, hello_json(name=name))
    assert (answer.kind, answer.code) == (wire.CLOSE, wire.PROTOCOL_VIOLATION), answer


def test_accepted_type_names_of_1_to_1024_bytes_are_accepted(parleyd):
    assert try_hello(parleyd, hello_json(accepts=["t", "t" * 1024])).kind == wire.HELLO


@pytest.mark.parametrize("name", ["", "t" * 1025], ids=["empty", "1025"])
def test_accepted_type_names_outside_1_to_1024_bytes_are_refused(parleyd, name):
    answer = try_hello(parleyd, hello_json(accepts=[name]))
    assert (answer.kind, answer.code) == (wire.CLOSE, wire.PROTOCOL_VIOLATION), answer


# ------------------------------------------------------------------------------------------- connections

@pytest.fixture
def two_connections(start_parleyd):
    daemon = start_parleyd("--max-connections", "2", "--max-connections-per-address", "0")
    yield daemon
    daemon.stop()


def test_connections_above_the_maximum_are_refused_instead_of_the_hello(two_connections):
    with two_connections.dial(), two_connections.dial() as second:
        with two_connections.connect() as third:
            wire.send_hello(third, wire.make_hello_json())
            # §11 Refusal at accept: close(too-many-connections) instead of the hello, naming the limit.
            close = third.expect_close(wire.TOO_MANY_CONNECTIONS)
            assert "2" in close.text, close.text
        with two_connections.connect() as app:
            # ... an app of the original debugger (0xCE) is closed without a byte.
            app.send_raw(wire.original_frame(b'{"state":{},"action":"a"}'))
            assert app.expect_eof(3) == b""
        second.assert_alive()


def test_connections_above_the_maximum_per_address_are_refused(start_parleyd):
    daemon = start_parleyd("--max-connections-per-address", "2")
    with daemon.dial(), daemon.dial():
        with daemon.connect() as third:
            wire.send_hello(third, wire.make_hello_json())
            close = third.expect_close(wire.TOO_MANY_CONNECTIONS)
            assert "127.0.0.1" in close.text or "2" in close.text, close.text
        # Another address (a second loopback address) is counted apart.
        with daemon.dial(source="127.0.0.2") as other:
            other.assert_alive()
    daemon.stop()


def test_pending_pool_full_of_connections_that_sent_a_byte_refuses_a_newcomer(start_parleyd):
    daemon = start_parleyd("--max-pending-connections", "2")
    with daemon.connect() as first, daemon.connect() as second:
        first.send_raw(b"\xcf")
        second.send_raw(b"\xcf")
        # §11: only a connection that has sent no byte for a second may be closed to make room. Waiting out
        # that second shows that their byte, not their age, is what protects them.
        time.sleep(1.1)
        with daemon.connect() as newcomer:
            wire.send_hello(newcomer, wire.make_hello_json())
            newcomer.expect_close(wire.TOO_MANY_CONNECTIONS)
        # Nothing was said to the two pending connections (bounded read that must time out).
        first.expect_silence(0.2)
        second.expect_silence(0.2)
    daemon.stop()


def test_pending_pool_full_closes_the_oldest_silent_connection_without_a_word(start_parleyd):
    daemon = start_parleyd("--max-pending-connections", "2")
    with daemon.connect() as oldest, daemon.connect() as younger:
        # §11: "the oldest that has sent no byte for a second is closed without a word to make room".
        time.sleep(1.1)
        with daemon.connect() as newcomer:
            wire.handshake(newcomer)
            assert oldest.expect_eof(3) == b""
            younger.expect_silence(0.2)
            newcomer.assert_alive()
    daemon.stop()


def test_from_half_full_a_new_connections_handshake_clock_starts_at_accept(start_parleyd):
    daemon = start_parleyd("--max-pending-connections", "4", "--handshake-timeout", "1s")
    with daemon.connect() as first, daemon.connect() as second:
        # Two silent connections fill half of the pool; their clocks never started (no byte). The wait lets
        # both be counted before the next one arrives (each connection is admitted on its own event loop).
        time.sleep(1.1)
        with daemon.connect() as late:
            started = time.monotonic()
            # Silent too, but its clock started at accept: gone after the handshake timeout. It never sent a
            # byte, so its framing is unknown and it is closed without a word.
            assert late.expect_eof(4) == b""
            assert 0.8 < time.monotonic() - started < 2.5
        first.expect_silence(0.2)
        second.expect_silence(0.2)
    daemon.stop()


# ------------------------------------------------------------------------------------------- idle timeout

@pytest.fixture(scope="module")
def idle(start_parleyd):
    return start_parleyd("--idle-timeout", "1s")


def test_idle_connection_is_closed_with_idle_timeout(idle):
    with idle.dial() as peer:
        started = time.monotonic()
        peer.expect_close(wire.IDLE_TIMEOUT, timeout=4)
        assert 0.9 < time.monotonic() - started < 3.0


def test_pings_and_pongs_do_not_count_as_traffic(idle):
    with idle.dial(capabilities=["heartbeat"]) as peer:
        started = time.monotonic()
        # recv_until answers parleyd's pings; we ping too. Neither keeps the connection from going idle.
        peer.send(wire.ping_body(1))
        frames = []
        while True:
            f = peer.recv(4)
            frames.append(f)
            if f.kind == wire.PING:
                peer.send(wire.pong_body(f.nonce))
                peer.send(wire.ping_body(f.nonce + 100))
            if f.kind == wire.CLOSE:
                close = f
                break
        assert close.code == wire.IDLE_TIMEOUT, frames
        assert time.monotonic() - started < 3.0


def test_messages_in_either_direction_keep_the_connection(idle):
    with idle.dial() as peer:
        started = time.monotonic()
        # One request every 0.4 s for 2 s (twice the idle timeout): each error-reply comes back, no close.
        while time.monotonic() - started < 2.0:
            peer.assert_alive()
            peer.expect_silence(0.4)
        peer.assert_alive()


# ------------------------------------------------------------------------------------------- rate limit

def test_frames_faster_than_the_rate_limit_end_the_connection(start_parleyd):
    daemon = start_parleyd("--max-messages-per-second", "1", "--message-burst", "5")
    with daemon.dial() as peer:
        # §11 Rate: the hello took one of the 5 tokens; 10 requests at once: those received before the empty
        # bucket are handled as usual, then close(rate-limited).
        requests = []
        data = b""
        for _ in range(10):
            rid = peer.new_id()
            requests.append(rid)
            data += wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=rid, flags=wire.EXPECTS_REPLY))
        peer.send_raw(data)
        answered = []
        while True:
            f = peer.recv()
            if f.kind == wire.CLOSE:
                break
            assert f.kind == wire.ERROR_REPLY, f
            answered.append(f.in_reply_to)
        assert f.code == wire.RATE_LIMITED, f
        peer.expect_eof(3)
        assert answered == requests[:len(answered)] and 4 <= len(answered) <= 5, answered
    daemon.stop()


# ------------------------------------------------------------------------------------------- frame stall

@pytest.fixture(scope="module")
def stall(start_parleyd):
    return start_parleyd("--frame-stall-timeout", "1s")


def test_a_begun_frame_left_unfinished_is_closed_with_stalled_frame(stall):
    with stall.dial() as peer:
        peer.send_raw(wire.frame(wire.message_body("conf.X", b"{}", id=1))[:12])
        started = time.monotonic()
        peer.expect_close(wire.STALLED_FRAME, timeout=4)
        assert 0.9 < time.monotonic() - started < 3.0


def test_a_hello_left_unfinished_is_closed_with_stalled_frame(stall):
    # The frame stall clock runs for the hello too (§11): a peer cannot hold a connection open on half a hello.
    hello = wire.frame(wire.hello_body(b'{"peerID":"%s","name":"slow","capabilities":[],"accepts":[]}' % str(uuid.uuid4()).encode()))
    with stall.connect() as peer:
        peer.send_raw(hello[:20])
        started = time.monotonic()
        peer.expect_close(wire.STALLED_FRAME, timeout=4)
        assert 0.9 < time.monotonic() - started < 3.0


def test_an_unfinished_frame_in_the_original_framing_is_closed(stall):
    # §5: that framing has no close frame; the connection just ends, after the frame stall timeout.
    with stall.connect() as app:
        app.send_raw(wire.original_frame(b'{"action":"a","state":' + b"1" * 100, length=1 << 20))
        started = time.monotonic()
        app.expect_eof(timeout=4)
        assert 0.9 < time.monotonic() - started < 3.0


def test_a_frame_arriving_slowly_but_steadily_is_not_closed(stall):
    with stall.dial() as peer:
        rid = peer.new_id()
        data = wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=rid, flags=wire.EXPECTS_REPLY))
        # §11: the clock restarts with every byte. Four pieces 0.6 s apart: 1.8 s in all, above the timeout.
        pieces = [data[:3], data[3:10], data[10:25], data[25:]]
        for piece in pieces[:-1]:
            peer.send_raw(piece)
            peer.expect_silence(0.6)  # nothing may come back meanwhile, in particular no close
        peer.send_raw(pieces[-1])
        assert peer.recv_answer(rid).code == wire.UNKNOWN_TYPE


# ------------------------------------------------------------------------------------------- memory budget

def test_memory_budget_closes_the_connection_holding_the_most(start_parleyd):
    mib = 1024 * 1024
    daemon = start_parleyd("--memory-budget", str(16 * mib), "--max-frame-size", str(8 * mib))
    big, middle, last, small = daemon.dial(), daemon.dial(), daemon.dial(), daemon.dial()
    try:
        # Each announces an 8 MiB frame: 24 MiB announced, above the budget, but a frame is charged as it
        # arrives, never by its announced length, so nothing happens yet.
        for conn in (big, middle, last):
            conn.send_raw(bytes([0xCF]) + struct.pack("<I", 8 * mib) + bytes([wire.MESSAGE]))
        small.assert_alive()
        big.send_raw(b"\x00" * (7 * mib + mib // 2))
        middle.send_raw(b"\x00" * (5 * mib))
        small.assert_alive()
        # 7.5 + 5 + 4 MiB > 16 MiB: the connection holding the most (big) is closed with memory-budget. (The
        # budget overflows only once less than 0.5 MiB is still in flight, so big holds the most whatever the
        # order in which parleyd reads the three sockets.)
        last.send_raw(b"\x00" * (4 * mib))
        close = big.expect_close(wire.MEMORY_BUDGET)
        assert close.text
        # The others are unaffected; one sending small messages is never among those closed.
        small.assert_alive()
        for conn in (middle, last):
            conn.expect_silence(0.1)
    finally:
        for conn in (big, middle, last, small):
            conn.close()
        daemon.stop()
