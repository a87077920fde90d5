import Foundation
import ParleyDebugger
import ParleyTelemetry
import ParleyTestSupport
import Testing

/// parleyd's OTLP/HTTP receiver against bodies meant to hurt it, each answered with its OTLP status and said in the
/// log, parleyd's resident memory at its peak within ``otlpMemoryBudget`` throughout, and a session stored before
/// the attack whole afterwards. With the load tests: decoding the costly ones takes seconds of a core in a debug build.
extension FaultTests {
    /// What parleyd may hold at its peak (VmHWM) while refusing every attack here: a fresh one holds 45 – 55 MiB;
    /// an export counts its messages before decoding them (500 000 at most, about 40 MiB decoded) and holds its
    /// body (16 MiB at most) twice while it does: 200 MiB leaves room for both and for a debug build's heap.
    static let otlpMemoryBudget = 200 << 20

    /// A session stored before the attacks: one trace of three nested spans and two log records from the
    /// service `before-attack`, and the way to check that it is all still there.
    struct StoredBeforeAttack {
        static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"

        static func store(through client: OTLPTestClient) async throws {
            let spans = """
                {"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"before-attack"}}]},
                  "scopeSpans":[{"scope":{"name":"shop"},"spans":[
                    {"traceId":"\(trace)","spanId":"00f067aa0ba902b7","name":"POST /checkout","kind":2,
                     "startTimeUnixNano":"1764288000000000000","endTimeUnixNano":"1764288000300000000"},
                    {"traceId":"\(trace)","spanId":"00f067aa0ba902b8","parentSpanId":"00f067aa0ba902b7","name":"reserve stock",
                     "startTimeUnixNano":"1764288000010000000","endTimeUnixNano":"1764288000200000000"},
                    {"traceId":"\(trace)","spanId":"00f067aa0ba902b9","parentSpanId":"00f067aa0ba902b8","name":"SELECT stock","kind":3,
                     "startTimeUnixNano":"1764288000020000000","endTimeUnixNano":"1764288000100000000"}]}]}]}
                """
            let logs = """
                {"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"before-attack"}}]},
                  "scopeLogs":[{"scope":{"name":"shop.checkout"},"logRecords":[
                    {"timeUnixNano":"1764288000015000000","severityNumber":9,"body":{"stringValue":"checkout started"},"traceId":"\(trace)"},
                    {"timeUnixNano":"1764288000150000000","severityNumber":17,"body":{"stringValue":"payment declined"}}]}]}]}
                """
            let traced = try await client.postJSON("/v1/traces", spans)
            let logged = try await client.postJSON("/v1/logs", logs)
            #expect(traced.status == 200 && logged.status == 200, "\(traced); \(logged)")
        }

        /// Its session, trace and records, as stored.
        static func expectWhole(in daemon: ParleydProcess) async throws {
            let watcher = try await TelemetryWatcher.start(on: daemon)
            defer { Task { await watcher.transceiver.stop() } }
            let sessions = try await watcher.ask(DebuggerControl.Sessions(), DebuggerControl.SessionList.self).sessions
            let session = try #require(sessions.first { $0.appName == "before-attack" })
            #expect(session.spanCount == 3 && session.logCount == 2)
            let spans = try await watcher.ask(TelemetryControl.Trace(traceID: trace), TelemetryControl.TraceDetail.self).spans
            #expect(spans.map(\.span.name) == ["POST /checkout", "reserve stock", "SELECT stock"])
            #expect(spans.map { $0.span.parentSpanID?.hex } == [nil, "00f067aa0ba902b7", "00f067aa0ba902b8"])
            let logs = try await watcher.logs(LogQuery(app: "before-attack"))
            #expect(logs.map(\.record.message) == ["checkout started", "payment declined"])
        }
    }

    /// The `count`th "OTLP export refused" line, which must say `status` and `reason`.
    static func refusalLine(in daemon: ParleydProcess, count: Int, status: Int, reason: String) async throws {
        let line = try await daemon.logLine(containing: "OTLP export refused", count: count)
        #expect(line.contains("status=\(status)") && line.contains(reason) && line.contains("client=127.0.0.1"), "\(line)")
    }

    static func expectWithinBudget(_ daemon: ParleydProcess, after what: String) throws {
        let memory = try daemon.memory()
        report("OTLP, after \(what): parleyd \(memory)")
        #expect(memory.peakResident <= otlpMemoryBudget, "parleyd's peak \(memory) is over \(ProcessMemory.mebibytes(otlpMemoryBudget))")
    }

