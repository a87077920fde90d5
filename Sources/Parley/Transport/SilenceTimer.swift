import NIOCore

/// The one deadline mechanism of a connection: the handshake deadline, the heartbeat's silence, the idle timeout
/// and the send queue's stall timeout are each "`timeout` after the last activity". It is judged on the event
/// loop's own clock (`EventLoop.now`, which `EmbeddedEventLoop.advanceTime` moves in tests), with one scheduled
/// task at a time, and only once the loop has polled its sockets after the deadline (``EventLoopPulse``): a loop
/// too busy to read has not seen what the peer sent meanwhile, and the peer is not to blame.
///
/// Activity never touches the timer: `lastActivity` is asked when the timer fires, and the timer re-arms for the
/// new deadline if there was some. A busy connection costs no timer work per message.
///
/// Confined to its event loop: make it, start it and cancel it there.
final class SilenceTimer {
    private let loop: any EventLoop
    private let timeout: TimeAmount
    /// When the watched thing last showed activity; nil ends the watch (there is nothing left to time out).
    private let lastActivity: () -> NIODeadline?
    /// Called once, on the loop, with how long the silence lasted.
    private let expire: (TimeAmount) -> Void
    private var scheduled: Scheduled<Void>?

    init(
        on loop: any EventLoop, timeout: TimeAmount, lastActivity: @escaping () -> NIODeadline?,
        expire: @escaping (TimeAmount) -> Void
    ) {
        self.loop = loop
        self.timeout = timeout
        self.lastActivity = lastActivity
        self.expire = expire
    }

    /// Arms the timer for `timeout` after the current last activity.
    func start() {
        guard scheduled == nil, let last = lastActivity() else { return }
        arm(at: last + timeout)
    }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }

    private func arm(at deadline: NIODeadline) {
        let bound = NIOLoopBound(self, eventLoop: loop)
        scheduled = loop.scheduleTask(deadline: deadline) { bound.value.fire() }
    }

    private func fire() {
        scheduled = nil
        guard let last = lastActivity() else { return }
        let due = last + timeout
        let now = loop.now
        if now < due {
            arm(at: due)
        } else if !EventLoopPulse.of(loop).hasPolled(since: due) {
            arm(at: now + EventLoopPulse.recheckDelay)
        } else {
            expire(now - last)
        }
    }
}
