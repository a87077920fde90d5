import NIOCore

extension Frame {
    /// The number of bytes this frame takes on the wire: the 5-byte prefix and the body.
    public var wireSize: Int { FrameLayout.prefixSize + bodySize }

    /// The number of body bytes (after the 5-byte prefix) this frame encodes to.
    public var bodySize: Int {
        switch self {
        case .hello(let hello): 1 + 2 + 2 + hello.body.readableBytes
        case .auth(let body), .sealed(let body): 1 + body.readableBytes
        case .message(let message):
            FrameLayout.messageFixedHeaderSize + message.header.typeName.utf8.count + message.payload.readableBytes
        case .errorReply(let reply): 1 + 8 + 2 + reply.message.utf8.count
        case .ping, .pong: 1 + 8
        case .close(let close): 1 + 2 + close.message.utf8.count
        }
    }

    /// Appends the whole frame (prefix and body) to `buffer`.
    public func write(to buffer: inout ByteBuffer) {
        if case .message(let message) = self {
            message.write(to: &buffer, bodySize: bodySize)
            return
        }
        writePrefixAndHeader(to: &buffer)
        if let payload = trailingPayload {
            var payload = payload
            buffer.writeBuffer(&payload)
        }
    }

    /// Appends everything except the trailing payload, which ``trailingPayload`` returns so that an encoder
    /// can hand large payloads to the socket without copying them.
    public func writePrefixAndHeader(to buffer: inout ByteBuffer) {
        // Each kind's fixed fields in one write: one capacity check instead of one per field.
        let start = StartByte.parley.rawValue
        let size = UInt32(bodySize)
        switch self {
        case .hello(let hello):
            buffer.writeMultipleIntegers(
                start, size, FrameKind.hello.rawValue, hello.minimumVersion, hello.maximumVersion, endianness: .little
            )
        case .auth:
            buffer.writeMultipleIntegers(start, size, FrameKind.auth.rawValue, endianness: .little)
        case .sealed:
            buffer.writeMultipleIntegers(start, size, FrameKind.sealed.rawValue, endianness: .little)
        case .message(let message):
            let header = message.header
            buffer.writeMultipleIntegers(
                start, size, FrameKind.message.rawValue, header.flags.rawValue, header.id.rawValue,
                header.inReplyTo?.rawValue ?? 0, UInt16(header.typeName.utf8.count), endianness: .little
            )
            buffer.writeString(header.typeName)
        case .errorReply(let reply):
            buffer.writeMultipleIntegers(
                start, size, FrameKind.errorReply.rawValue, reply.inReplyTo.rawValue, reply.code.rawValue, endianness: .little
            )
            buffer.writeString(reply.message)
        case .ping(let nonce):
            buffer.writeMultipleIntegers(start, size, FrameKind.ping.rawValue, nonce, endianness: .little)
        case .pong(let nonce):
            buffer.writeMultipleIntegers(start, size, FrameKind.pong.rawValue, nonce, endianness: .little)
        case .close(let close):
            buffer.writeMultipleIntegers(start, size, FrameKind.close.rawValue, close.code.rawValue, endianness: .little)
            buffer.writeString(close.message)
        }
    }

    /// The opaque bytes that end the frame, if it has any.
    public var trailingPayload: ByteBuffer? {
        switch self {
        case .hello(let hello): hello.body
        case .auth(let body), .sealed(let body): body
        case .message(let message): message.payload
        case .errorReply, .ping, .pong, .close: nil
        }
    }
}

extension Frame {
    /// Parses one Parley frame body: exactly the bytes its length announced.
    public static func parse(body: ByteBuffer) throws(WireError) -> Frame {
        var none: String?
        return try parse(body: body, sharingTypeName: &none)
    }

