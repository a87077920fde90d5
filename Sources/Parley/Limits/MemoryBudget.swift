import Logging
import NIOCore
import ParleyWire
import Synchronization

/// One budget for the bytes a node holds on behalf of its peers: frames still arriving (charged as their bytes
/// arrive, never from the length a frame announces) and messages queued towards peers. When a charge would go
/// over it, the connections holding the most are closed first, with a logged reason, until the charge fits; the
/// connection charging may be among them. A peer that sends small messages its handlers keep up with holds a few
/// kilobytes and is never the largest.
///
/// Charges and releases that fit take no lock: every queued message is charged on the sending event loop and
/// returned on the connection's, and a shared lock there was contended on every message (docs/performance.md).
/// Only a charge that goes over the capacity takes the lock, to choose and close the largest holders.
final class MemoryBudget: Sendable {
    let capacity: Int
    private let logger: Logger
    private let logThrottle: LogThrottle
    private let counters: StatisticsCounters

    /// The sum of what the open accounts hold. Each change to an account's holding is followed by the same change
    /// here, so the two can be seen apart only for a moment, and the sum is exact once no charge is in flight.
    private let usedBytes = Atomic<Int>(0)
    /// The open accounts, to rank when the budget is full.
    private let accounts = Mutex<[ObjectIdentifier: BudgetAccount]>([:])

    init(capacity: Int, logger: Logger, logThrottle: LogThrottle, counters: StatisticsCounters) {
        self.capacity = capacity
        self.logger = logger
        self.logThrottle = logThrottle
        self.counters = counters
    }

    /// Bytes held now, over all connections.
    var used: Int { usedBytes.load(ordering: .relaxed) }

    /// An account for one connection; everything it holds is returned when the channel closes.
    func openAccount(for channel: any Channel) -> BudgetAccount {
        let account = BudgetAccount(channel: channel)
        accounts.withLock { $0[ObjectIdentifier(account)] = account }
        channel.closeFuture.whenComplete { _ in self.close(account) }
        return account
    }

    /// Charges `bytes` to `account`. Returns false when the charge cannot be kept: the account is closed (now,
    /// as one of the largest holders, or before); the caller drops what it was about to hold.
    func charge(_ bytes: Int, to account: BudgetAccount) -> Bool {
        guard bytes > 0 else { return true }
        guard account.charge(bytes) else { return false }
        if usedBytes.add(bytes, ordering: .relaxed).newValue <= capacity { return true }
        return makeRoom(charging: account)
    }

    /// The budget went over its capacity with `account`'s charge (already counted, in the account and the sum):
    /// closes the largest holders, the charging account counting with that charge, until the sum fits again.
    /// Charges made meanwhile on other loops that also went over each come here after this one.
    private func makeRoom(charging account: BudgetAccount) -> Bool {
        let evicted = accounts.withLock { accounts -> [(BudgetAccount, Int)] in
            var evicted: [(BudgetAccount, Int)] = []
            guard usedBytes.load(ordering: .relaxed) > capacity else { return evicted }
            // Each holding read once: they change while this runs, and a sort needs values that hold still.
            let ranked = accounts.values.map { ($0, $0.held) }.sorted { $0.1 > $1.1 }
            for (candidate, _) in ranked where usedBytes.load(ordering: .relaxed) > capacity {
                accounts[ObjectIdentifier(candidate)] = nil
                if let held = candidate.close() {
                    usedBytes.subtract(held, ordering: .relaxed)
                    evicted.append((candidate, held))
                }
                if candidate === account { break }
            }
            return evicted
        }
        for (victim, held) in evicted { evict(victim, held: held) }
        return account.isOpen
    }

    /// Returns `bytes` that `account` no longer holds.
    func release(_ bytes: Int, from account: BudgetAccount) {
        guard bytes > 0 else { return }
        let returned = account.release(bytes)
        if returned > 0 { usedBytes.subtract(returned, ordering: .relaxed) }
    }

    private func close(_ account: BudgetAccount) {
        account.ending = nil
        // Under the lock: an over-capacity charge ranking the accounts meanwhile must not count bytes it can no
        // longer find a holder for, and close others in their place.
        accounts.withLock { accounts in
            accounts.removeValue(forKey: ObjectIdentifier(account))
            if let held = account.close() { usedBytes.subtract(held, ordering: .relaxed) }
        }
    }

