import NIOCore
import ParleyJSON
import ParleyWire

/// The JSON body of a frame from an app written for the original Swift Talk remote debugger (the `0xCE` framing
/// itself is the transport's business; this is what follows the length):
///
/// ```json
/// {"state": <any JSON>, "action": "<string>", "imageData": "<base64 PNG>"}
/// ```
///
/// Reading keeps the state's bytes exactly (same key order, same number text, same escapes): the record's `state`
/// is a slice of the body, not a re-encoding, so replaying it gives the app back the very JSON it sent.
///
/// `imageData` may be missing, `null` or `""`: the original app sends no screenshot when it has none, and a state
/// without a picture is still worth keeping, so all three give a record with an empty screenshot (as on the typed
/// protocol, where zero bytes mean "no screenshot"). Any other non-string value, or text that is not base64, is
/// an error. Members other than these three are ignored, so an app that adds its own fields still works.
public enum OriginalDebuggerPayload {
    /// Reads a frame body into a record.
    public static func record(from body: ByteBuffer, depthLimit: Int = JSONLimits.defaultDepth) throws(OriginalDebuggerPayloadError) -> StateRecord {
        let skimmed: [JSONSkimmer.Member]?
        do {
            skimmed = try JSONSkimmer.topLevelMembers(of: body, depthLimit: depthLimit)
        } catch {
            throw .invalidJSON(error)
        }
        guard let members = skimmed else {
            throw .notAnObject((try? JSONSkimmer.validate(body, depthLimit: depthLimit)) ?? .null)
        }

        func member(_ field: Field) throws(OriginalDebuggerPayloadError) -> JSONSkimmer.Member? {
            let matches = members.filter { $0.key == field.rawValue }
            guard matches.count <= 1 else { throw .duplicateField(field) }
            return matches.first
        }

        guard let state = try member(.state) else { throw .missingField(.state) }
        guard let action = try member(.action) else { throw .missingField(.action) }
        guard action.kind == .string else { throw .wrongType(.action, found: action.kind) }
        let image = try member(.imageData)

        let stateBytes = body.getSlice(at: body.readerIndex + state.valueRange.lowerBound, length: state.valueRange.count)!
        let actionText = try stringValue(of: action, field: .action, in: body)
        var screenshot = ByteBuffer()
        if let image {
            switch image.kind {
            case .null: break
            case .string:
                let text = try stringValue(of: image, field: .imageData, in: body)
                do {
                    screenshot = try Base64.decode(text)
                } catch {
                    throw .invalidImageData(error)
                }
            default: throw .wrongType(.imageData, found: image.kind)
            }
        }
        return StateRecord(action: actionText, state: stateBytes, screenshot: screenshot)
    }

    /// The frame body the original app would send for `record`: the state's bytes verbatim, the action as a
    /// JSON string, the screenshot as padded base64 (omitted when empty). The state must be valid JSON.
    public static func body(for record: StateRecord) -> ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(record.state.readableBytes + record.action.utf8.count + record.screenshot.readableBytes * 4 / 3 + 48)
        body.writeString(#"{"state":"#)
        body.writeImmutableBuffer(record.state)
        var action = ""
        JSONValue.writeQuoted(record.action, to: &action)
        body.writeString(#","action":"# + action)
        if record.screenshot.readableBytes > 0 {
            body.writeString(#","imageData":""#)
            Base64.encode(record.screenshot, into: &body)
            body.writeString("\"")
        }
        body.writeString("}")
        return body
    }

    private static func stringValue(of member: JSONSkimmer.Member, field: Field, in body: ByteBuffer) throws(OriginalDebuggerPayloadError) -> String {
        let slice = body.getSlice(at: body.readerIndex + member.valueRange.lowerBound, length: member.valueRange.count)!
        // Validated already; reading a single string cannot fail.
        guard case .string(let text)? = try? JSONValue(parsing: slice) else { throw .wrongType(field, found: member.kind) }
        return text
    }

    /// The members the original debugger's payload has.
    public enum Field: String, Sendable, Hashable, CustomStringConvertible {
        case state, action, imageData

        public var description: String { rawValue }
    }
}

/// Why a frame body from an app in the original framing was not recorded.
public enum OriginalDebuggerPayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The body is not JSON at all (this includes a `state` that is not JSON: the body then is not JSON either).
    case invalidJSON(JSONError)
    /// The body is JSON, but not an object.
    case notAnObject(JSONKind)
    case missingField(OriginalDebuggerPayload.Field)
    case duplicateField(OriginalDebuggerPayload.Field)
    case wrongType(OriginalDebuggerPayload.Field, found: JSONKind)
    case invalidImageData(Base64Error)

    public var description: String {
        switch self {
        case .invalidJSON(let error):
            "the debugger payload is not valid JSON (\(error)); it must be {\"state\": …, \"action\": \"…\", \"imageData\": \"<base64>\"}"
        case .notAnObject(let kind):
            "the debugger payload is a JSON \(kind), not an object {\"state\": …, \"action\": \"…\", \"imageData\": \"<base64>\"}"
        case .missingField(let field):
            "the debugger payload has no \"\(field)\" member"
        case .duplicateField(let field):
            "the debugger payload has \"\(field)\" more than once, so which one counts is unclear"
        case .wrongType(let field, let kind):
            "the debugger payload's \"\(field)\" is a JSON \(kind); it must be \(field == .imageData ? "a base64 string or null" : "a string")"
        case .invalidImageData(let error):
            "the debugger payload's \"imageData\" is \(error)"
        }
    }
}

/// What the original framing means to the debugger: each frame from the app is a state record (the same
/// `parley.debugger.record` message a typed app sends), and a restore goes back to it as a frame whose body is the
/// state's JSON, byte for byte as recorded. parleyd gives this to its transceiver; see ``OriginalFraming``.
public struct OriginalDebuggerTranslator: OriginalFramingTranslator {
    public let depthLimit: Int

    public init(depthLimit: Int = JSONLimits.defaultDepth) {
        self.depthLimit = depthLimit
    }

    public var accepts: [String] { [StateRestore.messageType] }

    public func message(fromFrameBody body: ByteBuffer) throws -> (typeName: String, payload: ByteBuffer) {
        (StateRecord.messageType, try OriginalDebuggerPayload.record(from: body, depthLimit: depthLimit).encoded())
    }

    public func frameBody(forMessage typeName: String, payload: ByteBuffer) -> ByteBuffer? {
        typeName == StateRestore.messageType ? payload : nil
    }
}
