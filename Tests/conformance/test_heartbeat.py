"""§6 Heartbeats: pings every second towards a peer that lists "heartbeat", pongs with the same nonce, and the
3 s rule, observed on three connections at once so that the module takes one heartbeat timeout, not three."""
import select
import time

import pytest

from parley_tools import wire

OBSERVE = 4.6  # seconds: longer than the 3 s heartbeat timeout plus its checking slack


@pytest.fixture(scope="module")
def observed(parleyd):
    """Runs the scenario once. `answering` lists heartbeat and answers every ping; `silent` lists heartbeat
    and never sends anything; `plain` does not list heartbeat and sends nothing."""
    answering = parleyd.dial(name="hb-answering", capabilities=["heartbeat"])
    silent = parleyd.dial(name="hb-silent", capabilities=["heartbeat"])
    plain = parleyd.dial(name="hb-plain", capabilities=[])
    connected = time.monotonic()
    log = {"answering": [], "silent": [], "plain": []}
    ended = {}
    ending_bytes = {}
    conns = {"answering": answering, "silent": silent, "plain": plain}
    own_ping_sent = None
    deadline = connected + OBSERVE
    while time.monotonic() < deadline:
        if own_ping_sent is None and time.monotonic() - connected > 0.2:
            answering.send(wire.ping_body(0xDEADBEEFCAFEF00D))
            own_ping_sent = time.monotonic()
        open_conns = {name: c for name, c in conns.items() if name not in ended}
        readable, _, _ = select.select([c.sock for c in open_conns.values()], [], [],
                                       max(0.0, min(0.1, deadline - time.monotonic())))
        for name, conn in open_conns.items():
            if conn.sock not in readable:
                continue
            try:
                f = conn.recv(0.5)
            except wire.Closed:
                ended[name] = time.monotonic()
                ending_bytes[name] = conn.buffer
                continue
            log[name].append((time.monotonic(), f))
            if name == "answering" and f.kind == wire.PING:
                conn.send(wire.pong_body(f.nonce))
    result = {"connected": connected, "log": log, "ended": ended, "ending_bytes": ending_bytes,
              "conns": conns, "own_ping_sent": own_ping_sent}
    yield result
    for conn in conns.values():
        conn.close()


def pings(observed, name):
    return [(t, f) for t, f in observed["log"][name] if f.kind == wire.PING]


def test_parley_pings_a_heartbeat_peer_every_second_with_a_counter_from_1(observed):
    received = pings(observed, "answering")
    nonces = [f.nonce for _, f in received]
    assert nonces[:4] == [1, 2, 3, 4], nonces
    times = [t for t, _ in received]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(0.6 < gap < 1.5 for gap in gaps), gaps
    assert all(len(f.body) == 9 for _, f in received)


def test_parley_answers_a_ping_with_the_same_nonce(observed):
    pongs = [(t, f) for t, f in observed["log"]["answering"] if f.kind == wire.PONG]
    assert [f.nonce for _, f in pongs] == [0xDEADBEEFCAFEF00D]
    assert pongs[0][0] - observed["own_ping_sent"] < 0.5, "answered promptly"


def test_a_heartbeat_peer_that_answers_stays_connected(observed):
    assert "answering" not in observed["ended"]
    observed["conns"]["answering"].assert_alive()


def test_a_silent_heartbeat_peer_is_closed_after_3_seconds_without_a_close_frame(observed):
    assert "silent" in observed["ended"], "parleyd did not close a heartbeat peer that sent nothing for 4.6 s"
    lifetime = observed["ended"]["silent"] - observed["connected"]
    # §6: about 3 s after the last byte received (the hello), plus one poll of the event loop.
    assert 2.7 < lifetime < 4.5, lifetime
    # §8 code 12: defined, but Parley closes a silent connection without a close frame.
    frames = [f for _, f in observed["log"]["silent"]]
    assert all(f.kind == wire.PING for f in frames), frames
    assert observed["ending_bytes"]["silent"] == b""


def test_a_peer_without_heartbeat_receives_no_pings_and_is_never_timed_out(observed):
    # §6: a minimal implementation that does not list "heartbeat" receives no pings and is never timed out.
    assert observed["log"]["plain"] == []
    assert "plain" not in observed["ended"]
    observed["conns"]["plain"].assert_alive()


def test_a_peer_without_heartbeat_gets_no_pong(parleyd):
    # §6 lists "answers every ping" among what Parley does towards a peer that lists "heartbeat"; towards any
    # other peer it does not, so a ping from it goes unanswered (a bounded read that must time out).
    with parleyd.dial(capabilities=[]) as peer:
        peer.send(wire.ping_body(7))
        peer.expect_silence(0.5)
        peer.assert_alive()
