import Parley
import ParleyControl
import Testing

@Suite("The control protocol's error codes")
struct ControlErrorCodeTests {
    @Test("each code has the name docs/protocol.md gives it, and is read back from the wire")
    func names() {
        #expect(ControlErrorCode.noSuchEntry.description == "no-such-entry")
        for code in ControlErrorCode.allCases { #expect(ControlErrorCode(code.errorCode) == code) }
        #expect(ControlErrorCode(.handlerFailed) == nil)
    }
}
