import NIOCore
import NIOEmbedded
import ParleyWire

/// What decoding a whole byte stream produced: the frames (Parley frames, or frame bodies of the original
/// framing), then how it ended.
public struct DecodedStream<Element: Equatable>: Equatable {
    public enum Ending: Equatable {
        /// Every byte belonged to a complete frame.
        case clean
        /// The decoder refused the stream (after `frames`), as `ByteToMessageHandler` would report it.
        case failed(WireError)
    }

    public var frames: [Element] = []
    /// The bytes each frame took on the wire (its `bodySize` counts what it re-encodes to, which differs when a
    /// string field held invalid UTF-8).
    public var wireSizes: [Int] = []
    public var ending = Ending.clean
}

/// Decodes `bytes` the way `ByteToMessageHandler` drives a `FrameDecoder`: the bytes arrive in chunks cut at
/// `splits` (offsets into the stream, in any order, out-of-range ones ignored), the decoder runs after each
/// chunk until it needs more, and `decodeLast` runs at end-of-stream. Checks on the way that a decoder which
/// asks for more bytes has consumed none, as NIO's decoders must not.
public func decodeStream(_ bytes: [UInt8], maximumBodySize: Int, splits: [Int] = []) -> DecodedStream<Frame> {
    decodeStream(bytes, with: FrameDecoder(maximumBodySize: maximumBodySize), splits: splits)
}

/// Decodes `bytes` as a Parley connection does: through a `FrameBatchDecoder` on an EmbeddedChannel, each chunk
/// (cut as for `decodeStream`) one socket read, then the end of the connection. The frames of its batches in
/// order, and how it ended: the error it raised, if any.
public func decodeStreamInBatches(_ bytes: [UInt8], maximumBodySize: Int, splits: [Int] = []) -> DecodedStream<Frame> {
    var result = DecodedStream<Frame>()
    let channel = EmbeddedChannel(handler: FrameBatchDecoder(maximumBodySize: maximumBodySize))
    func collect() {
        while let batch = try! channel.readInbound(as: FrameBatch.self) {
            check(!batch.frames.isEmpty, "an empty batch was passed on")
            result.frames += batch.frames
        }
    }
    do {
        for piece in pieces(of: bytes, cutAt: splits) {
            try channel.writeInbound(ByteBuffer(bytes: piece))
            collect()
        }
        _ = try channel.finish(acceptAlreadyClosed: true)
    } catch let error as WireError {
        collect()
        result.ending = .failed(error)
        // Closed all the same: a channel left open keeps itself and its pipeline alive.
        _ = try? channel.finish(acceptAlreadyClosed: true)
    } catch {
        fatalError("FrameBatchDecoder raised \(type(of: error)), not WireError: \(error)")
    }
    return result
}

/// `bytes` cut at `splits`: offsets into it, in any order; out-of-range and repeated ones are ignored.
func pieces(of bytes: [UInt8], cutAt splits: [Int]) -> [ArraySlice<UInt8>] {
    let cuts = Set(splits.filter { $0 > 0 && $0 < bytes.count }).sorted()
    return zip([0] + cuts, cuts + [bytes.count]).map { bytes[$0..<$1] }
}

/// The same for the original framing (a connection whose first byte is 0xCE): frame bodies.
public func decodeOriginalStream(_ bytes: [UInt8], maximumBodySize: Int, splits: [Int] = []) -> DecodedStream<ByteBuffer> {
    decodeStream(bytes, with: OriginalFrameDecoder(maximumBodySize: maximumBodySize), splits: splits)
}

func decodeStream<Decoder: NIOSingleStepByteToMessageDecoder>(
    _ bytes: [UInt8], with decoder: Decoder, splits: [Int]
) -> DecodedStream<Decoder.InboundOut> where Decoder.InboundOut: Equatable {
    var result = DecodedStream<Decoder.InboundOut>()
    var decoder = decoder
    var buffer = ByteBuffer()
    do {
        for piece in pieces(of: bytes, cutAt: splits) {
            buffer.writeBytes(piece)
            while true {
                let before = buffer.readerIndex
                guard let frame = try decoder.decode(buffer: &buffer) else {
                    check(buffer.readerIndex == before, "decode returned nil after consuming \(buffer.readerIndex - before) bytes")
                    break
                }
                check(buffer.readerIndex > before, "decode returned a frame without consuming bytes")
                result.frames.append(frame)
                result.wireSizes.append(buffer.readerIndex - before)
            }
        }
        while true {
            let before = buffer.readerIndex
            guard let frame = try decoder.decodeLast(buffer: &buffer, seenEOF: true) else { break }
            result.frames.append(frame)
            result.wireSizes.append(buffer.readerIndex - before)
        }
        check(buffer.readableBytes == 0, "decodeLast left \(buffer.readableBytes) bytes without an error")
    } catch let error as WireError {
        result.ending = .failed(error)
    } catch {
        fatalError("\(Decoder.self) threw \(type(of: error)), not WireError: \(error)")
    }
    return result
}

/// A frame that was decoded must encode, and decode back to itself: what Parley reads it can also forward.
/// The one exception is a string field with invalid UTF-8: it decodes with U+FFFD in place of each bad byte,
/// so its encoding grows, and a type name may then pass the 1024-byte limit (decoding that is refused).
public func checkRoundTrip(_ frame: Frame) {
    var encoded = ByteBuffer()
    frame.write(to: &encoded)
    check(encoded.readableBytes == FrameLayout.prefixSize + frame.bodySize, "bodySize disagrees with the encoding of \(frame)")
    let bytes = Array(encoded.readableBytesView)
    let again = decodeStream(bytes, maximumBodySize: Int(UInt32.max))
    if case .message(let message) = frame, message.header.typeName.utf8.count > FrameLayout.maximumTypeNameLength {
        check(again.frames.isEmpty && again.ending != .clean, "an over-long type name re-encoded into a frame that decodes")
        return
    }
    check(again.frames == [frame] && again.ending == .clean, "\(frame) re-decoded as \(again)")
}
