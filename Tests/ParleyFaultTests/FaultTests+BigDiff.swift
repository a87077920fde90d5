import Foundation
import NIOCore
import ParleyTestSupport
import Testing

extension FaultTests {
    /// Heavy work stays off the event loops, so that one slow request stalls no one else: an app records two states of
    /// 15 MB each, then a person asks parleyd to diff them. Every element differs in its bytes (the members are in
    /// another order) but not in value, so the diff visits all of them and finds nothing — seconds of CPU. It runs on
    /// NIO's blocking-work pool; normal peers' round trips through parleyd go on meanwhile (printed: the bystander's
    /// gap is the slowest of them).
    @Test("a diff of two 15 MB states runs off the event loops: normal round trips through parleyd continue while it runs")
    func bigDiff() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd", arguments: ["--diff-max-bytes", String(64 << 20), "--diff-time-limit", "60"])
        let traffic = EchoTraffic(peerCount: 2)
        try await withRunning(traffic.transceivers) {
            try await traffic.connect(to: daemon)
            _ = try await traffic.measure(20)  // warm up

            let count = 750_000
            let old = "[" + (0..<count).map { #"{"a":\#($0),"b":\#($0)}"# }.joined(separator: ",") + "]"
            let new = "[" + (0..<count).map { #"{"b":\#($0),"a":\#($0)}"# }.joined(separator: ",") + "]"
            let app = try await RawConnection.open(port: daemon.port)
            for (action, state) in [("old", old), ("new", new)] {
                let body = Array(#"{"action":"\#(action)","imageData":"","state":"#.utf8) + Array(state.utf8) + Array("}".utf8)
                var frame: [UInt8] = [0xCE]
                withUnsafeBytes(of: UInt32(body.count).littleEndian) { frame += $0 }
                try await app.write(frame + body)
            }
            let listed = try await daemon.ctl(["history", "--json", "--follow", "--limit", "2"], timeout: .seconds(60))
            let sequences = listed.stdout.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["sequence"] as? Int
            }
            #expect(sequences.count == 2, "\(listed)")

            let diff = Task { try await daemon.ctl(["diff", String(sequences.first ?? 0), String(sequences.last ?? 0), "--json"], timeout: .seconds(90)) }
            let (result, during, took) = try await traffic.measure(while: diff)
            report("big diff: two states of \(old.utf8.count >> 20) MiB, \(count) elements each, diffed in \(Latencies.ms(took)) (parleyctl's round trip included)")
            report("big diff: normal round trips while it ran: \(during)")

            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains(#""changes":[]"#), "the states are equal in value: \(result.stdout.prefix(300))")
            #expect(during.count > 0, "no normal round trip completed while the diff ran")
            #expect((during.samples.max() ?? .zero) < .seconds(1), "a bystander waited a second or more")
            app.close()
        }
        #expect(try await daemon.stop() == 0)
    }
}
