#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import Synchronization

/// Tells when an event loop last got round to its sockets.
///
/// NIO runs every task queued on a loop before it polls its sockets again, and timers fire in between. So a burst
/// of work — thousands of frames to hand to their handlers, or to write — can keep a loop from reading for
/// seconds while the heartbeat's timer still ticks: it then saw no byte from peers whose bytes were waiting, unread,
/// in our own socket buffers, and dropped healthy connections as silent (found by the 200-peer load test).
///
/// A probe is one byte through a pipe registered on the loop. The byte is read only when the loop polls, so "the
/// probe written at W has been read" proves that the loop went round all its sockets after W: data a peer sent
/// before W has been read by then. The heartbeat, the idle timeout and the send-queue stall timeout act on a
/// deadline only once the loop has polled after it.
///
/// One pulse per event loop, made on first use and kept for the life of the loop (two file descriptors).
final class EventLoopPulse: Sendable {
    private struct State {
        var channel: (any Channel)?
        /// When the probe in flight was written.
        var outstanding: NIODeadline?
        /// When the last probe that has been read was written.
        var confirmed: NIODeadline?
        var failed = false
    }

    private let state = Mutex(State())

    private static let pulses = Mutex<[ObjectIdentifier: EventLoopPulse]>([:])

    /// The pulse of `loop`; the first call sets it up (asynchronously: until then it knows nothing).
    static func of(_ loop: any EventLoop) -> EventLoopPulse {
        let (pulse, isNew) = pulses.withLock { pulses -> (EventLoopPulse, Bool) in
            if let pulse = pulses[ObjectIdentifier(loop)], !pulse.isDead { return (pulse, false) }
            let pulse = EventLoopPulse()
            pulses[ObjectIdentifier(loop)] = pulse
            return (pulse, true)
        }
        if isNew { pulse.start(on: loop) }
        return pulse
    }

    /// Whether the loop has polled its sockets since `instant`, so that anything peers sent before then has been
    /// read. If not known yet, sends a probe, so that asking again a little later (after the next poll) tells.
    /// Without a pulse (a loop that cannot have one) the clock is all there is: true. Call on the loop.
    func hasPolled(since instant: NIODeadline) -> Bool {
        let (known, failed) = state.withLock { ($0.confirmed.map { $0 >= instant } ?? false, $0.failed) }
        if known || failed { return true }
        probe()
        return false
    }

    /// How long after a probe a free loop has certainly polled: the delay before asking again.
    static let recheckDelay = TimeAmount.milliseconds(50)

    /// Sends a probe unless one is already waiting to be read. Call on the loop.
    func probe() {
        let channel = state.withLock { state -> (any Channel)? in
            guard let channel = state.channel, state.outstanding == nil else { return nil }
            state.outstanding = .now()
            return channel
        }
        guard let channel else { return }
        channel.writeAndFlush(channel.allocator.buffer(integer: UInt8(1)), promise: nil)
    }

    private var isDead: Bool { state.withLock { $0.failed || ($0.channel.map { !$0.isActive } ?? false) } }

    private func start(on loop: any EventLoop) {
        var fds: [CInt] = [-1, -1]
        // Only loops that poll sockets can have a pulse (an EmbeddedEventLoop cannot); without one, callers fall
        // back to the time as it is.
        guard let bootstrap = NIOPipeBootstrap(validatingGroup: loop), pipe(&fds) == 0 else {
            state.withLock { $0.failed = true }
            return
        }
        let (input, output) = (fds[0], fds[1])
        bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Reader(self)) }
            }
            .takingOwnershipOfDescriptors(input: input, output: output)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.state.withLock { $0.channel = channel }
                case .failure:
                    close(input)
                    close(output)
                    self.state.withLock { $0.failed = true }
                }
            }
    }

    private func probeRead() {
        state.withLock { state in
            if let written = state.outstanding { state.confirmed = written }
            state.outstanding = nil
        }
    }

    private final class Reader: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let pulse: EventLoopPulse
        init(_ pulse: EventLoopPulse) { self.pulse = pulse }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { pulse.probeRead() }
    }
}
