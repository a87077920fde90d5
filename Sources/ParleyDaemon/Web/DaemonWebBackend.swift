import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyDebugger
import ParleyDrawer
import ParleyHistory
import ParleyTelemetry
import ParleyWeb
import Synchronization

/// parleyd's answers to the web debugger: the debugger service and its history store, the peers the control
/// router lists, the metrics. Each domain error becomes a problem document a person can read.
struct DaemonWebBackend: WebDebuggerBackend {
    let debugger: DebuggerService
    let drawer: DrawerService
    let router: ControlRouter
    let metrics: DaemonMetrics
    let devices: DeviceService
    /// With a shared secret, every LAN peer in the typed protocol has proved it.
    let authenticatesPeers: Bool

    private var store: HistoryStore { debugger.store }

    var historyIdentity: String { store.identity }

    func sessions(before: Int64?, limit: Int) async throws -> [WebSession] {
        let live = debugger.liveSessions
        return try await store.sessions(before: before, limit: limit)
            .map { WebSession(summary: $0, live: live.contains($0.id)) }
    }

    func session(_ id: Int64) async throws -> WebSession {
        let summary = try await store.session(id)
        return WebSession(summary: summary, live: debugger.liveSessions.contains(id))
    }

    func deleteSession(_ id: Int64) async throws {
        try await debugger.deleteSession(id)
    }

    func entries(session: Int64, filter: ActionTextFilter?, offset: Int, limit: Int) async throws -> (entries: [EntrySummary], total: Int) {
        let page = try await store.entries(
            session: session, filter: filter, offset: offset, limit: limit, namedFilters: debugger.namedFilters)
        return (page.items, page.total)
    }

    func position(of sequence: Int64, session: Int64, filter: ActionTextFilter?) async throws -> (offset: Int, matches: Bool)? {
        try await store.position(of: sequence, session: session, filter: filter, namedFilters: debugger.namedFilters)
    }

    func entry(_ sequence: Int64) async throws -> WebEntry {
        let detail = try await store.entry(sequence, includeScreenshot: false)
        let (previous, next) = try await store.neighbours(of: sequence)
        return WebEntry(entry: detail.summary, previous: previous, next: next)
    }

    func state(of sequence: Int64) async throws -> ByteBuffer {
        try await store.entry(sequence, includeScreenshot: false).state
    }

    func screenshot(of sequence: Int64) async throws -> ByteBuffer {
        try await store.entry(sequence, includeScreenshot: true).screenshot
    }

    func diff(from: Int64?, to: Int64) async throws -> DebuggerControl.DiffResult {
        try await debugger.diff(DebuggerControl.Diff(from: from, to: to))
    }

    func replay(_ sequence: Int64, to: String?, all: Bool) async throws -> DebuggerControl.ReplayResult {
        try await debugger.replay(DebuggerControl.Replay(sequence: sequence, to: to, all: all))
    }

    func timeline(_ query: TimelineQuery) async throws -> HistoryPage<TimelineItem> {
        try await store.timeline(query)
    }

    func timelinePosition(kind: TimelineItem.Kind, id: Int64, query: TimelineQuery) async throws -> (offset: Int, matches: Bool)? {
        if let offset = try await store.timelinePosition(kind: kind, id: id, query: query) { return (offset, true) }
        // Left out by the filter, or not in the session: where it would be is the count of selected items before its
        // time (selected items at its very time are counted after it).
        guard let time = try await time(of: kind, id: id, session: query.session) else { return nil }
        var all = query
        (all.offset, all.limit) = (0, 0)
        var from = all
        from.since = time
        let before = try await store.timeline(all).total - store.timeline(from).total
        return (max(0, before), false)
    }

    /// Where an item of `session` sits on its timeline; nil when there is no such item in it.
    private func time(of kind: TimelineItem.Kind, id: Int64, session: Int64) async throws -> UnixNanos? {
        do {
            switch kind {
            case .state:
                let entry = try await store.entry(id, includeScreenshot: false).summary
                return entry.session == session ? UnixNanos(UInt64(max(0, (entry.time.timeIntervalSince1970 * 1000).rounded())) * 1_000_000) : nil
            case .log:
                let log = try await store.logRecord(id)
                return log.session == session ? log.record.time : nil
            case .span:
                let span = try await store.span(id)
                return span.session == session ? span.span.start : nil
            }
        } catch .noSuchEntry, .noSuchLogRecord, .noSuchSpan {
            return nil
        }
    }

    func logRecord(_ id: Int64) async throws -> StoredLogRecord { try await store.logRecord(id) }

    func span(_ id: Int64) async throws -> StoredSpan { try await store.span(id) }

    func traces(session: Int64?, limit: Int) async throws -> [TraceSummary] { try await store.traces(session: session, limit: limit) }

    func trace(_ idOrPrefix: String) async throws -> [StoredSpan] { try await store.trace(idOrPrefix) }

    func state(before time: UnixNanos, session: Int64) async throws -> EntrySummary? { try await store.state(before: time, session: session) }

