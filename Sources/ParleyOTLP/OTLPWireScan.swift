import Foundation

/// The OTLP messages of a traces or logs export as the protobuf wire format shows them: for each, which fields hold
/// a message (and of which type) and which hold text. Ids, numbers, times and fields this schema does not know are
/// passed over.
enum OTLPWireMessage {
    case traceRequest, logsRequest
    case resourceSpans, resourceLogs, resource, scopeSpans, scopeLogs, scope
    case span, event, link, status, logRecord
    case keyValue, anyValue, arrayValue, keyValueList

    enum Field {
        case message(OTLPWireMessage)
        case text
    }

    init(root signal: OTLPSignal) {
        self = signal == .traces ? .traceRequest : .logsRequest
    }

    /// What field `number` holds (Protos/opentelemetry/proto), or nil for a number, an id or an unknown field.
    func field(_ number: UInt64) -> Field? {
        switch (self, number) {
        case (.traceRequest, 1): .message(.resourceSpans)
        case (.logsRequest, 1): .message(.resourceLogs)
        case (.resourceSpans, 1), (.resourceLogs, 1): .message(.resource)
        case (.resourceSpans, 2): .message(.scopeSpans)
        case (.resourceLogs, 2): .message(.scopeLogs)
        case (.resourceSpans, 3), (.resourceLogs, 3), (.scopeSpans, 3), (.scopeLogs, 3): .text
        case (.resource, 1), (.scope, 3), (.span, 9), (.event, 3), (.link, 4), (.logRecord, 6), (.keyValueList, 1): .message(.keyValue)
        case (.scopeSpans, 1), (.scopeLogs, 1): .message(.scope)
        case (.scopeSpans, 2): .message(.span)
        case (.scopeLogs, 2): .message(.logRecord)
        case (.scope, 1), (.scope, 2): .text
        case (.span, 3), (.span, 5): .text
        case (.span, 11): .message(.event)
        case (.span, 13): .message(.link)
        case (.span, 15): .message(.status)
        case (.event, 2), (.link, 3), (.status, 2): .text
        case (.logRecord, 3), (.logRecord, 12): .text
        case (.logRecord, 5), (.keyValue, 2), (.arrayValue, 1): .message(.anyValue)
        case (.keyValue, 1), (.anyValue, 1): .text
        case (.anyValue, 5): .message(.arrayValue)
        case (.anyValue, 6): .message(.keyValueList)
        default: nil
        }
    }
}

/// Reads an export's protobuf wire format by ``OTLPWireMessage``'s schema without decoding it. Every walk stops at
/// the first thing that is not well-formed protobuf, and at ``OTLPMapping/messageDepthLimit``: what it found then
/// is left to the decoder, which says what is wrong.
struct OTLPWireScan {
    private let bytes: UnsafeRawBufferPointer

    private init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// How many messages (resources, spans, log records, attributes, values…) a protobuf body holds: what decoding
    /// it allocates is about proportional to this, whatever the body's size (an empty attribute is two bytes on the
    /// wire and some eighty once decoded).
    static func messageCount(protobuf body: Data, signal: OTLPSignal) -> Int {
        body.withUnsafeBytes { bytes in
            var count = 0
            _ = OTLPWireScan(bytes).count(0..<bytes.count, as: OTLPWireMessage(root: signal), depth: 1, into: &count)
            return count
        }
    }

