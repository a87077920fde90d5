import NIOCore

/// One state change as an app reports it to the debugger: the action that caused it, the whole state as JSON,
/// and a screenshot (PNG, possibly empty).
///
/// On Parley's typed protocol it travels as message type `parley.debugger.record` with a binary payload, so that
/// neither the state nor the screenshot is re-encoded (no base64, no JSON escaping of the state):
///
/// | bytes | field |
/// |---|---|
/// | 4 | action length A, unsigned little-endian |
/// | A | action text, UTF-8 |
/// | 4 | state length S, unsigned little-endian |
/// | S | state, JSON text exactly as the app encoded it |
/// | rest | screenshot, PNG (zero bytes: no screenshot) |
public struct StateRecord: Sendable, Equatable {
    public static let messageType = "parley.debugger.record"

    public var action: String
    /// The state's JSON text, byte for byte as the app sent it; parleyd stores and replays exactly these bytes.
    public var state: ByteBuffer
    /// PNG bytes; empty when the app sent no screenshot.
    public var screenshot: ByteBuffer

    /// The eight bytes every PNG file starts with (PNG specification, 5.2).
    public static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Whether the screenshot starts as a PNG does. parleyd serves screenshots as `image/png`, so it keeps only these.
    public var screenshotIsPNG: Bool {
        screenshot.readableBytesView.starts(with: Self.pngSignature)
    }

    public init(action: String, state: ByteBuffer, screenshot: ByteBuffer = ByteBuffer()) {
        self.action = action
        self.state = state
        self.screenshot = screenshot
    }

    /// The payload of a `parley.debugger.record` message.
    public func encoded(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        let actionBytes = action.utf8.count
        var buffer = allocator.buffer(capacity: 8 + actionBytes + state.readableBytes + screenshot.readableBytes)
        buffer.writeInteger(UInt32(actionBytes), endianness: .little)
        buffer.writeString(action)
        buffer.writeInteger(UInt32(state.readableBytes), endianness: .little)
        buffer.writeImmutableBuffer(state)
        buffer.writeImmutableBuffer(screenshot)
        return buffer
    }

    /// Reads the payload of a `parley.debugger.record` message. The state is not parsed here (see
    /// ``StateRecordError`` for what is checked).
    public init(decoding payload: ByteBuffer) throws(StateRecordError) {
        var payload = payload
        guard let actionLength = payload.readInteger(endianness: .little, as: UInt32.self) else {
            throw .truncated("the action length (4 bytes) is missing")
        }
        guard let actionBytes = payload.readSlice(length: Int(actionLength)) else {
            throw .truncated("the action is \(actionLength) bytes but only \(payload.readableBytes) follow")
        }
        guard let action = actionBytes.getString(at: actionBytes.readerIndex, length: actionBytes.readableBytes),
            action.utf8.elementsEqual(actionBytes.readableBytesView)
        else { throw .actionNotUTF8 }
        guard let stateLength = payload.readInteger(endianness: .little, as: UInt32.self) else {
            throw .truncated("the state length (4 bytes) is missing")
        }
        guard let state = payload.readSlice(length: Int(stateLength)) else {
            throw .truncated("the state is \(stateLength) bytes but only \(payload.readableBytes) follow")
        }
        self.init(action: action, state: state, screenshot: payload)
    }
}

/// What is wrong with a `parley.debugger.record` payload.
public enum StateRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    case truncated(String)
    case actionNotUTF8

    public var description: String {
        switch self {
        case .truncated(let what): "truncated state record: \(what)"
        case .actionNotUTF8: "the action text of a state record is not valid UTF-8"
        }
    }
}

/// parleyd → app: apply this state (time travel). Typed apps get message type `parley.debugger.restore` whose
/// payload is the state's JSON text, byte for byte as it was recorded; apps of the original Swift Talk debugger
/// get the same bytes in a 206 frame.
public enum StateRestore {
    public static let messageType = "parley.debugger.restore"
}
