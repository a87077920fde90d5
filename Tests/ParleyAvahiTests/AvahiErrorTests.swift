import Testing

@testable import ParleyAvahi

@Suite("Avahi's errors")
struct AvahiErrorTests {
    @Test func avahiErrorsNameTheFailure() {
        let error = AvahiError(-8, operation: "avahi_entry_group_add_service_strlst")
        #expect(error.code == .collision)
        #expect(error.message == "Local name collision")
        #expect("\(error)" == "avahi_entry_group_add_service_strlst failed: Local name collision (collision, -8)")
        #expect(AvahiError(-26, operation: "x").code == .noDaemon)
        #expect(AvahiError.Code(rawValue: -99).description == "avahi error -99")
    }
}
