import NIOCore
import Synchronization

/// The live streams being written now, so that a stopping server can end them: a stream never ends by itself,
/// and an open one would hold up the server's graceful shutdown.
final class OpenLiveStreams: Sendable {
    private struct State {
        var streams: [Int: AsyncStream<ByteBuffer>.Continuation] = [:]
        var nextID = 0
        var closed = false
    }

    private let state = Mutex(State())

    /// A new stream of the bytes to write to one page; already finished once ``close()`` has been called.
    func open() -> (stream: AsyncStream<ByteBuffer>, continuation: AsyncStream<ByteBuffer>.Continuation) {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        let id: Int? = state.withLock { state in
            guard !state.closed else { return nil }
            defer { state.nextID += 1 }
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return (stream, continuation)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return (stream, continuation)
    }

    /// Ends every stream and every one opened later.
    func close() {
        let streams = state.withLock { state in
            state.closed = true
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }

    var count: Int { state.withLock { $0.streams.count } }
}