    private func evict(_ account: BudgetAccount, held: Int) {
        counters.budgetEvictions.add(1, ordering: .relaxed)
        let error = ConnectionLimitExceeded.memoryBudget(held: held, capacity: capacity)
        logThrottle.warning(
            "memory budget full: closing the connection that holds the most",
            metadata: [
                "remote": "\(account.channel.remoteAddress.map(PeerConnection.describe) ?? "local")",
                "held-bytes": "\(held)", "limit": "\(error.limit)",
            ],
            to: logger
        )
        if let ending = account.ending {
            account.ending = nil  // it holds the connection, which holds the account
            ending(error)
        } else {
            // A channel without a connection's ending (tests): the pipeline hears of it, and it closes in a second.
            let channel = account.channel
            channel.pipeline.fireErrorCaught(error)
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
    }
}

/// A connection's place in the budget: the account, and how much of it is a frame still arriving (shared by the
/// two inbound handlers, so only touched on the connection's event loop).
struct BudgetTap: Sendable {
    let budget: MemoryBudget
    let account: BudgetAccount
    let progress: NIOLoopBound<InboundProgress>

    init(budget: MemoryBudget, channel: any Channel) {
        self.budget = budget
        self.account = budget.openAccount(for: channel)
        self.progress = NIOLoopBound(InboundProgress(), eventLoop: channel.eventLoop)
    }
}

extension BudgetTap {
    /// Frames waiting for their handler are charged from this size on, a socket read's worth together
    /// (``ReplyResolver`` charges ``QueuedFrames`` as they join the handlers' queue, ``FrameReader`` returns the
    /// charge once their last frame has been dealt with). Fewer bytes are bounded by count instead: at most 4 wait
    /// per connection, beside the one being read and the one being gathered: about 20 KiB a connection outside
    /// the budget.
    static let queuedFrameMinimum = 4096

    /// Returns `bytes` a batch of frames held while it waited and was handled.
    func release(_ bytes: Int) {
        budget.release(bytes, from: account)
    }
}

/// Bytes read and not yet part of a decoded frame: the frame in progress.
final class InboundProgress {
    var partial = 0
}

/// What one connection holds of the ``MemoryBudget``, and whether it is still open, in one atomic value: a charge
/// or release and the account's closing never interleave, so bytes are never added to an account after it was
/// closed and its holding subtracted from the budget.
final class BudgetAccount: Sendable {
    let channel: any Channel
    /// Open: the bytes held (≥ 0). Closed: `-1 - held`, the bytes it held when it closed (for the error that says
    /// why), no longer counted in the budget.
    private let state = Atomic<Int>(0)
    private let endingBox = Mutex<(@Sendable (ConnectionLimitExceeded) -> Void)?>(nil)

    init(channel: any Channel) { self.channel = channel }

    /// How the connection ends when the budget closes it (set once its connection exists): say why, then close.
    var ending: (@Sendable (ConnectionLimitExceeded) -> Void)? {
        get { endingBox.withLock { $0 } }
        set { endingBox.withLock { $0 = newValue } }
    }

    /// The bytes held now; once closed, those it held when it closed.
    var held: Int {
        let value = state.load(ordering: .relaxed)
        return value >= 0 ? value : -1 - value
    }

    var isOpen: Bool { state.load(ordering: .relaxed) >= 0 }

    /// Adds `bytes` if the account is open; false if it is closed.
    fileprivate func charge(_ bytes: Int) -> Bool {
        update { $0 >= 0 ? $0 + bytes : nil } != nil
    }

    /// Takes back up to `bytes` (never below zero); the bytes taken back, none once closed.
    fileprivate func release(_ bytes: Int) -> Int {
        guard let before = update({ $0 >= 0 ? $0 - min(bytes, $0) : nil }) else { return 0 }
        return min(bytes, before)
    }

    /// Closes the account; the bytes it held, or nil if it was closed already.
    fileprivate func close() -> Int? {
        update { $0 >= 0 ? -1 - $0 : nil }
    }

