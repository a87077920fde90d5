import Foundation
import HummingbirdTesting
import Testing

@testable import ParleyWeb

@Suite("Trace routes")
struct TraceRoutesTests {
    @Test("recent traces, of one session or of all: id, root name, start and duration in nanoseconds (strings), spans, errors, sessions")
    func list() async throws {
        let web = WebTestServer()
        try await web.test { client in
            try await client.execute(uri: "/api/traces?session=1", method: .get) { response throws in
                let traces = try #require(try WebTestServer.json(response.body)["traces"] as? [[String: Any]])
                #expect(traces.count == 1)
                let trace = try #require(traces.first)
                #expect(trace["traceId"] as? String == FakeBackend.traceID.hex)
                #expect(trace["name"] as? String == "GET /items")
                #expect(trace["startTimeUnixNano"] as? String == "1764000010200000000")
                #expect(trace["durationNanos"] as? String == "600000000")
                #expect(trace["spanCount"] as? Int == 2)
                #expect(trace["errorCount"] as? Int == 1)
                #expect(trace["sessions"] as? [Int] == [1])
            }
            try await client.execute(uri: "/api/traces", method: .get) { response throws in
                #expect((try WebTestServer.json(response.body)["traces"] as? [Any])?.count == 1)
            }
            try await client.execute(uri: "/api/traces?session=2", method: .get) { response throws in
                #expect((try WebTestServer.json(response.body)["traces"] as? [Any])?.isEmpty == true)
            }
            try await client.execute(uri: "/api/traces?session=two", method: .get) { #expect($0.status == .badRequest) }
        }
    }

    @Test("a trace's spans by its id or the start of it; an unknown one is a 404")
    func trace() async throws {
        let web = WebTestServer()
        try await web.test { client in
            for id in [FakeBackend.traceID.hex, "4bf92f35", "4BF92F35"] {
                try await client.execute(uri: "/api/traces/\(id)", method: .get) { response throws in
                    let body = try WebTestServer.json(response.body)
                    #expect(body["traceId"] as? String == FakeBackend.traceID.hex, "\(id)")
                    let spans = try #require(body["spans"] as? [[String: Any]])
                    #expect(spans.compactMap { ($0["span"] as? [String: Any])?["name"] as? String } == ["GET /items", "db.query"])
                }
            }
            try await client.execute(uri: "/api/traces/ffff0000", method: .get) { response throws in
                #expect(try WebTestServer.problem(response) == .init(status: 404, title: "Not found", detail: "no trace"))
            }
        }
    }
}
