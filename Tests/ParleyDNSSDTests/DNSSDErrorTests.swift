import ParleyDiscovery
import Testing

@testable import ParleyDNSSD

@Suite("dns_sd.h errors")
struct DNSSDErrorTests {
    @Test func errorsNameTheCallTheCodeAndItsNumber() {
        let error = DNSSDError(-65548, operation: "DNSServiceRegister")
        #expect(error.code == .nameConflict)
        #expect("\(error)" == "DNSServiceRegister failed: the name is already in use (nameConflict, -65548)")
        #expect(DNSSDError(-65563, operation: "x").code == .serviceNotRunning)
        #expect(DNSSDError(-65537, operation: "x").code == .unknown)
        #expect(DNSSDError.Code(rawValue: -1).description == "dns_sd error -1")
        #expect("\(DNSSDError(-1, operation: "DNSServiceBrowse"))" == "DNSServiceBrowse failed: an error dns_sd.h does not name (-1)")
    }

    @Test func codesAreMatchable() {
        let error = DNSSDError(-65570, operation: "DNSServiceBrowse")
        switch error.code {
        case .policyDenied: #expect(error.code.explanation.contains("Local Network"))
        default: Issue.record("-65570 is not policyDenied: \(error.code)")
        }
    }

    @Test func advertisementFailuresSayWhatTheCallerCanDo() {
        func reason(_ code: DNSSDError.Code) -> AdvertisementFailure.Reason {
            AdvertisementFailure(DNSSDError(code: code, operation: "DNSServiceRegister")).reason
        }
        #expect(reason(.nameConflict) == .nameCollision)
        #expect(reason(.badParameter) == .rejected)
        #expect(reason(.policyDenied) == .rejected)
        #expect(reason(.noMemory) == .backendFailure)
        #expect(AdvertisementFailure(DNSSDError(code: .badParameter, operation: "DNSServiceRegister")).detail
            == "DNSServiceRegister failed: a parameter was refused (badParameter, -65540)")
    }
}

@Suite("TXT records as dns_sd.h takes them")
struct TXTRecordDNSSDTests {
    @Test func eachStringFollowsItsLengthInOrder() {
        let record: TXTRecord = ["id": "42", "pv": "1"]
        #expect(record.dnssdBytes == [5] + Array("id=42".utf8) + [4] + Array("pv=1".utf8))
        var flag = TXTRecord()
        flag.setValue(nil, forKey: "debug")
        flag["nm"] = ""
        #expect(flag.dnssdBytes == [5] + Array("debug".utf8) + [3] + Array("nm=".utf8))
    }

    @Test func anEmptyRecordIsOneEmptyString() {
        #expect(TXTRecord().dnssdBytes == [0])
        #expect(TXTRecord(dnssdBytes: [0]).isEmpty)
        #expect(TXTRecord(dnssdBytes: []).isEmpty)
    }

    @Test func recordsReadBackAsWritten() {
        let record = TXTRecord.parley(peerID: "4f0c7a3e", displayName: "Ann's Mac — Küche", requiresSecret: true)
        let read = TXTRecord(dnssdBytes: record.dnssdBytes)
        #expect(read == record)
        #expect(read.keys == ["id", "pv", "nm", "auth"])
    }

    @Test func aLengthPastTheEndTakesWhatIsThere() {
        // A daemon's record is trusted no further: the last string is cut, nothing is read out of bounds.
        let read = TXTRecord(dnssdBytes: [4] + Array("a=1".utf8) + [9] + Array("b=2".utf8))
        #expect(read["a"] == "1\t")
        #expect(read.keys == ["a"])
        #expect(TXTRecord(dnssdBytes: [3] + Array("a=1".utf8) + [200] + Array("b=2".utf8))["b"] == "2")
    }
}
