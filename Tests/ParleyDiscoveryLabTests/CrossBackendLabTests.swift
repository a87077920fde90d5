import Foundation
import ParleyTestSupport
import Testing

/// The two discovery backends on one network: what an app on an Apple platform advertises and browses through
/// `dns_sd.h` (here Avahi's compatibility library stands in for mDNSResponder) meets parleyd's Avahi client, both
/// ways, in the two-host lab.
@Suite("dns_sd.h and Avahi backends find each other in a two-host lab", .serialized, .timeLimit(.minutes(2)))
struct CrossBackendLabTests {
    @Test("Each backend finds the other's advertisement with port and TXT, and sees its TXT updates")
    func probesFindEachOther() async throws {
        try await NetnsLab.with { lab in
            let dnssd = try lab.probe(
                .a, LabBackend.dnssd.probeArguments + ["--advertise", "Apple", "--port", "7030", "--txt", "nm=Ann", "--browse", "-"])
            let avahi = try lab.probe(
                .b, LabBackend.avahi.probeArguments + ["--advertise", "Linux", "--port", "7031", "--txt", "nm=Bo", "--browse", "-"])

            let seenByAvahi = try await avahi.waitFor("Apple found by the Avahi backend") {
                $0.event == "found" && $0.service?.name == "Apple"
            }
            #expect(seenByAvahi.service?.port == 7030 && seenByAvahi.service?.txtValue("nm") == "Ann")
            #expect(seenByAvahi.service?.host == "hosta.local")
            let seenByDNSSD = try await dnssd.waitFor("Linux found by the dns_sd.h backend") {
                $0.event == "found" && $0.service?.name == "Linux"
            }
            #expect(seenByDNSSD.service?.port == 7031 && seenByDNSSD.service?.txtValue("nm") == "Bo")
            #expect(seenByDNSSD.service?.host == "hostb.local")
            let addressOfB = try await lab.ipv4(.b)
            try await dnssd.waitFor("Linux with B's IPv4 address") {
                ($0.event == "found" || $0.event == "updated") && $0.service?.name == "Linux"
                    && $0.service?.addresses.contains { $0.host == addressOfB } == true
            }

            // A TXT change alone is an update on the other side, in both directions.
            dnssd.send("txt nm=Ann, renamed")
            try await avahi.waitFor("Apple's new TXT seen by the Avahi backend") {
                $0.event == "updated" && $0.service?.name == "Apple" && $0.service?.txtValue("nm") == "Ann, renamed"
            }
            avahi.send("txt nm=Bo, renamed")
            try await dnssd.waitFor("Linux's new TXT seen by the dns_sd.h backend") {
                $0.event == "updated" && $0.service?.name == "Linux" && $0.service?.txtValue("nm") == "Bo, renamed"
            }
            #expect(!avahi.events.contains { $0.event == "removed" } && !dnssd.events.contains { $0.event == "removed" })

            // Withdrawn on one side, removed on the other.
            let mark = avahi.events.count
            dnssd.send("withdraw")
            try await avahi.waitFor("Apple removed", after: mark) { $0.event == "removed" && $0.name == "Apple" }
            await dnssd.finish()
            await avahi.finish()
        }
    }

    @Test("parleyd (Avahi) finds a peer that advertises through dns_sd.h and connects to it")
    func parleydFindsADNSSDPeer() async throws {
        try await NetnsLab.with { lab in
            // --no-connect: the peer dials nobody, so the connection can only be parleyd's, made from what it found.
            let peer = try lab.spawn(.a, [AutoConnectLabTests.testPeer, "discover", "Alpha", "--no-connect", "--dnssd"])
            _ = try await DaemonLabTests.parleyd(lab, .b)
            let peers = try await DaemonLabTests.waitForPeer(lab, .b, "Alpha", timeout: .seconds(15))
            #expect(peers == ["Alpha"])
            try await peer.waitFor("Alpha connected to parleyd") { $0.event == "connected" && $0.name == "hostb" }
        }
    }

    @Test("An app whose RemoteDebugger discovers through dns_sd.h finds parleyd (Avahi), which records its states")
    func dnssdAppFindsParleyd() async throws {
        try await NetnsLab.with { lab in
            _ = try await DaemonLabTests.parleyd(lab, .a)
            let app = try DaemonLabTests.LabProcess(
                lab, .b, [try DaemonLabTests.binary("parley-test-peer"), "debugger-app", "dnssd-app", "2", "--dnssd"])
            // `history --follow --limit 2` ends as soon as parleyd has recorded the second state.
            let history = try await DaemonLabTests.parleyctl(
                lab, .a, ["history", "--json", "--follow", "--limit", "2", "--socket", DaemonLabTests.socket], timeout: .seconds(40))
            #expect(history.status == 0, "\(history)\napp: \(app.stdout) \(app.stderr)")
            let entries = history.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            // The only app in the lab: these states came from it, found by dns_sd.h.
            #expect(Set(entries.compactMap { $0["action"] as? String }) == ["step.0", "step.1"])
        }
    }
}