    /// Applies `change` atomically; the value it was applied to, or nil where `change` declined (nil).
    private func update(_ change: (Int) -> Int?) -> Int? {
        var current = state.load(ordering: .relaxed)
        while let next = change(current) {
            let (done, seen) = state.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if done { return current }
            current = seen
        }
        return nil
    }
}

/// Charges each read to the connection's budget account before the framing decoder holds it, and watches the
/// frame in progress: when a frame is incomplete and no byte of it arrives for `stallTimeout` (by the connection's
/// ``ReadActivity``, which the next handler updates on every read), the connection is closed (a slow-frame attack
/// holds memory for as long as it is allowed to).
final class InboundBudgetHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let tap: BudgetTap
    private let activity: ReadActivity
    private let stallTimeout: TimeAmount?
    private var stall: SilenceTimer?

    init(tap: BudgetTap, activity: ReadActivity, stallTimeout: TimeAmount?) {
        self.tap = tap
        self.activity = activity
        self.stallTimeout = stallTimeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = unwrapInboundIn(data).readableBytes
        guard tap.budget.charge(count, to: tap.account) else {
            return  // evicted: the error is on its way; what was read is dropped, not held
        }
        tap.progress.value.partial += count
        context.fireChannelRead(data)
        watchStall(context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stall?.cancel()
        stall = nil
    }

    /// A timer runs while the decoder holds part of a frame (the account holds bytes); it ends by itself when
    /// nothing is held, and starts again with the next partial frame.
    private func watchStall(context: ChannelHandlerContext) {
        guard stall == nil, let timeout = stallTimeout, tap.progress.value.partial > 0 else { return }
        let progress = tap.progress
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        stall = SilenceTimer(on: context.eventLoop, timeout: timeout, lastActivity: {
            let (handler, _) = loopBound.value
            guard progress.value.partial > 0 else {
                handler.stall = nil
                return nil
            }
            return handler.activity.lastRead
        }) { _ in
            let (handler, context) = loopBound.value
            handler.stall = nil
            context.fireErrorCaught(ConnectionLimitExceeded.stalledFrame(timeout: .nanoseconds(timeout.nanoseconds)))
        }
        stall?.start()
    }
}

/// Returns a frame's bytes to the budget once the decoder has completed it: from here on it is a complete frame,
/// which ``ReplyResolver`` charges again, with the rest of its read's frames, if it goes on to wait for a handler.
/// One plain class per framing with this protocol's behaviour, rather than one generic class: NIO calls a handler
/// through its protocol, and the generic class looked up its type's metadata for every frame.
protocol DecodedBudgetCredit: ChannelInboundHandler where InboundOut == InboundIn {
    var decoded: DecodedBytes { get set }
    /// The bytes `decoded` (a batch of frames, or one frame body) took on the wire.
    static func wireSize(of decoded: InboundIn) -> Int
}

extension DecodedBudgetCredit {
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        decoded.add(Self.wireSize(of: unwrapInboundIn(data)))
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        decoded.settle()
        context.fireChannelReadComplete()
    }
}

final class DecodedBudgetHandler: DecodedBudgetCredit {
    typealias InboundIn = FrameBatch
    typealias InboundOut = FrameBatch
    var decoded: DecodedBytes
    init(tap: BudgetTap) { decoded = DecodedBytes(tap: tap) }
    static func wireSize(of batch: FrameBatch) -> Int { batch.frames.reduce(0) { $0 + $1.wireSize } }
}

/// ``DecodedBudgetHandler`` for frame bodies in the original debugger framing.
final class DecodedOriginalBudgetHandler: DecodedBudgetCredit {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    var decoded: DecodedBytes
    init(tap: BudgetTap) { decoded = DecodedBytes(tap: tap) }
    static func wireSize(of body: ByteBuffer) -> Int { FrameLayout.prefixSize + body.readableBytes }
}

/// The bytes of frames a decoder completed, no longer a frame in progress.
struct DecodedBytes {
    private let tap: BudgetTap
    /// Bytes of small frames (or small batches of them) completed during this read, returned to the budget together
    /// when the read completes: one lock of the shared budget per socket read, not one per small message.
    private var completed = 0

    init(tap: BudgetTap) { self.tap = tap }

    mutating func add(_ size: Int) {
        let progress = tap.progress.value
        progress.partial = max(0, progress.partial - size)
        if size >= BudgetTap.queuedFrameMinimum {
            // At once: the rest of this read is charged as it arrives, and must not find this frame still held.
            tap.budget.release(size, from: tap.account)
        } else {
            completed += size
        }
    }

    mutating func settle() {
        guard completed > 0 else { return }
        tap.budget.release(completed, from: tap.account)
        completed = 0
    }
}
