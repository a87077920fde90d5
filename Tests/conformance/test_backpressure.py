"""§10 backpressure, observed from outside: a local client on the control socket sends 64 KiB messages through
parleyd to LAN peers written here, some of which stop reading. parleyd runs with its defaults: a queue of 8 MiB
towards each peer (`outboundHighWatermark`) and 5 s of patience in a broadcast (`slowPeerTimeout`).

Kernel buffers sit between the two ends and hold bytes of their own, so the bound asserted is the queue plus
what those buffers can hold: the stalled reader's receive buffer is fixed small here (SO_RCVBUF), parleyd's
send buffer towards it is bounded by the kernel's tcp_wmem maximum, and parleyd reads 4 socket reads ahead of a
handler that waits, about 16 frames of this size (§10, Receiving)."""
import struct
import threading
import time

from parley_tools import wire

MIB = 1024 * 1024
MESSAGE_SIZE = 64 * 1024
QUEUE_LIMIT = 8 * MIB                 # §10 outboundHighWatermark
SLOW_PEER_TIMEOUT = 5.0               # §10 slowPeerTimeout
STALLED_RECEIVE_BUFFER = 64 * 1024
TYPE = "conf.Bulk"


def tcp_send_buffer_maximum() -> int:
    with open("/proc/sys/net/ipv4/tcp_wmem") as file:
        return int(file.read().split()[2])


def payload(sequence: int) -> bytes:
    return struct.pack("<Q", sequence) + b"b" * (MESSAGE_SIZE - 8)


class Writer(threading.Thread):
    """Sends `count` messages of 64 KiB as `type_name` from a local client, and records its progress: how many
    whole messages the socket took, and when it last took one."""

    def __init__(self, client: wire.Connection, type_name: str, count: int):
        super().__init__(daemon=True)
        self.client, self.type_name, self.count = client, type_name, count
        self.sent = 0
        self.last_progress = time.monotonic()
        self.error: BaseException | None = None
        self.progress = threading.Condition()

    def run(self) -> None:
        self.client.sock.settimeout(None)
        try:
            for sequence in range(self.count):
                self.client.send_message(self.type_name, payload(sequence))
                with self.progress:
                    self.sent += 1
                    self.last_progress = time.monotonic()
                    self.progress.notify_all()
        except BaseException as error:  # reported by the test
            self.error = error

    def wait_until_stalled(self, at_least: int, quiet: float, timeout: float) -> int:
        """Waits until the writer has sent at least `at_least` bytes and then taken nothing for `quiet` seconds
        (its send blocks: parleyd stopped reading it); returns the bytes sent by then."""
        deadline = time.monotonic() + timeout
        with self.progress:
            while True:
                assert self.error is None, f"the writer failed: {self.error}"
                assert self.sent < self.count, f"all {self.count} messages were taken: nothing pushed back"
                now = time.monotonic()
                if self.sent * MESSAGE_SIZE >= at_least and now - self.last_progress >= quiet:
                    return self.sent * MESSAGE_SIZE
                assert now < deadline, f"no stall within {timeout} s; {self.sent} messages sent"
                self.progress.wait(min(quiet, deadline - now))


def read_messages(peer: wire.Connection, count: int, timeout: float) -> list[int]:
    """The sequence numbers of the next `count` messages of type TYPE."""
    return [struct.unpack_from("<Q", peer.recv_message(timeout, type_name=TYPE).payload)[0] for _ in range(count)]


def test_a_peer_that_stops_reading_stops_receiving_and_its_sender_waits_with_nothing_lost(parleyd):
    stalled = parleyd.dial(name="py-stalled", receive_buffer=STALLED_RECEIVE_BUFFER)
    client = parleyd.control()
    target = stalled.hello["peerID"]
    count = 400  # 25 MiB: more than the queue and every buffer on the way can hold
    writer = Writer(client, f"@{target}/{TYPE}", count)
    try:
        writer.start()
        in_flight = writer.wait_until_stalled(at_least=QUEUE_LIMIT, quiet=1.0, timeout=60)
        # The queue, parleyd's send buffer towards the stalled peer and that peer's receive buffer (the kernel
        # doubles SO_RCVBUF), the frames parleyd reads ahead of the waiting handler, and a message in transit.
        bound = QUEUE_LIMIT + tcp_send_buffer_maximum() + 2 * STALLED_RECEIVE_BUFFER + 18 * MESSAGE_SIZE + 1 * MIB
        assert in_flight <= bound, f"{in_flight / MIB:.1f} MiB taken from the sender while its peer did not read " \
                                   f"(bound {bound / MIB:.1f} MiB): the queue towards a peer is not bounded"
        # The peer reads again: everything arrives, in order, and the sender finishes.
        assert read_messages(stalled, count, timeout=60) == list(range(count))
        writer.join(30)
        assert not writer.is_alive() and writer.error is None, writer.error
        stalled.assert_alive()
    finally:
        stalled.close()
        client.close()


def test_a_broadcast_drops_a_peer_that_takes_nothing_for_5_s_and_the_others_receive_everything(parleyd):
    stalled = parleyd.dial(name="py-stalled-in-broadcast", receive_buffer=STALLED_RECEIVE_BUFFER)
    reader = parleyd.dial(name="py-reader")
    client = parleyd.control()
    count = 400
    received: list[int] = []
    reading_error: list[BaseException] = []

    def read_all() -> None:
        try:
            received.extend(read_messages(reader, count, timeout=60))
        except BaseException as error:
            reading_error.append(error)

    reading = threading.Thread(target=read_all, daemon=True)
    reading.start()
    mark = parleyd.mark()
    writer = Writer(client, f"@*/{TYPE}", count)
    try:
        writer.start()
        # The broadcast waits for the stalled peer's full queue, and so does the sender…
        writer.wait_until_stalled(at_least=QUEUE_LIMIT, quiet=1.0, timeout=60)
        # …until that peer is dropped, with the reason and the limits in the log.
        line = parleyd.wait_for_line("disconnecting slow peer", timeout=30, start=mark)
        assert stalled.hello["peerID"] in line, line
        assert reader.hello["peerID"] not in line, line
        assert f"for {SLOW_PEER_TIMEOUT:g} s" in line and f"({QUEUE_LIMIT} bytes)" in line, line
        # The others were held up, not failed: the reader gets every message, in order, and the sender finishes.
        writer.join(60)
        assert not writer.is_alive() and writer.error is None, writer.error
        reading.join(60)
        assert not reading_error, reading_error
        assert received == list(range(count))
        # The dropped peer finds its connection closed without a close frame, after the messages it had queued.
        frames = []
        while True:
            try:
                frames.append(stalled.recv(10))
            except wire.Closed:
                break
        assert frames and all(f.kind == wire.MESSAGE for f in frames), \
            f"expected only messages before the end, got {[hex(f.kind) for f in frames if f.kind != wire.MESSAGE]}"
        reader.assert_alive()
    finally:
        stalled.close()
        reader.close()
        client.close()
