import NIOCore
import ParleyWire

/// The frames one socket read completed, less the replies resolved on the event loop, handed to the connection's
/// task together: the task wakes and takes from the channel once per read instead of once per frame, which is
/// most of what a small message costs to receive. ``ReplyResolver`` makes them; ``FrameReader`` hands their
/// frames out one at a time.
struct QueuedFrames: Sendable, Equatable {
    var frames: [Frame]
    /// Bytes charged to the connection's memory budget while the batch waits for its handler and while the
    /// handler runs; returned once its last frame has been dealt with (0: nothing charged).
    var charged: Int = 0
}

/// A connection's frames one at a time, as the handshake and the handlers read them, from the batches its
/// channel delivers.
struct FrameReader {
    private let batches: FrameInbox
    private var current = QueuedFrames(frames: [])
    private var position = 0
    private let budget: BudgetTap?

    init(_ batches: FrameInbox, budget: BudgetTap?) {
        self.batches = batches
        self.budget = budget
    }

    /// The next frame; nil when the connection has ended. Asking for it means the previous one has been dealt
    /// with, so a batch's charge is returned when the frame after its last is asked for.
    ///
    /// Inlined where frames are read: a frame of the batch at hand needs no async call (each costs a frame
    /// allocation, and this runs for every frame).
    @inline(__always)
    mutating func next() async throws -> Frame? {
        if position < current.frames.count {
            defer { position += 1 }
            return current.frames[position]
        }
        return try await nextBatch()
    }

    /// The next frame as `take` makes it, if the batch at hand has a next frame and `take` accepts it (returns
    /// non-nil); the frame is consumed only then. For gathering frames that arrived together.
    @inline(__always)
    mutating func nextBuffered<Taken>(_ take: (Frame) -> Taken?) -> Taken? {
        guard position < current.frames.count, let taken = take(current.frames[position]) else { return nil }
        position += 1
        return taken
    }

    private mutating func nextBatch() async throws -> Frame? {
        while position == current.frames.count {
            // Every frame of the batch has been dealt with (and an empty batch is skipped).
            if current.charged > 0 { budget?.release(current.charged) }
            current = QueuedFrames(frames: [])
            position = 0
            guard let batch = try await batches.next() else { return nil }
            current = batch
        }
        defer { position += 1 }
        return current.frames[position]
    }
}

/// One task reads a connection's frames, in order.
@available(*, unavailable)
extension FrameReader: Sendable {}
