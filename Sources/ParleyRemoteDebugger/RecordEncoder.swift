import Foundation
import NIOCore
import Parley
import ParleyDebugger

/// Turns one (action text, state, screenshot) into the bytes a transport sends: the binary payload of a
/// `parley.debugger.record` message, or the JSON body of a 206 frame exactly as the original framework wrote it.
/// Owned by the sender task, which encodes one record at a time.
struct RecordEncoder<State: Encodable> {
    let wireProtocol: DebuggerWireProtocol
    private let json = JSONEncoder()

    init(wireProtocol: DebuggerWireProtocol) {
        self.wireProtocol = wireProtocol
    }

    func encode(action: String, state: State, snapshot: Data?) throws(RemoteDebuggerError) -> ByteBuffer {
        do {
            switch wireProtocol {
            case .parley:
                let stateJSON = try json.encode(state)
                return StateRecord(
                    action: action, state: ByteBuffer(bytes: stateJSON), screenshot: ByteBuffer(bytes: snapshot ?? Data())
                ).encoded()
            case .originalFraming:
                // No screenshot is sent as an empty `imageData` rather than leaving the key out: the original
                // debugger decodes all three keys, and an empty PNG means "none" as in the typed record.
                let body = OriginalFramingRecord(state: state, action: action, imageData: snapshot ?? Data())
                return ByteBuffer(bytes: try json.encode(body))
            }
        } catch {
            throw .encodingFailed(PayloadProblem(error))
        }
    }
}

/// The JSON object of the original framing. Keys and their encodings are the original framework's: `Data` as
/// standard base64.
struct OriginalFramingRecord<State: Encodable>: Encodable {
    var state: State
    var action: String
    var imageData: Data
}
