import Foundation
import FuzzSupport
import NIOCore
import ParleyWire

/// Input: a selector byte, then a payload. Selector 0 (modulo the number of kinds + 2): the payload is a hello's
/// JSON body, decoded as `Hello` (Foundation's JSON parser on peer input). Otherwise the payload is the body of a
/// Parley frame of the kind the selector picks (`FrameKind.allCases` in order, then the payload's own first byte),
/// parsed with `Frame.parse`: the same parser opens the inner frame of a sealed frame.
///
/// Properties: no crash; parsing throws only `WireError`; a hello that decodes re-encodes to JSON that decodes to
/// the same hello; a parsed frame round-trips through the encoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayloads(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    var input = FuzzInput(data, count: count)
    let selector = input.byte()
    let payload = input.rest()
    let kinds = FrameKind.allCases.map(\.rawValue)
    let choice = Int(selector) % (kinds.count + 2)
    if choice == 0 {
        guard let hello = try? JSONDecoder().decode(Hello.self, from: Data(payload)) else { return 0 }
        let encoded: Data
        do {
            encoded = try JSONEncoder().encode(hello)
        } catch {
            fatalError("a decoded hello does not encode: \(error)")
        }
        let again = try? JSONDecoder().decode(Hello.self, from: encoded)
        check(again == hello, "hello \(hello) re-decoded as \(String(describing: again))")
        return 0
    }
    // 1…kinds.count pick a known kind; the last choice takes the kind byte from the payload itself, known or not.
    var body = ByteBuffer()
    if choice <= kinds.count { body.writeInteger(kinds[choice - 1]) }
    body.writeBytes(payload)
    do {
        checkRoundTrip(try Frame.parse(body: body))
    } catch {
        check(!error.description.isEmpty, "an error without a description")
    }
    return 0
}

@_cdecl("PayloadFuzzer_main")
public func payloadFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runLibFuzzer(argc, argv, fuzzPayloads)
}