    /// ``parse(body:)`` for a stream: a message whose type name has the same bytes as `typeName` (the last one the
    /// stream's messages had) gets that string rather than a new one, and one with another name leaves its own in
    /// `typeName`. A stream of messages mostly repeats one type, and a name longer than 15 bytes (a routed
    /// `@target/Type`) would otherwise cost an allocation and a UTF-8 check for every message.
    public static func parse(body: ByteBuffer, sharingTypeName typeName: inout String?) throws(WireError) -> Frame {
        var body = body
        guard let kindByte = body.readInteger(as: UInt8.self) else {
            throw .malformedFrame(kind: .message, reason: "empty body")
        }
        guard let kind = FrameKind(rawValue: kindByte) else { throw .unknownFrameKind(kindByte) }
        switch kind {
        case .hello:
            guard let minimum = body.readInteger(endianness: .little, as: UInt16.self),
                let maximum = body.readInteger(endianness: .little, as: UInt16.self)
            else { throw .malformedFrame(kind: kind, reason: "body shorter than the two version fields") }
            return .hello(HelloFrame(minimumVersion: minimum, maximumVersion: maximum, body: body))
        case .auth:
            return .auth(body)
        case .sealed:
            guard body.readableBytes >= FrameLayout.sealedOverhead else {
                throw .malformedFrame(kind: kind, reason: "body shorter than an inner kind byte and the 16-byte tag")
            }
            return .sealed(body)
        case .message:
            // One read for the fixed fields: this runs for every message received.
            guard let (flags, id, replyTo, nameLength) = body.readMultipleIntegers(
                endianness: .little, as: (UInt8, UInt64, UInt64, UInt16).self
            ) else { throw .malformedFrame(kind: kind, reason: "body shorter than the fixed header") }
            guard nameLength > 0, Int(nameLength) <= FrameLayout.maximumTypeNameLength else {
                throw .malformedFrame(kind: kind, reason: "type name length \(nameLength) is outside 1...\(FrameLayout.maximumTypeNameLength)")
            }
            guard id != 0 else { throw .malformedFrame(kind: kind, reason: "message id 0 is reserved") }
            guard body.readableBytes >= Int(nameLength) else {
                throw .malformedFrame(kind: kind, reason: "type name runs past the end of the body")
            }
            let name: String
            if var previous = typeName, Self.bytes(of: body, length: Int(nameLength), equal: &previous) {
                name = previous
                body.moveReaderIndex(forwardBy: Int(nameLength))
            } else {
                name = body.readString(length: Int(nameLength))!
                typeName = name
            }
            let header = MessageHeader(
                typeName: name,
                id: MessageID(id),
                inReplyTo: replyTo == 0 ? nil : MessageID(replyTo),
                flags: MessageFlags(rawValue: flags)
            )
            return .message(MessageFrame(header: header, payload: body))
        case .errorReply:
            guard let replyTo = body.readInteger(endianness: .little, as: UInt64.self),
                let code = body.readInteger(endianness: .little, as: UInt16.self)
            else { throw .malformedFrame(kind: kind, reason: "body shorter than the fixed header") }
            let text = body.readString(length: body.readableBytes) ?? ""
            return .errorReply(ErrorReplyFrame(inReplyTo: MessageID(replyTo), code: ErrorCode(rawValue: code), message: text))
        case .ping, .pong:
            guard let nonce = body.readInteger(endianness: .little, as: UInt64.self), body.readableBytes == 0 else {
                throw .malformedFrame(kind: kind, reason: "body must be exactly 9 bytes")
            }
            return kind == .ping ? .ping(nonce) : .pong(nonce)
        case .close:
            guard let code = body.readInteger(endianness: .little, as: UInt16.self) else {
                throw .malformedFrame(kind: kind, reason: "body shorter than the code field")
            }
            let text = body.readString(length: body.readableBytes) ?? ""
            return .close(CloseFrame(code: ErrorCode(rawValue: code), message: text))
        }
    }
}

extension Frame {
    /// Whether the next `length` readable bytes of `buffer` are `string`'s UTF-8 (which is made contiguous if it is
    /// not: a string decoded from the wire already is).
    private static func bytes(of buffer: ByteBuffer, length: Int, equal string: inout String) -> Bool {
        string.withUTF8 { utf8 in
            utf8.count == length && buffer.withUnsafeReadableBytes { raw in equal(raw, UnsafeRawBufferPointer(utf8), count: length) }
        }
    }

    /// Whether the first `count` bytes of `a` and `b` (both at least that long) are equal; eight at a time (a byte
    /// at a time was half the cost of parsing a message).
    @inline(__always)
    private static func equal(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, count: Int) -> Bool {
        var offset = 0
        while offset + 8 <= count {
            if a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) {
                return false
            }
            offset += 8
        }
        while offset < count {
            if a[offset] != b[offset] { return false }
            offset += 1
        }
        return true
    }
}

extension MessageFrame {
    /// Appends the whole frame in one write: fields, type name and payload copied into the buffer at once. Every
    /// message sent takes this path, and its three separate writes (fields, name, payload) each paid NIO's
    /// capacity and exclusivity checks, a visible share of forwarding small messages (docs/performance.md).
    func write(to buffer: inout ByteBuffer, bodySize: Int) {
        let size = FrameLayout.prefixSize + bodySize
        let header = self.header
        let nameStart = FrameLayout.prefixSize + FrameLayout.messageFixedHeaderSize
        var name = header.typeName
        _ = name.withUTF8 { name in
            payload.withUnsafeReadableBytes { payload in
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
                    out.storeBytes(of: StartByte.parley.rawValue, toByteOffset: 0, as: UInt8.self)
                    out.storeBytes(of: UInt32(bodySize).littleEndian, toByteOffset: 1, as: UInt32.self)
                    out.storeBytes(of: FrameKind.message.rawValue, toByteOffset: 5, as: UInt8.self)
                    out.storeBytes(of: header.flags.rawValue, toByteOffset: 6, as: UInt8.self)
                    out.storeBytes(of: header.id.rawValue.littleEndian, toByteOffset: 7, as: UInt64.self)
                    out.storeBytes(of: (header.inReplyTo?.rawValue ?? 0).littleEndian, toByteOffset: 15, as: UInt64.self)
                    out.storeBytes(of: UInt16(name.count).littleEndian, toByteOffset: 23, as: UInt16.self)
                    UnsafeMutableRawBufferPointer(rebasing: out[nameStart..<(nameStart + name.count)])
                        .copyMemory(from: UnsafeRawBufferPointer(name))
                    UnsafeMutableRawBufferPointer(rebasing: out[(nameStart + name.count)..<size]).copyMemory(from: payload)
                    return size
                }
            }
        }
    }
}
