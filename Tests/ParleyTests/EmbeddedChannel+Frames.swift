import NIOEmbedded
import ParleyWire

extension EmbeddedChannel {
    /// Writes `frames` as the frame decoder passes them on: one batch, as from one socket read.
    func writeFrames(_ frames: Frame...) throws {
        try writeInbound(FrameBatch(frames))
    }

    /// The frames passed on so far, in order, whatever batches they came in.
    func readFrames() throws -> [Frame] {
        var frames: [Frame] = []
        while let batch = try readInbound(as: FrameBatch.self) { frames += batch.frames }
        return frames
    }
}

extension NIOAsyncTestingChannel {
    /// Writes `frames` as the frame decoder passes them on: one batch, as from one socket read.
    func writeFrames(_ frames: Frame...) async throws {
        try await writeInbound(FrameBatch(frames))
    }
}
