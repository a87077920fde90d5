import FuzzSupport
import NIOCore
import ParleyWire

/// Input: a byte choosing the maximum body size, a byte choosing how many split points follow (0–7), the split
/// points (UInt16 LE offsets into the stream), then the byte stream itself.
///
/// Properties: decoding never crashes and throws only `WireError`; the stream decodes to the same frames and the
/// same error whether it arrives whole or in the chosen pieces; a decoder asking for more bytes consumed none;
/// every frame decoded re-encodes to a frame that decodes back to it; `FrameBatchDecoder`, which connections run,
/// gives the same frames and ending as `FrameDecoder` for any cut of the stream into reads. A stream starting with 0xCE is also decoded
/// as the original framing (as the framing sniffer would choose), with the same properties.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count: count)
    let maximums = [0, 1, 9, 64, 1024, FrameLayout.defaultMaximumBodySize]
    let maximum = maximums[Int(input.byte()) % maximums.count]
    let splits = (0..<Int(input.byte() % 8)).map { _ in Int(input.uint16()) }
    let stream = input.rest()

    let whole = decodeStream(stream, maximumBodySize: maximum)
    let pieces = decodeStream(stream, maximumBodySize: maximum, splits: splits)
    check(whole == pieces, "whole stream gave \(whole), pieces at \(splits) gave \(pieces)")
    let oneByteAtATime = decodeStream(stream, maximumBodySize: maximum, splits: Array(0..<min(stream.count, 64)))
    check(whole == oneByteAtATime, "whole stream gave \(whole), byte by byte \(oneByteAtATime)")
    // The decoder a connection runs: the same frames and the same ending, whatever the reads.
    for cuts in [[], splits, Array(0..<min(stream.count, 64))] {
        let batched = decodeStreamInBatches(stream, maximumBodySize: maximum, splits: cuts)
        check(
            batched.frames == whole.frames && batched.ending == whole.ending,
            "whole stream gave \(whole), the batching decoder with reads cut at \(cuts) gave \(batched)"
        )
    }

    for (frame, size) in zip(whole.frames, whole.wireSizes) {
        check(size - FrameLayout.prefixSize <= maximum, "a \(size - FrameLayout.prefixSize)-byte body passed a maximum of \(maximum)")
        checkRoundTrip(frame)
    }
    if case .failed(let error) = whole.ending {
        check(!error.description.isEmpty, "an error without a description")
        _ = error.closeCode
    }
    if stream.first == OriginalFraming.startByte { fuzzOriginalFraming(stream, maximum: maximum, splits: splits) }
    return 0
}

func fuzzOriginalFraming(_ stream: [UInt8], maximum: Int, splits: [Int]) {
    let whole = decodeOriginalStream(stream, maximumBodySize: maximum)
    let pieces = decodeOriginalStream(stream, maximumBodySize: maximum, splits: splits)
    check(whole == pieces, "original framing: whole stream gave \(whole), pieces at \(splits) gave \(pieces)")
    var reencoded = ByteBuffer()
    for body in whole.frames {
        check(body.readableBytes <= maximum, "a \(body.readableBytes)-byte body passed a maximum of \(maximum)")
        OriginalFrameEncoder.write(body, to: &reencoded)
    }
    // The original framing has no fields to normalise: re-encoding gives back exactly the bytes read.
    let consumed = whole.wireSizes.reduce(0, +)
    check(Array(reencoded.readableBytesView) == Array(stream.prefix(consumed)), "original-framing bodies re-encode differently")
}

@_cdecl("FrameFuzzer_main")
public func frameFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzFrames)
}
