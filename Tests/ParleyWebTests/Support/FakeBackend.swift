import Foundation
import NIOCore
import ParleyDebugger
import ParleyDrawer
import ParleyJSON
import ParleyTelemetry
import ParleyWeb
import Synchronization

/// A ``WebDebuggerBackend`` of fixed answers: two sessions (1 ended with entries 10, 11, 12; 2 live and empty),
/// one peer, one drawer, one named filter. It remembers what the API asked it to change, and answers the live
/// stream with the events a test gives it.
final class FakeBackend: WebDebuggerBackend {
    /// The backend's own errors, which ``problem(for:)`` turns into statuses; `.broken` it does not know.
    enum Failure: Error {
        case noSuchSession, noSuchEntry, sessionLive, noApps, noSuchApp, noSuchLogRecord, noSuchSpan, noSuchTrace, broken
    }

    struct Changes {
        var deleted: [Int64] = []
        var replayed: [(sequence: Int64, to: String?, all: Bool)] = []
        var drawerValues: [(app: String, item: String, value: DrawerValue)] = []
        var imported: [String] = []
        var lastFilter: ActionTextFilter?
        var lastTimelineQuery: TimelineQuery?
    }

    static let started = Date(timeIntervalSince1970: 1_764_000_000)
    let ended = SessionSummary(
        id: 1, peerID: "p1", appName: "Listr", kind: .parley, host: "10.0.0.7", started: FakeBackend.started, ended: FakeBackend.started + 60,
        entryCount: 3)
    let live = SessionSummary(id: 2, peerID: "p2", appName: "Notes", kind: .parley, started: FakeBackend.started + 120)
    let states = [10: #"{"count": 0}"#, 11: #"{"count": 1}"#, 12: #"{"count": 2, "title": "x"}"#]
    let screenshot: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// The events each live stream carries; then it ends, unless not `endsAfterEvents`.
    let scriptedEvents: [WebEvent]
    let endsAfterEvents: Bool
    /// Run when a live stream has handed over all its scripted events and is asked for more.
    let afterEvents: @Sendable () -> Void
    let changes = Mutex(Changes())
    let historyIdentity = "fake-history"

    init(events: [WebEvent] = [], endsAfterEvents: Bool = true, afterEvents: @escaping @Sendable () -> Void = {}) {
        scriptedEvents = events
        self.endsAfterEvents = endsAfterEvents
        self.afterEvents = afterEvents
    }

    func summary(of sequence: Int64) -> EntrySummary {
        EntrySummary(
            sequence: sequence, session: 1, time: Self.started + Double(sequence), action: sequence == 11 ? "hover(1)" : "add(\(sequence))",
            stateSize: states[Int(sequence)]!.utf8.count, screenshotSize: sequence == 11 ? screenshot.count : 0)
    }

    func sessions(before: Int64?, limit: Int) async throws -> [WebSession] {
        let all = [WebSession(summary: live, live: true), WebSession(summary: ended, live: false)]
        return Array(all.filter { before == nil || $0.summary.id < before! }.prefix(limit))
    }

    func session(_ id: Int64) async throws -> WebSession {
        switch id {
        case 1: WebSession(summary: ended, live: false)
        case 2: WebSession(summary: live, live: true)
        default: throw Failure.noSuchSession
        }
    }

    func deleteSession(_ id: Int64) async throws {
        _ = try await session(id)
        guard id != 2 else { throw Failure.sessionLive }
        changes.withLock { $0.deleted.append(id) }
    }

    func entries(session: Int64, filter: ActionTextFilter?, offset: Int, limit: Int) async throws -> (entries: [EntrySummary], total: Int) {
        _ = try await self.session(session)
        changes.withLock { $0.lastFilter = filter }
        let all: [Int64] = session == 1 ? [10, 11, 12] : []
        return (all.dropFirst(offset).prefix(limit).map(summary(of:)), all.count)
    }

    func position(of sequence: Int64, session: Int64, filter: ActionTextFilter?) async throws -> (offset: Int, matches: Bool)? {
        guard session == 1, let index = [Int64(10), 11, 12].firstIndex(of: sequence) else { return nil }
        return (index, true)
    }

    func entry(_ sequence: Int64) async throws -> WebEntry {
        guard states[Int(sequence)] != nil else { throw Failure.noSuchEntry }
        return WebEntry(entry: summary(of: sequence), previous: sequence > 10 ? sequence - 1 : nil, next: sequence < 12 ? sequence + 1 : nil)
    }

    func state(of sequence: Int64) async throws -> ByteBuffer {
        guard let state = states[Int(sequence)] else { throw Failure.noSuchEntry }
        return ByteBuffer(string: state)
    }

    func screenshot(of sequence: Int64) async throws -> ByteBuffer {
        guard states[Int(sequence)] != nil else { throw Failure.noSuchEntry }
        return ByteBuffer(bytes: sequence == 11 ? screenshot : [])
    }

    func diff(from: Int64?, to: Int64) async throws -> DebuggerControl.DiffResult {
        let from = from ?? to - 1
        guard let old = states[Int(from)], let new = states[Int(to)] else { throw Failure.noSuchEntry }
        let diff = try StateDiff(old: ByteBuffer(string: old), new: ByteBuffer(string: new))
        return DebuggerControl.DiffResult(from: summary(of: from), to: summary(of: to), diff: diff)
    }

    func replay(_ sequence: Int64, to: String?, all: Bool) async throws -> DebuggerControl.ReplayResult {
        guard states[Int(sequence)] != nil else { throw Failure.noSuchEntry }
        guard to == "Notes" || all else { throw Failure.noApps }
        changes.withLock { $0.replayed.append((sequence, to, all)) }
        return DebuggerControl.ReplayResult(sentTo: [.init(name: "Notes", id: "p2")])
    }

    func export(session: Int64, into write: (ByteBuffer) async throws -> Void) async throws {
        try await write(ByteBuffer(string: "{\"header\":\(session)}\n"))
        try await write(ByteBuffer(string: "{\"entry\":10}\n"))
    }

    func beginImport() -> any WebHistoryImport { Import(backend: self) }

    private final class Import: WebHistoryImport {
        let backend: FakeBackend
        let lines = Mutex<[String]>([])
        init(backend: FakeBackend) { self.backend = backend }

        func add(lines added: ByteBuffer) async throws {
            lines.withLock { $0 += String(buffer: added).split(separator: "\n").map(String.init) }
        }

        func finish() async throws -> (session: SessionSummary, alreadyInHistory: Bool) {
            let lines = lines.withLock { $0 }
            guard let header = lines.first else { throw WebProblem.badRequest("the file is empty") }
            backend.changes.withLock { $0.imported = lines }
            // A header naming session 1 is one this history has already.
            return (backend.ended, header.contains("\"header\":1"))
        }
    }

    func peers() async -> [WebPeer] {
        [WebPeer(
            name: "Notes", id: "p2", address: "10.0.0.8:7200", addresses: ["10.0.0.8:7200"], kind: "parley", connected: true,
            connectedAt: "2025-11-24T16:02:00.000Z", accepts: ["parley.debugger.State"], authenticated: false, messagesIn: 3, messagesOut: 1)]
    }

    func filters() -> [String: ActionTextFilter] { ["noisy": .pattern("hover*")] }

    func metrics() async -> String { "# TYPE parley_fake gauge\nparley_fake 1\n" }

    func liveEvents() -> AsyncStream<WebEvent> {
        let remaining = Script(scriptedEvents)
        let (ends, afterEvents) = (endsAfterEvents, self.afterEvents)
        // Kept open and never fed: what a backend whose events stop coming looks like to the reader.
        let (silence, keepSilent) = AsyncStream.makeStream(of: WebEvent.self)
        return AsyncStream(unfolding: {
            if let next = remaining.next() { return next }
            afterEvents()
            if ends { return nil }
            // Until the reader stops reading (the task is cancelled).
            for await _ in silence {}
            withExtendedLifetime(keepSilent) {}
            return nil
        })
    }

    /// One stream's events still to hand over.
    private final class Script: Sendable {
        private let events: Mutex<ArraySlice<WebEvent>>
        init(_ events: [WebEvent]) { self.events = Mutex(events[...]) }
        func next() -> WebEvent? { events.withLock { $0.popFirst() } }
    }

    func problem(for error: any Error) -> WebProblem? {
        switch error as? Failure {
        case .noSuchSession: WebProblem.notFound("no session")
        case .noSuchEntry: WebProblem.notFound("no entry")
        case .noSuchApp: WebProblem.notFound("no app")
        case .noSuchLogRecord: WebProblem.notFound("no log record")
        case .noSuchSpan: WebProblem.notFound("no span")
        case .noSuchTrace: WebProblem.notFound("no trace")
        case .sessionLive: WebProblem.conflict("the session is live")
        case .noApps: WebProblem(.conflict, "No app to replay to", detail: "no debugger app is connected")
        case .broken, nil: nil
        }
    }

    func drawers() async -> [AppDrawer] { [AppDrawer(peer: .init(id: "p2", name: "Notes"), items: [])] }

    func setDrawerValue(app: String, item: String, value: DrawerValue) async throws -> DrawerMessage.Result {
        guard app == "Notes" else { throw Failure.noSuchApp }
        changes.withLock { $0.drawerValues.append((app, item, value)) }
        return DrawerMessage.Result(value: value)
    }

    func invokeDrawerAction(app: String, item: String) async throws -> DrawerMessage.Result {
        guard app == "Notes" else { throw item == "explode" ? Failure.broken : Failure.noSuchApp }
        return DrawerMessage.Result(message: "done")
    }

    /// One request waiting, from "phone".
    func devices() async -> WebDevices {
        WebDevices(
            fingerprint: "AAAA-BBBB-CCCC-DDDD", paired: [],
            pending: [.init(fingerprint: "EEEE-FFFF", name: "phone", address: "192.0.2.7:50000", code: "123 456", requestedAt: Date(timeIntervalSince1970: 0), attempts: 1)])
    }

    func decide(_ decision: WebDeviceDecision, device: String) async throws -> String {
        guard "EEEE-FFFF".hasPrefix(device) else { throw Failure.noSuchApp }
        return "\(decision.rawValue) phone"
    }
}
