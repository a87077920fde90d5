"""§8 Closing: close frames and codes, graceful close, end-of-stream, parleyd's own shutdown."""
import signal

from parley_tools import wire


def frames_in(data: bytes) -> list:
    conn = wire.Connection(None)
    conn.buffer = data
    frames = []
    while conn.buffer:
        raw = conn.buffer
        (length,) = __import__("struct").unpack_from("<I", raw, 1)
        conn.buffer = raw[5 + length:]
        frames.append(wire.parse_body(raw[5:5 + length], raw[:5 + length]))
    return frames


def test_graceful_close_handles_what_came_before_and_is_not_answered(parleyd):
    with parleyd.dial() as peer:
        rid = peer.new_id()
        # §8: close(going-away) after everything already queued, then half-close, then read until the end.
        peer.send_raw(wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=rid,
                                                   flags=wire.EXPECTS_REPLY))
                      + wire.frame(wire.close_body(wire.GOING_AWAY, "py peer is done")))
        peer.half_close()
        frames = frames_in(peer.expect_eof(3))
        # The message before the close was handled (its error-reply written), and no close frame answers ours.
        assert [(f.kind, f.in_reply_to, f.code) for f in frames] == [(wire.ERROR_REPLY, rid, wire.UNKNOWN_TYPE)]


def test_frames_after_a_close_frame_are_not_handled(parleyd):
    with parleyd.dial() as peer:
        # §8: a node that receives a close frame stops reading: the request behind it gets no answer.
        peer.send_raw(wire.frame(wire.close_body(wire.GOING_AWAY))
                      + wire.frame(wire.message_body("conf.NobodyHandlesThis", b"{}", id=1, flags=wire.EXPECTS_REPLY)))
        assert frames_in(peer.expect_eof(3)) == []


def test_unknown_close_codes_are_accepted_as_a_generic_close(parleyd):
    with parleyd.dial() as peer:
        peer.send_close(777, "a code from a newer peer")
        # §8: other codes MUST be accepted as a generic close: the connection simply ends, no answer.
        assert peer.expect_eof(3) == b""


def test_end_of_stream_without_a_close_frame(parleyd):
    with parleyd.dial() as peer:
        rid = peer.send_message("conf.NobodyHandlesThis", b"{}", request=True)
        peer.half_close()
        # §8: a node that sees end-of-stream without a close frame does the same as for a close frame.
        frames = frames_in(peer.expect_eof(3))
        assert [(f.kind, f.in_reply_to) for f in frames] == [(wire.ERROR_REPLY, rid)]


def test_connections_still_work_after_another_peer_is_closed_for_an_error(parleyd):
    with parleyd.dial() as survivor, parleyd.dial() as culprit:
        culprit.send_raw(wire.frame(bytes([0x7F])))
        culprit.expect_close(wire.MALFORMED_FRAME)
        # §9: other connections are unaffected.
        survivor.assert_alive()


def test_parleyd_shutdown_sends_going_away_then_closes(start_parleyd):
    daemon = start_parleyd()
    with daemon.dial() as first, daemon.dial() as second:
        first.assert_alive()
        daemon.process.send_signal(signal.SIGTERM)
        # docs/operations.md Signals: close(going-away) to every peer; §8: then the connection ends.
        for peer in (first, second):
            close = peer.expect_close(wire.GOING_AWAY, timeout=5)
            assert close.text, "a human-readable reason"
    assert daemon.stop() == 0
