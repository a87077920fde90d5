import NIOCore

/// Cuts a body that arrives in pieces into runs of whole lines, looking at each byte once: a piece is searched for
/// its last newline, never the bytes pending before it (they had none). A line longer than `maximumLineBytes`, or a
/// body longer than `maximumBodyBytes`, is refused as soon as it is seen.
struct LineSplitter {
    enum Refusal: Error, Equatable {
        case bodyTooLarge
        case lineTooLong
    }

    let maximumBodyBytes: Int
    let maximumLineBytes: Int
    private var pending = ByteBuffer()
    private(set) var received = 0
    /// Bytes searched for a newline so far: each byte of the body once.
    private(set) var bytesSearched = 0

    init(maximumBodyBytes: Int, maximumLineBytes: Int) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumLineBytes = maximumLineBytes
    }

    /// The whole lines completed by `piece` (each ending with its newline), or nil when it completes none.
    mutating func add(_ piece: ByteBuffer) throws(Refusal) -> ByteBuffer? {
        received += piece.readableBytes
        guard received <= maximumBodyBytes else { throw .bodyTooLarge }
        let pendingBefore = pending.readableBytes
        pending.writeImmutableBuffer(piece)
        bytesSearched += piece.readableBytes
        var lines: ByteBuffer?
        if let lastNewline = piece.readableBytesView.lastIndex(of: UInt8(ascii: "\n")) {
            lines = pending.readSlice(length: pendingBefore + (lastNewline - piece.readerIndex) + 1)
            pending.discardReadBytes()
        }
        guard pending.readableBytes <= maximumLineBytes else { throw .lineTooLong }
        return lines
    }

    /// What is left after the last newline (a last line without one), if anything.
    mutating func rest() -> ByteBuffer? {
        defer { pending.clear() }
        return pending.readableBytes > 0 ? pending : nil
    }
}