    func export(session: Int64, into write: (ByteBuffer) async throws -> Void) async throws {
        var cursor: HistoryExportCursor?
        repeat {
            let chunk = try await store.exportChunk(session: session, cursor: cursor)
            try await write(chunk.data)
            cursor = chunk.next
        } while cursor != nil
    }

    func beginImport() -> any WebHistoryImport { Import(store: store, events: debugger.events) }

    func liveEvents() -> AsyncStream<WebEvent> { debugger.events.subscribe { WebEvent($0) } }

    func peers() async -> [WebPeer] {
        router.peerList().map { info in
            WebPeer(
                name: info.name, id: info.id, address: info.address, addresses: info.addresses, kind: info.kind,
                connected: info.connected, connectedAt: info.connected ? info.connectedAt : nil, accepts: info.accepts,
                authenticated: authenticatesPeers && info.connected && info.kind == Control.PeerInfo.parleyKind,
                messagesIn: info.messagesIn, messagesOut: info.messagesOut
            )
        }
    }

    func devices() async -> WebDevices { devices.webDevices() }

    func decide(_ decision: WebDeviceDecision, device: String) async throws -> String {
        try devices.decide(decision, device: device)
    }

    func filters() -> [String: ActionTextFilter] { debugger.namedFilters }

    func metrics() async -> String { await metrics.exposition() }

    func drawers() async -> [AppDrawer] { (try? drawer.list()) ?? [] }

    func setDrawerValue(app: String, item: String, value: DrawerValue) async throws -> DrawerMessage.Result {
        try await drawer.set(app: app, item: item, value: value)
    }

    func invokeDrawerAction(app: String, item: String) async throws -> DrawerMessage.Result {
        try await drawer.invoke(app: app, item: item)
    }

    /// Feeds an upload to the store's import, line by line; the first line is the header.
    private final class Import: WebHistoryImport {
        let store: HistoryStore
        let events: DaemonEvents
        private let progress = Mutex<HistoryImport?>(nil)

        init(store: HistoryStore, events: DaemonEvents) {
            self.store = store
            self.events = events
        }

        func add(lines: ByteBuffer) async throws {
            // The store abandons an import whose lines it refuses; the request then ends with the error.
            let next: HistoryImport
            if var started = progress.withLock({ $0 }) {
                if lines.readableBytes > 0 { try await store.continueImport(&started, lines: lines) }
                next = started
            } else {
                next = try await store.beginImport(firstPiece: lines)
            }
            progress.withLock { $0 = next }
        }

        func finish() async throws -> (session: SessionSummary, alreadyInHistory: Bool) {
            guard let started = progress.withLock({ $0 }) else {
                throw WebProblem.badRequest("the file is empty: an export starts with its header line (docs/debugger.md, Export format)")
            }
            // A file imported before is read to its end all the same: a damaged copy is reported as damaged.
            let finished = try await store.completeImport(started)
            if !finished.alreadyInHistory { events.publish(.sessionEnded(finished.session)) }
            return finished
        }
    }

    // MARK: - Errors

    /// The status code each failure gets; the text is parleyd's own, the one parleyctl prints before any hint of its own.
    func problem(for error: any Error) -> WebProblem? {
        switch error {
        case let error as HistoryStoreError:
            switch error {
            case .noSuchSession, .noSuchEntry, .noSuchLogRecord, .noSuchSpan, .noSuchTrace: return WebProblem.notFound(error.description)
            case .ambiguousTrace, .invalidTraceID, .invalidLabelPattern: return WebProblem.badRequest(error.description)
            case .sessionLive, .sessionEnded, .alreadyInHistory: return WebProblem.conflict(error.description)
            case .invalidFilter, .invalidImport, .invalidState, .actionTooLong: return WebProblem.badRequest(error.description)
            case .exportIncomplete: return WebProblem(.conflict, "Export incomplete", detail: error.description)
            case .cannotOpen, .invalidLimits, .database: return WebProblem(.internalServerError, "History unavailable", detail: error.description)
            }
        case let error as DrawerError:
            if case .unknownItem = error { return WebProblem.notFound(error.description) }
            return WebProblem.badRequest(error.description)
        case let error as DrawerServiceError:
            switch error {
            case .noSuchApp, .ambiguous: return WebProblem.notFound(error.description)
            case .appRefused: return WebProblem(.conflict, "The app refused", detail: error.description)
            case .appSilent: return WebProblem(.gatewayTimeout, "No answer from the app", detail: error.description)
            }
        case let error as DebuggerError:
            switch error {
            case .firstOfSession: return WebProblem.badRequest(error.description)
            case .diffTooLarge: return WebProblem(.contentTooLarge, "Diff too large", detail: error.description)
            case .diffTooSlow: return WebProblem(.serviceUnavailable, "Diff too slow", detail: error.description)
            case .noSuchApp, .sessionAppGone, .noApps: return WebProblem(.conflict, "No app to replay to", detail: error.description)
            }
        case let error as DeviceBookError:
            switch error {
            case .noSuchDevice: return WebProblem.notFound(error.description)
            case .ambiguous: return WebProblem.badRequest(error.description)
            case .malformed, .cannotSave: return WebProblem(.internalServerError, "Devices unavailable", detail: error.description)
            }
        default:
            return nil
        }
    }
}
