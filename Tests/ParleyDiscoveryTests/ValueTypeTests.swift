import Testing

@testable import ParleyDiscovery

@Suite("Value types")
struct ValueTypeTests {
    @Test func serviceTypesAreValidated() throws {
        #expect(ServiceType.debug.rawValue == "_debug._tcp")
        #expect(try ServiceType("_Parley-2._UDP").rawValue == "_parley-2._udp")
        for bad in ["debug._tcp", "_debug", "_debug._sctp", "_._tcp", "_-debug._tcp", "_debug-._tcp", "_de--bug._tcp",
            "_123._tcp", "_sixteen-letters1._tcp", "_debug._tcp.local", "_de bug._tcp"]
        {
            #expect(throws: DiscoveryError.invalidServiceType(bad)) { try ServiceType(bad) }
        }
    }

    @Test func subtypesTakeTheFullForm() throws {
        #expect(try ServiceType.debug.subtype("_relay") == "_relay._sub._debug._tcp")
        #expect(try ServiceType.debug.subtype("_relay._sub._debug._tcp") == "_relay._sub._debug._tcp")
        #expect(throws: DiscoveryError.invalidSubtype("relay")) { try ServiceType.debug.subtype("relay") }
        #expect(throws: DiscoveryError.invalidSubtype("_a.b")) { try ServiceType.debug.subtype("_a.b") }
    }

    @Test func txtRecordKeepsOrderAndComparesKeysWithoutCase() {
        var txt: TXTRecord = ["id": "42", "pv": "1", "nm": "Ann"]
        #expect(txt.keys == ["id", "pv", "nm"])
        #expect(txt["ID"] == "42")
        txt["pv"] = "2"
        txt["auth"] = "0"
        #expect(txt.keys == ["id", "pv", "nm", "auth"])
        #expect(txt["pv"] == "2")
        txt["nm"] = nil
        #expect(txt.keys == ["id", "pv", "auth"])
        txt.setValue(nil, forKey: "flag")
        #expect(txt.contains("flag") && txt["flag"] == nil)
        // 1+5 (id=42) + 1+4 (pv=2) + 1+6 (auth=0) + 1+4 (flag)
        #expect(txt.encodedSize == 23)
    }

    @Test func txtRecordFromTheWireFollowsRFC6763() {
        let strings: [[UInt8]] = [Array("id=1".utf8), Array("=nokey".utf8), Array("ID=2".utf8), Array("flag".utf8),
            Array("empty=".utf8), [0x62, 0x3D, 0xFF]]
        let txt = TXTRecord(strings: strings)
        #expect(txt.keys == ["id", "flag", "empty", "b"])
        #expect(txt["id"] == "1")
        #expect(txt["flag"] == nil && txt.contains("flag"))
        #expect(txt["empty"] == "")
        #expect(txt["b"] == nil)
        #expect(txt.value(forKey: "b") == [0xFF])
        #expect(txt.encodedStrings == [Array("id=1".utf8), Array("flag".utf8), Array("empty=".utf8), [0x62, 0x3D, 0xFF]])
    }

    @Test func txtRecordValidation() {
        let parley = TXTRecord.parley(
            peerID: "6F9619FF-8B86-D011-B42D-00CF4FC964FF", displayName: String(repeating: "n", count: 60),
            requiresSecret: true)
        #expect(parley.keys == ["id", "pv", "nm", "auth"])
        #expect(parley.encodedSize < TXTRecord.parleySizeLimit)
        #expect(throws: Never.self) { try parley.validate(maximumSize: TXTRecord.parleySizeLimit) }
        let large: TXTRecord = ["nm": String(repeating: "x", count: 250)]
        #expect(throws: DiscoveryError.txtRecordTooLarge(size: 254, limit: 200)) { try large.validate(maximumSize: 200) }
        let huge: TXTRecord = ["nm": String(repeating: "x", count: 300)]
        #expect(throws: DiscoveryError.txtEntryTooLong(key: "nm", size: 303)) { try huge.validate(maximumSize: 9000) }
        let badKey: TXTRecord = ["k\u{1}": "v"]
        #expect(throws: DiscoveryError.invalidTXTKey("k\u{1}")) { try badKey.validate(maximumSize: 200) }
    }

    @Test func advertisementValidation() throws {
        var ad = Advertisement(instanceName: "Kitchen", subtypes: ["_relay", "_relay"], port: 7000)
        #expect(try ad.validated() == ["_relay._sub._debug._tcp"])
        ad.instanceName = String(repeating: "é", count: 32)  // 64 bytes
        #expect(throws: DiscoveryError.invalidInstanceName(ad.instanceName)) { try ad.validated() }
        #expect(!Advertisement.defaultInstanceName.isEmpty)
        #expect(Advertisement.defaultInstanceName.utf8.count <= 63)
        #expect(Advertisement.truncated("ab€", toUTF8Bytes: 4) == "ab")
    }

    @Test func resolvedAddressesCarryTheirScope() {
        let linkLocal = ResolvedAddress(
            host: "fe80::1", family: .ipv6, interfaceIndex: 3, interfaceName: "eth0", isLinkLocal: true)
        #expect(linkLocal.connectHost == "fe80::1%eth0")
        var unnamed = linkLocal
        unnamed.interfaceName = nil
        #expect(unnamed.connectHost == "fe80::1%3")
        let v4 = ResolvedAddress(host: "10.0.0.1", family: .ipv4, interfaceIndex: 3, interfaceName: "eth0", isLinkLocal: false)
        let v6 = ResolvedAddress(host: "2001:db8::1", family: .ipv6, interfaceIndex: 3, interfaceName: "eth0", isLinkLocal: false)
        let v4LinkLocal = ResolvedAddress(
            host: "169.254.0.1", family: .ipv4, interfaceIndex: 3, interfaceName: "eth0", isLinkLocal: true)
        #expect(v4.connectHost == "10.0.0.1" && v4LinkLocal.connectHost == "169.254.0.1")
        #expect([v4LinkLocal, linkLocal, v6, v4].sorted() == [v4, v6, linkLocal, v4LinkLocal])
    }
}
