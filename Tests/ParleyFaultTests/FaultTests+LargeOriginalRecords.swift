import Foundation
import NIOCore
import ParleyTestSupport
import Testing

extension FaultTests {
    /// Heavy work stays off the event loops for apps in the original framing too: reading the JSON of a
    /// large `0xCE` record (the whole body is scanned, the screenshot decoded, the record re-encoded) takes tens
    /// of milliseconds per megabyte. It runs on the blocking-work pool, so normal peers' round trips through
    /// parleyd go on while an app sends records of about 30 MB (printed: the bystander's gap is the slowest of them).
    @Test("an app sending records of about 30 MB in the original framing does not stall other peers' round trips")
    func largeOriginalRecords() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd")
        let traffic = EchoTraffic(peerCount: 2)
        try await withRunning(traffic.transceivers) {
            try await traffic.connect(to: daemon)
            _ = try await traffic.measure(20)  // warm up

            let records = 3
            let elements = 1_300_000
            let state = "[" + (0..<elements).map { #"{"id":\#($0),"on":true}"# }.joined(separator: ",") + "]"
            let app = try await RawConnection.open(port: daemon.port)
            let sent = Task {
                for index in 0..<records {
                    let body = Array(#"{"action":"big \#(index)","imageData":"","state":"#.utf8) + Array(state.utf8) + Array("}".utf8)
                    var frame: [UInt8] = [0xCE]
                    withUnsafeBytes(of: UInt32(body.count).littleEndian) { frame += $0 }
                    try await app.write(frame + body)
                }
            }
            let recorded = Task {
                try await daemon.ctl(["history", "--json", "--follow", "--limit", String(records)], timeout: .seconds(120))
            }
            let (listed, during, took) = try await traffic.measure(while: recorded)
            try await sent.value
            report("large original records: \(records) × \(state.utf8.count >> 20) MiB recorded in \(Latencies.ms(took))")
            report("large original records: normal round trips meanwhile: \(during)")

            let actions = listed.stdout.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["action"] as? String
            }
            #expect(actions == (0..<records).map { "big \($0)" }, "\(listed)")
            #expect(during.count > 0, "no normal round trip completed while the records arrived")
            #expect((during.samples.max() ?? .zero) < .seconds(1), "a bystander waited a second or more")
            app.close()
        }
        #expect(try await daemon.stop() == 0)
    }
}
