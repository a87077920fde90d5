import Instrumentation
import ParleyTelemetry

/// The span some work runs in, as W3C Trace Context carries it from one process to the next: the trace, the span,
/// the trace flags and the vendors' `tracestate`.
///
/// `ParleyTracer` keeps the current span's context in the task's `ServiceContext` (``ServiceContext/parleyTraceContext``),
/// so that `ParleyLogHandler` tags each log line with the span it was written in, and it writes and reads the
/// `traceparent` and `tracestate` headers with ``traceparent`` and ``init(traceparent:tracestate:)``.
public struct TraceContext: Sendable, Hashable {
    public var traceID: TraceID
    public var spanID: SpanID
    /// W3C `trace-flags`; bit 0 says the caller records this trace (sampled).
    public var flags: UInt8
    /// The `tracestate` header as it arrived, passed on unchanged to the next hop; nil when there was none.
    public var traceState: String?
    /// Read from an incoming request: the span is the caller's, in another process, and is a parent only.
    public var isRemote: Bool

    public static let sampled: UInt8 = 0x01

    public init(traceID: TraceID, spanID: SpanID, flags: UInt8 = TraceContext.sampled, traceState: String? = nil, isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
        self.traceState = traceState
        self.isRemote = isRemote
    }

    /// The `traceparent` header of this span: version 00, the trace id, this span's id as the parent id, the flags.
    public var traceparent: String {
        "00-\(traceID.hex)-\(spanID.hex)-\(flags < 0x10 ? "0" : "")\(String(flags, radix: 16))"
    }

    /// The header names, lower case as HTTP/2 requires (HTTP/1 compares them ignoring case).
    public static let traceparentHeader = "traceparent"
    public static let tracestateHeader = "tracestate"

    /// The most of `tracestate` passed on. W3C lets a hop drop a longer one (it allows 32 members, and asks that
    /// at least 512 characters be kept).
    public static let maximumTraceStateBytes = 512

    /// The context a `traceparent` header names (as a remote parent), or nil when the header is not one: W3C Trace
    /// Context level 1's rules — two lower-case hexadecimal digits of version (not `ff`), 32 of trace id and 16
    /// of parent id (neither all zero), two of flags, separated by `-`; version 00 exactly that long, a later
    /// version possibly followed by `-` and more. Spaces and tabs around it are ignored. `tracestate` is kept
    /// when it is printable ASCII within ``maximumTraceStateBytes``, and dropped otherwise (the trace is not).
    public init?(traceparent: String, tracestate: String? = nil) {
        let bytes = Array(traceparent.utf8.trimmingWhitespace)
        guard bytes.count >= 55, bytes[2] == dash, bytes[35] == dash, bytes[52] == dash,
            let version = hexByte(bytes[0], bytes[1]), version != 0xFF,
            let flags = hexByte(bytes[53], bytes[54])
        else { return nil }
        if version == 0 {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55 {
            guard bytes[55] == dash else { return nil }
        }
        guard bytes[3..<35].allSatisfy(isLowerHex), bytes[36..<52].allSatisfy(isLowerHex),
            let traceID = TraceID(hex: String(decoding: bytes[3..<35], as: UTF8.self)),
            let spanID = SpanID(hex: String(decoding: bytes[36..<52], as: UTF8.self))
        else { return nil }
        self.init(traceID: traceID, spanID: spanID, flags: flags, traceState: Self.keptTraceState(tracestate), isRemote: true)
    }

    private static func keptTraceState(_ header: String?) -> String? {
        guard let header else { return nil }
        let bytes = header.utf8.trimmingWhitespace
        guard !bytes.isEmpty, bytes.count <= maximumTraceStateBytes, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension ServiceContext {
    /// The span this work runs in, as `ParleyTracer` records it; nil outside any span it started or extracted.
    public var parleyTraceContext: TraceContext? {
        get { self[ParleyTraceContextKey.self] }
        set { self[ParleyTraceContextKey.self] = newValue }
    }
}

private enum ParleyTraceContextKey: ServiceContextKey {
    typealias Value = TraceContext
    static var nameOverride: String? { "parley-trace-context" }
}

private let dash = UInt8(ascii: "-")

private func isLowerHex(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
}

private func hexByte(_ high: UInt8, _ low: UInt8) -> UInt8? {
    guard let high = hexValue(high), let low = hexValue(low) else { return nil }
    return high << 4 | low
}

extension String.UTF8View {
    /// The bytes without the spaces and tabs HTTP allows around a header's value.
    fileprivate var trimmingWhitespace: ArraySlice<UInt8> {
        let bytes = ArraySlice(self)
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }) else { return [] }
        return bytes[first...last]
    }
}
