import Foundation

/// What parleyd's OTLP receiver answered one request: its status line's code, its head and its body.
public struct OTLPAnswer: Sendable, CustomStringConvertible {
    public var status: Int
    public var head: String
    public var body: [UInt8]

    /// The body as text, invalid UTF-8 replaced: a `google.rpc.Status` in protobuf carries its message as plain
    /// UTF-8 bytes, so the words can be looked for in it either way.
    public var text: String { String(decoding: body, as: UTF8.self) }

    public var description: String { "\(status) \(text.prefix(300))" }

    /// Reads an HTTP/1.1 answer; nil while its head or its body (by `Content-Length`) has not all arrived.
    public static func parse(_ bytes: [UInt8]) -> OTLPAnswer? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) }) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        guard let status = head.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let body = Array(bytes[(end + 4)...])
        guard body.count >= length else { return nil }
        return OTLPAnswer(status: status, head: head, body: Array(body.prefix(length)))
    }
}

/// A client of parleyd's OTLP/HTTP receiver that sends what a test wants, byte for byte, over a ``RawConnection``:
/// bodies no OpenTelemetry SDK would send, of any size and content type.
public struct OTLPTestClient: Sendable {
    public let port: Int

    public init(daemon: ParleydProcess) throws {
        guard let endpoint = daemon.ready.otlp, let port = endpoint.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw PeerProcessError("parleyd's readiness line names no OTLP endpoint")
        }
        self.port = port
    }

    /// POSTs `body` to `path` with `Connection: close`, and returns the answer once parleyd has closed the connection.
    public func post(
        _ path: String, contentType: String = "application/x-protobuf", contentEncoding: String? = nil, body: [UInt8],
        timeout: Duration = .seconds(30)
    ) async throws -> OTLPAnswer {
        let connection = try await RawConnection.open(port: port)
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
        if let contentEncoding { head += "Content-Encoding: \(contentEncoding)\r\n" }
        do {
            try await connection.write(Array((head + "\r\n").utf8) + body)
        } catch {
            // parleyd closes the connection of a request it refused while the body was still coming: its answer
            // has come first.
        }
        let (bytes, _) = try await connection.bytes(timeout: timeout)
        guard let answer = OTLPAnswer.parse(bytes) else {
            throw PeerProcessError("no whole HTTP answer to POST \(path) (\(bytes.count) bytes: \(String(decoding: bytes.prefix(200), as: UTF8.self)))")
        }
        return answer
    }

    /// POSTs `text` as JSON.
    public func postJSON(_ path: String, _ text: String) async throws -> OTLPAnswer {
        try await post(path, contentType: "application/json", body: Array(text.utf8))
    }
}

/// Protobuf's wire format written by hand, for OTLP requests with what swift-protobuf would never write: text that is
/// not UTF-8, millions of empty attributes, values nested ten thousand deep. Field numbers as in
/// Protos/opentelemetry/proto.
public enum OTLPWire {
    public static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
        return bytes
    }

    /// A length-delimited field: a message, text or bytes.
    public static func field(_ number: UInt64, _ payload: [UInt8]) -> [UInt8] {
        varint(number << 3 | 2) + varint(UInt64(payload.count)) + payload
    }

    public static func fixed64(_ number: UInt64, _ value: UInt64) -> [UInt8] {
        varint(number << 3 | 1) + withUnsafeBytes(of: value.littleEndian, Array.init)
    }

    /// `KeyValue{key, value: AnyValue{string_value}}`: attribute field `number` of its message.
    public static func attribute(_ number: UInt64, key: [UInt8], value: [UInt8]) -> [UInt8] {
        field(number, field(1, key) + field(2, field(1, value)))
    }

    /// A span with its ids, name, times and already-encoded attributes (`Span.attributes` is field 9).
    public static func span(trace: [UInt8], id: [UInt8], name: [UInt8], start: UInt64 = 1_764_288_000_000_000_000, attributes: [UInt8] = []) -> [UInt8] {
        field(1, trace) + field(2, id) + field(5, name) + fixed64(7, start) + fixed64(8, start + 1_000_000) + attributes
    }

    /// An `ExportTraceServiceRequest` of one resource (`service.name`) and one scope holding `spans` (each already
    /// encoded, without its field tag).
    public static func traces(service: String, spans: [[UInt8]]) -> [UInt8] {
        let resource = field(1, attribute(1, key: Array("service.name".utf8), value: Array(service.utf8)))
        let scope = spans.map { field(2, $0) }.reduce([], +)
        return field(1, resource + field(2, scope))
    }

    /// An `ExportLogsServiceRequest` of one resource (`service.name`) and one scope holding log records with these
    /// bodies.
    public static func logs(service: String, messages: [[UInt8]], time: UInt64 = 1_764_288_000_000_000_000) -> [UInt8] {
        let resource = field(1, attribute(1, key: Array("service.name".utf8), value: Array(service.utf8)))
        let records = messages.map { field(2, fixed64(1, time) + field(5, field(1, $0))) }.reduce([], +)
        return field(1, resource + field(2, records))
    }

    /// 16 and 8 bytes of an id that parleyd prints as `hex`.
    public static func id(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }
}
