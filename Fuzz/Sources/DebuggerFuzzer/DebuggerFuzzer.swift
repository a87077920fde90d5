import FuzzSupport
import NIOCore
import ParleyDebugger
import ParleyJSON

/// Input: a selector byte, then a document. What an app's bytes reach in parleyd's debugger, before any state is
/// stored:
/// - 0: the JSON scanner, two ways: `JSONSkimmer.validate` (what the history checks every state with) and
///   `JSONValue(parsing:)` (what diffs parse with) must agree on whether the document is JSON, and on its kind; a
///   parsed value printed as JSON text parses back to itself;
/// - 1: the original framing's payload (`OriginalDebuggerPayload.record`): a record it returns holds a state the
///   scanner accepts;
/// - 2: the typed record (`StateRecord(decoding:)`): a record it returns encodes back to the same bytes' meaning.
///
/// Properties besides: no crash, no hang (libFuzzer's timeout), errors only of the documented types.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDebugger(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count: count)
    let selector = input.byte() % 3
    let document = ByteBuffer(bytes: input.rest())
    switch selector {
    case 0:
        let skimmed = Result { () throws(JSONError) in try JSONSkimmer.validate(document) }
        let parsed = Result { () throws(JSONError) in try JSONValue(parsing: document) }
        switch (skimmed, parsed) {
        case (.success(let kind), .success(let value)):
            check(kind == value.kind, "the scanner says \(kind), the parser \(value.kind)")
            let text = value.jsonText()
            let again = try? JSONValue(parsing: ByteBuffer(string: text))
            check(again == value, "\(text) does not parse back to the value it was printed from")
        case (.failure(let error), .failure):
            check(error.offset >= 0 && error.offset <= document.readableBytes, "error offset \(error.offset) outside the document")
        case (.success, .failure(let error)):
            check(false, "the scanner accepts what the parser refuses: \(error)")
        case (.failure(let error), .success):
            check(false, "the parser accepts what the scanner refuses: \(error)")
        }
    case 1:
        if let record = try? OriginalDebuggerPayload.record(from: document) {
            check((try? JSONSkimmer.validate(record.state)) != nil, "a record from the original framing holds a state that is not JSON")
        }
    default:
        if let record = try? StateRecord(decoding: document) {
            let again = try? StateRecord(decoding: record.encoded())
            check(again?.action == record.action && again?.state == record.state && again?.screenshot == record.screenshot,
                  "a decoded record does not survive encoding")
        }
    }
    return 0
}

@_cdecl("DebuggerFuzzer_main")
public func debuggerFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzDebugger)
}
