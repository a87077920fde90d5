import CompressNIO
import NIOCore

/// gzip inflated into at most a given number of bytes, counted as they come out of zlib in windows of 64 KiB: a
/// small body that inflates to gigabytes (a "gzip bomb") costs the limit and no more. CompressNIO's
/// `decompress(with:maxSize:)` is not used: it grows its output in buffers whose capacity NIO rounds up to a power
/// of two, so what it lets through reaches up to twice its `maxSize`, and it stops at the end of the first gzip
/// member without a word about the rest.
enum BoundedGunzip {
    enum Problem: Error, Equatable {
        /// It inflates past the limit.
        case tooLarge
        /// It is not gzip, or stops before its end.
        case invalid(String)
    }

    static let window = 64 << 10

    /// The inflated bytes of every gzip member in `body` (RFC 1952: a file may hold several, one after the other).
    static func inflate(_ body: ByteBuffer, limit: Int) throws(Problem) -> ByteBuffer {
        var input = body
        var output = ByteBuffer()
        var window = ByteBuffer()
        window.reserveCapacity(Self.window)
        let decompressor: ZlibDecompressor
        do {
            decompressor = try ZlibDecompressor(algorithm: .gzip)
        } catch {
            throw .invalid("zlib could not start: \(error)")
        }
        /// Inflates into `window`, and moves what came out to `output`; whether zlib stopped for want of room.
        func step() throws(Problem) -> Bool {
            window.clear()
            var full = false
            do {
                try decompressor.inflate(from: &input, to: &window)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                full = true
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                throw .invalid("it ends before its end")
            } catch {
                throw .invalid("\(error)")
            }
            guard output.readableBytes + window.readableBytes <= limit else { throw .tooLarge }
            output.writeBuffer(&window)
            return full
        }
        while true {
            if try step() { continue }
            // zlib returned without filling the window: the member ended, or all the input was used (then zlib
            // says which when asked again: finished, or wanting more, which is a body cut short).
            if input.readableBytes == 0 {
                _ = try step()
                return output
            }
            do {
                try decompressor.reset()
            } catch {
                throw .invalid("\(error)")
            }
        }
    }
}