    /// The objects in a JSON body: in OTLP's JSON every message is an object, and swift-protobuf refuses `null` in
    /// a list of messages, so this is what decoding allocates for.
    static func messageCount(json body: Data) -> Int {
        var count = 0
        var inString = false
        var escaped = false
        for byte in body {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "{") {
                count += 1
            }
        }
        return count
    }

    /// The body with every text field that is not valid UTF-8 made valid (each bad sequence becomes U+FFFD), and
    /// how many fields were; nil when the body is not well-formed protobuf (the decoder's error stands then).
    static func replacingInvalidUTF8(protobuf body: Data, signal: OTLPSignal) -> (body: Data, fields: Int)? {
        body.withUnsafeBytes { bytes in
            var fields = 0
            guard let rewritten = OTLPWireScan(bytes).rewrite(0..<bytes.count, as: OTLPWireMessage(root: signal), depth: 1, replaced: &fields) else {
                return nil
            }
            return (Data(rewritten), fields)
        }
    }

    // MARK: - The walks

    /// One field's place: its number, wire type, and where its value (for length-delimited fields, its payload) is.
    private struct FieldSpan {
        var number: UInt64
        var wireType: UInt64
        /// The whole field, tag included.
        var whole: Range<Int>
        /// A length-delimited field's payload; empty for the others.
        var payload: Range<Int>
    }

    /// The field at `offset` within `end`, or nil when it is cut short or of a wire type OTLP never uses (groups).
    private func field(at offset: Int, end: Int) -> FieldSpan? {
        var position = offset
        guard let tag = varint(&position, end: end) else { return nil }
        let wireType = tag & 7
        var payload = position..<position
        switch wireType {
        case 0:
            guard varint(&position, end: end) != nil else { return nil }
        case 1:
            guard end - position >= 8 else { return nil }
            position += 8
        case 5:
            guard end - position >= 4 else { return nil }
            position += 4
        case 2:
            guard let length = varint(&position, end: end), length <= UInt64(end - position) else { return nil }
            payload = position..<position + Int(length)
            position += Int(length)
        default:
            return nil
        }
        return FieldSpan(number: tag >> 3, wireType: wireType, whole: offset..<position, payload: payload)
    }

    private func varint(_ position: inout Int, end: Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < end, shift < 64 {
            let byte = bytes[position]
            position += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    /// Adds the messages inside `range` (a `type`) to `count`; false where the walk had to stop.
    private func count(_ range: Range<Int>, as type: OTLPWireMessage, depth: Int, into count: inout Int) -> Bool {
        guard depth <= OTLPMapping.messageDepthLimit else { return false }
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard let field = field(at: offset, end: range.upperBound) else { return false }
            offset = field.whole.upperBound
            if field.wireType == 2, case .message(let inner)? = type.field(field.number) {
                count += 1
                guard self.count(field.payload, as: inner, depth: depth + 1, into: &count) else { return false }
            }
        }
        return true
    }

    /// The message inside `range` (a `type`) written again with its text fields made valid UTF-8, and the lengths
    /// of the messages around them made to match.
    private func rewrite(_ range: Range<Int>, as type: OTLPWireMessage, depth: Int, replaced: inout Int) -> [UInt8]? {
        guard depth <= OTLPMapping.messageDepthLimit else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(range.count)
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard let field = field(at: offset, end: range.upperBound) else { return nil }
            offset = field.whole.upperBound
            let payload: [UInt8]
            switch (field.wireType, type.field(field.number)) {
            case (2, .message(let inner)?):
                guard let rewritten = rewrite(field.payload, as: inner, depth: depth + 1, replaced: &replaced) else { return nil }
                payload = rewritten
            case (2, .text?) where !Self.isValidUTF8(UnsafeRawBufferPointer(rebasing: bytes[field.payload])):
                replaced += 1
                payload = Array(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[field.payload]), as: UTF8.self).utf8)
            default:
                output.append(contentsOf: bytes[field.whole])
                continue
            }
            Self.appendVarint(field.number << 3 | 2, to: &output)
            Self.appendVarint(UInt64(payload.count), to: &output)
            output.append(contentsOf: payload)
        }
        return output
    }

    private static func isValidUTF8(_ text: UnsafeRawBufferPointer) -> Bool {
        String(decoding: text, as: UTF8.self).utf8.elementsEqual(text)
    }

    private static func appendVarint(_ value: UInt64, to output: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            output.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        output.append(UInt8(value))
    }
}
