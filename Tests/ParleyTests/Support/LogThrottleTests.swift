import Logging
import Parley
import ParleyTestSupport
import Testing

@Suite("Throttled warnings")
struct LogThrottleTests {
    @Test("a flood of one warning writes its burst, then one line saying how many were held back; other kinds are unaffected")
    func floodIsCounted() async throws {
        let logs = LogCapture()
        let throttle = LogThrottle(perSecond: 0.001, burst: 3)
        for attempt in 0..<10 {
            throttle.warning("handshake failed; connection closed", metadata: ["attempt": "\(attempt)"], to: logs.logger)
        }
        throttle.warning("protocol error; connection closed", to: logs.logger)

        let written = logs.all.filter { $0.message == "handshake failed; connection closed" }
        #expect(written.map { $0.metadata["attempt"] } == ["0", "1", "2"])
        #expect(logs.all.filter { $0.message == "protocol error; connection closed" }.count == 1)
        #expect(await logs.logged(mentioning: "log lines held back", timeout: .seconds(10)))
        let summaries = logs.records(mentioning: "log lines held back")
        #expect(summaries.count == 1)
        #expect(summaries.first?.metadata["line"] == "handshake failed; connection closed")
        #expect(summaries.first?.metadata["count"] == "7")
    }
}