    @Test("a gigabyte streamed, a gzip bomb and ten million attributes are 413, refused early, in bounded memory")
    func otlpHugeBodies() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd")
        let client = try OTLPTestClient(daemon: daemon)
        try await StoredBeforeAttack.store(through: client)

        // A gigabyte, chunked, made as it is sent: parleyd answers once it has 16 MiB and closes the connection after
        // at most 1 MiB more, instead of reading the rest to find the next request.
        let connection = try await RawConnection.open(port: client.port)
        try await connection.write(Array(
            "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        let mebibyte = 1 << 20
        let chunk = Array("\(String(mebibyte, radix: 16))\r\n".utf8) + [UInt8](repeating: 0x0A, count: mebibyte) + Array("\r\n".utf8)
        var sent = 0
        while sent < 1 << 30, connection.bytes.isEmpty, !connection.isClosed {
            do {
                try await connection.write(chunk)
            } catch {
                break  // reset: parleyd has closed it
            }
            sent += mebibyte
        }
        let (bytes, closed) = try await connection.bytes(timeout: .seconds(10))
        let streamed = try #require(OTLPAnswer.parse(bytes), "answer: \(String(decoding: bytes.prefix(300), as: UTF8.self))")
        report("OTLP, a gigabyte chunked: \(streamed.status) after \(sent >> 20) MiB sent; closed: \(closed)")
        #expect(streamed.status == 413 && streamed.text.contains("at most 16 MiB"))
        #expect(streamed.head.lowercased().contains("connection: close"))
        #expect(closed && sent < 64 << 20, "parleyd read \(sent >> 20) MiB of a body it had refused")
        try await Self.refusalLine(in: daemon, count: 1, status: 413, reason: "at most 16 MiB")
        try Self.expectWithinBudget(daemon, after: "a gigabyte chunked")

        // A gzip bomb: 60 gzip members of 17 MiB of zeros each, 1 020 MiB once inflated, sent in 1 MiB.
        let member = daemon.directory.file("zeros.gz")
        let made = try await ChildProcess.run("/bin/sh", ["-c", "head -c \(17 << 20) /dev/zero | gzip -9 > '\(member)'"])
        #expect(made.status == 0, "\(made.stderr)")
        let zeros = [UInt8](try Data(contentsOf: URL(fileURLWithPath: member)))
        let bomb = Array(repeatElement(zeros, count: 60).joined())
        #expect(bomb.count < 2 << 20)
        let inflated = try await client.post("/v1/traces", contentEncoding: "gzip", body: bomb)
        #expect(inflated.status == 413 && inflated.text.contains("inflates past 16 MiB"), "\(inflated)")
        try await Self.refusalLine(in: daemon, count: 2, status: 413, reason: "inflates past 16 MiB")
        try Self.expectWithinBudget(daemon, after: "a gzip bomb")

        // Ten million attributes (an empty one is two bytes: field 9, length 0) do not fit in 16 MiB: 413 by
        // Content-Length, before a byte of it is read.
        let trace = OTLPWire.id("0af7651916cd43dd8448eb211c80319c")
        let span = OTLPWire.id("b7ad6b7169203331")
        func manyAttributes(_ count: Int) -> [UInt8] {
            var attributes = [UInt8](repeating: 0, count: 2 * count)
            for index in stride(from: 0, to: attributes.count, by: 2) { attributes[index] = 9 << 3 | 2 }
            return OTLPWire.traces(service: "many-attributes", spans: [OTLPWire.span(trace: trace, id: span, name: Array("many".utf8), attributes: attributes)])
        }
        let tenMillion = try await client.post("/v1/traces", body: manyAttributes(10_000_000))
        #expect(tenMillion.status == 413 && tenMillion.text.contains("at most 16 MiB"), "\(tenMillion)")
        try await Self.refusalLine(in: daemon, count: 3, status: 413, reason: "at most 16 MiB")

        // Eight million fit in 16 MiB, and would take 640 MiB decoded: refused by their count before decoding.
        let eightMillion = try await client.post("/v1/traces", body: manyAttributes(8_000_000))
        #expect(eightMillion.status == 413 && eightMillion.text.contains("holds 8000006 messages"), "\(eightMillion)")
        try await Self.refusalLine(in: daemon, count: 4, status: 413, reason: "more than the 500000 parleyd decodes at once")
        try Self.expectWithinBudget(daemon, after: "ten and eight million attributes")

        try await StoredBeforeAttack.expectWhole(in: daemon)
        let after = try await client.post("/v1/logs", body: OTLPWire.logs(service: "after-attack", messages: [Array("still heard".utf8)]))
        #expect(after.status == 200, "\(after)")
        #expect(try await daemon.stop() == 0)
    }

    @Test("truncated, mistyped, 10 000 deep and 200 000-attribute exports: 400, 415, 400 and stored cut, in bounded memory")
    func otlpCostlyBodies() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd")
        let client = try OTLPTestClient(daemon: daemon)
        try await StoredBeforeAttack.store(through: client)
        let trace = OTLPWire.id("5b8efff798038103d269b633813fc60c")
        let span = OTLPWire.id("eee19b7ec3c1b174")

        let whole = OTLPWire.traces(service: "truncated", spans: [OTLPWire.span(trace: trace, id: span, name: Array("GET /".utf8))])
        let truncated = try await client.post("/v1/traces", body: Array(whole.dropLast(5)))
        #expect(truncated.status == 400 && truncated.text.contains("ends in the middle of a field"), "\(truncated)")
        try await Self.refusalLine(in: daemon, count: 1, status: 400, reason: "ends in the middle of a field")

        let plain = try await client.post("/v1/logs", contentType: "text/plain", body: Array("hello".utf8))
        #expect(plain.status == 415 && plain.text.contains("application/x-protobuf"), "\(plain)")
        try await Self.refusalLine(in: daemon, count: 2, status: 415, reason: "text/plain")

        // An attribute value nested 10 000 deep (AnyValue → KeyValueList → KeyValue → AnyValue …): refused at the
        // decoder's depth of 64, in protobuf and in JSON, with no stack overflow.
        var value = OTLPWire.field(1, Array("bottom".utf8))
        for _ in 0..<10_000 { value = OTLPWire.field(6, OTLPWire.field(1, OTLPWire.field(1, Array("k".utf8)) + OTLPWire.field(2, value))) }
        let deep = OTLPWire.span(trace: trace, id: span, name: Array("deep".utf8), attributes: OTLPWire.field(9, OTLPWire.field(1, Array("k".utf8)) + OTLPWire.field(2, value)))
        let nested = try await client.post("/v1/traces", body: OTLPWire.traces(service: "deep", spans: [deep]))
        #expect(nested.status == 400 && nested.text.contains("nested more than 64 deep"), "\(nested)")
        try await Self.refusalLine(in: daemon, count: 3, status: 400, reason: "nested more than 64 deep")
        let deepJSON = String(repeating: #"{"kvlistValue":{"values":[{"key":"k","value":"#, count: 10_000) + "{}" + String(repeating: "}]}}", count: 10_000)
        let nestedJSON = try await client.postJSON("/v1/traces", """
            {"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175",
              "name":"deep","attributes":[{"key":"k","value":\(deepJSON)}]}]}]}]}
            """)
        #expect(nestedJSON.status == 400 && nestedJSON.text.contains("nested more than 64 deep"), "\(nestedJSON)")
        try await Self.refusalLine(in: daemon, count: 4, status: 400, reason: "nested more than 64 deep")
        try Self.expectWithinBudget(daemon, after: "truncated, mistyped and nested")

        // 200 000 attributes with keys of their own, 400 000 messages: within what parleyd decodes at once, stored
        // cut to 128, the rest counted as dropped and the cut said in the log.
        var attributes: [UInt8] = []
        attributes.reserveCapacity(200_000 * 16)
        for index in 0..<200_000 { attributes += OTLPWire.attribute(9, key: Array(String(format: "k%07d", index).utf8), value: Array("v".utf8)) }
        let start = ContinuousClock.now
        let many = try await client.post(
            "/v1/traces", body: OTLPWire.traces(service: "many-attributes", spans: [OTLPWire.span(trace: trace, id: span, name: Array("many".utf8), attributes: attributes)]))
        report("OTLP, 200 000 attributes: \(many.status) after \(ContinuousClock.now - start)")
        #expect(many.status == 200, "\(many)")
        let cut = try await daemon.logLine(containing: "OTLP records cut to the limits", count: 1)
        #expect(cut.contains("items-dropped=199872"), "\(cut)")
        let watcher = try await TelemetryWatcher.start(on: daemon)
        let stored = try #require(try await watcher.ask(TelemetryControl.Trace(traceID: "5b8efff798038103d269b633813fc60c"), TelemetryControl.TraceDetail.self).spans.first)
        await watcher.transceiver.stop()
        #expect(stored.span.attributes.count == 128 && stored.span.droppedAttributes == 199_872)
        try Self.expectWithinBudget(daemon, after: "200 000 attributes")

        try await StoredBeforeAttack.expectWhole(in: daemon)
        #expect(try await daemon.stop() == 0)
    }
}
