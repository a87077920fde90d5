import Foundation
import Logging
import NIOCore
import NIOPosix
import Parley
import ParleyControl
import ParleyDebugger
import ParleyHistory
import ParleyJSON
import Synchronization

/// parleyd as the remote state debugger: records the states apps send (`parley.debugger.record` messages, which is
/// also what the frames of apps in the original framing arrive as) into the history store, one session per app connection, and answers the
/// `parley.debugger.*` control requests of parleyctl: sessions, history, show, diff, replay, export, import. The
/// same sessions hold the apps' log records and spans (DebuggerService+Telemetry.swift).
final class DebuggerService: Sendable {
    let transceiver: Transceiver
    let store: HistoryStore
    /// The named action filters of the configuration; a reload replaces them.
    private let filters: Mutex<[String: ActionTextFilter]>
    let logger: Logger
    /// The open session of each connected app, and the connection it arrives on: a later connection with the same
    /// peer id (a reconnect, or someone claiming the id) gets a session of its own.
    private let openSessions = Mutex<[PeerID: OpenSession]>([:])

    private struct OpenSession {
        var id: Int64
        var connection: UInt64
    }
    /// Local clients following the history (`parleyctl history --follow`), with what they follow.
    private let followers = Mutex<[PeerID: DebuggerControl.Follow]>([:])
    /// Local clients following log records (`parleyctl logs --follow`), with what they follow.
    let logFollowers = Mutex<[PeerID: LogQuery]>([:])
    /// What came of the apps' log records and spans, for the metrics.
    let telemetryCounts = TelemetryCounts()
    /// Each connection's checked telemetry batches, in order, from the store's queue to the pages and followers
    /// told of them, then the end of its session. Four waiting at most, besides the one being decoded: enough for
    /// the store to take several of an app's batches into one transaction while it is busy.
    let telemetryLanes = OrderedLanes<UInt64>(depth: 4)

    /// `diffMaxBytes`: the two states of a diff together.
    private let diffMaxBytes: Int
    /// `diffTimeLimit`.
    private let diffTimeLimit: Duration
    /// Recorded entries and session changes, for the web debugger's open pages.
    let events: DaemonEvents
    /// Where stored log records and spans are sent on (`otlpForward`); nil: nowhere.
    let forwarder: OTLPForwarder?

    init(
        transceiver: Transceiver, store: HistoryStore, filters: [String: ActionTextFilter], diffMaxBytes: Int,
        diffTimeLimit: Duration = .seconds(10), events: DaemonEvents = DaemonEvents(), forwarder: OTLPForwarder? = nil, logger: Logger
    ) {
        self.forwarder = forwarder
        self.diffTimeLimit = diffTimeLimit
        self.events = events
        self.diffMaxBytes = diffMaxBytes
        self.transceiver = transceiver
        self.store = store
        self.filters = Mutex(filters)
        self.logger = logger
    }

    /// Registers the record handlers and the control requests. Call before the transceiver starts.
    func install() {
        // Handlers run in order per connection, so a session is begun once, before that app's next record.
        transceiver.receiveRaw(typeName: StateRecord.messageType) { [self] message, peer in
            let record: StateRecord
            do {
                record = try StateRecord(decoding: message.payload)
            } catch {
                throw rejected(error, from: peer)
            }
            try await self.record(record, from: peer)
        }
        installControl()
        installTelemetry()
    }

    /// A reload: new named filters and retention limits take effect at once (the limits may drop old entries).
    func apply(filters newFilters: [String: ActionTextFilter], limits: RetentionLimits) async throws {
        filters.withLock { $0 = newFilters }
        if limits != store.limits { try await store.setLimits(limits) }
    }

    /// Ends the session of an app whose connection ended.
    func peerDisconnected(_ peer: Peer) {
        _ = followers.withLock { $0.removeValue(forKey: peer.id) }
        _ = logFollowers.withLock { $0.removeValue(forKey: peer.id) }
        // After what the connection sent is stored, in its lane; without holding up other connections' events,
        // which wait for this call.
        telemetryLanes.append(peer.connectionID) { [self] in await endSession(of: peer) }
    }

    private func endSession(of peer: Peer) async {
        // Only the session of the connection that ended: a newer connection of the same peer keeps its own.
        guard let session = openSessions.withLock({ sessions -> Int64? in
            guard let open = sessions[peer.id], open.connection == peer.connectionID else { return nil }
            sessions[peer.id] = nil
            return open.id
        }) else { return }
        do {
            if try await store.endSession(session) {
                logger.info("debugger session ended without entries; removed", metadata: ["session": "\(session)", "peer-id": "\(peer.id)"])
                events.publish(.sessionDeleted(id: session))
                return
            }
            logger.info("debugger session ended", metadata: ["session": "\(session)", "peer-id": "\(peer.id)"])
            if let ended = try? await store.session(session) { events.publish(.sessionEnded(ended)) }
        } catch {
            logger.warning("cannot end debugger session", metadata: ["session": "\(session)", "reason": "\(error)"])
        }
    }

    /// Ends every open session (parleyd is stopping) and closes the store.
    func close() async {
        await telemetryLanes.drainAll()
        let open = openSessions.withLock { sessions in
            defer { sessions.removeAll() }
            return Array(sessions.values)
        }
        for session in open { _ = try? await store.endSession(session.id) }
        try? await store.close()
    }

    // MARK: - Recording

    private func record(_ record: StateRecord, from peer: Peer) async throws {
        var record = record
        // Screenshots are served as image/png: bytes that are not one would reach a browser under that type. The
        // state and action are kept; only the screenshot goes.
        if record.screenshot.readableBytes > 0, !record.screenshotIsPNG {
            transceiver.logThrottle.warning(
                "screenshot is not a PNG (it does not start with the PNG signature); state stored without it",
                metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)", "bytes": "\(record.screenshot.readableBytes)"],
                to: logger
            )
            record.screenshot = ByteBuffer()
        }
        let session = try await sessionID(for: peer)
        do {
            let entry = try await store.append(record, to: session)
            logger.debug(
                "state recorded",
                metadata: ["sequence": "\(entry.sequence)", "session": "\(session)", "action": "\(record.action)"]
            )
            events.publish(.entry(entry))
            await notifyFollowers(of: entry)
        } catch {
            throw rejected(error, from: peer)
        }
    }

    /// Sends a recorded entry to each local client following it. Runs in the recording app's handler, so entries
    /// reach followers in recording order; a follower that takes nothing of its full queue for the slow-peer
    /// timeout stops following (it cannot hold up the app), one that reads slowly only slows this app down.
    private func notifyFollowers(of entry: EntrySummary) async {
        let named = filters.withLock { $0 }
        let wanted = followers.withLock { followers in
            followers.compactMap { client, follow -> PeerID? in
                if let session = follow.session, session != entry.session { return nil }
                if let filter = follow.filter, (try? filter.includes(entry.action, named: named)) != true { return nil }
                return client
            }
        }
        for client in wanted {
            do {
                try await transceiver.send(
                    DebuggerControl.Appended(entry: entry), to: client, stallTimeout: transceiver.configuration.slowPeerTimeout)
            } catch {
                _ = followers.withLock { $0.removeValue(forKey: client) }
                logger.warning("local client not taking history updates; it no longer follows", metadata: ["peer-id": "\(client)", "reason": "\(error)"])
            }
        }
    }

    /// The open session of `peer`'s connection, begun now if it has none: its states, log records and spans go
    /// there.
    func sessionID(for peer: Peer) async throws -> Int64 {
        let open = openSessions.withLock { $0[peer.id] }
        if let open, open.connection == peer.connectionID { return open.id }
        if let open {
            // The same id on a new connection: the old connection's session ends here, not in the newcomer's hands.
            _ = try? await store.endSession(open.id)
            logger.info("debugger session ended: its peer id arrived on a new connection", metadata: ["session": "\(open.id)", "peer-id": "\(peer.id)"])
        }
        // Shown in `parleyctl sessions`, so that people can tell the two kinds of app apart.
        let kind: SessionSummary.Kind = peer.capabilities.contains(OriginalFraming.capability) ? .original : .parley
        let session = try await store.beginSession(peerID: peer.id.rawValue, appName: peer.name, kind: kind, host: Endpoint(peer.address)?.host ?? peer.address)
        openSessions.withLock { $0[peer.id] = OpenSession(id: session.id, connection: peer.connectionID) }
        events.publish(.sessionStarted(session))
        logger.info(
            "debugger session started",
            metadata: ["session": "\(session.id)", "peer-id": "\(peer.id)", "peer-name": "\(peer.name)", "kind": "\(kind)"]
        )
        return session.id
    }

    /// Deletes an ended session and its entries, and tells the open web pages.
    func deleteSession(_ id: Int64) async throws {
        try await store.deleteSession(id)
        events.publish(.sessionDeleted(id: id))
        logger.info("debugger session deleted", metadata: ["session": "\(id)"])
    }

    /// The sessions whose apps are connected now.
    var liveSessions: Set<Int64> { Set(openSessions.withLock { $0.values.map(\.id) }) }

    /// The named filters of the configuration.
    var namedFilters: [String: ActionTextFilter] { filters.withLock { $0 } }

    /// Logs why a record was not stored (the transceiver logs the handler's error too, but without saying that
    /// nothing was kept) and returns the error for the handler to throw.
    private func rejected(_ error: any Error, from peer: Peer) -> any Error {
        transceiver.logThrottle.warning(
            "state record rejected; nothing stored",
            metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)", "reason": "\(error)"],
            to: logger
        )
        return error
    }

    // MARK: - Control requests

    private func installControl() {
        local(DebuggerControl.Sessions.self) { [store] request in
            let limit = min(max(1, request.limit ?? DebuggerControl.Sessions.pageSize), DebuggerControl.Sessions.pageSize)
            // One more than the page, to know whether another page follows.
            let found = try await store.sessions(after: request.after, limit: limit + 1)
            let page = Array(found.prefix(limit))
            return DebuggerControl.SessionList(sessions: page, nextAfter: found.count > limit ? page.last?.id : nil)
        }
        // A page holds up to 500 action texts of up to 16 KiB each: coded off the event loops too.
        local(DebuggerControl.History.self, heavy: true) { [self] request in
            // Whatever a client asks for, a page stays one that fits a frame.
            let query = EntryQuery(
                session: request.session, filter: request.filter, after: request.after, offset: request.offset ?? 0, limit: request.pageLimit,
                since: request.since)
            return DebuggerControl.Entries(page: try await store.entries(query, namedFilters: filters.withLock { $0 }))
        }
        // Megabytes each way (states, base64 screenshots, pieces of an export): coded off the event loops.
        local(DebuggerControl.Show.self, heavy: true) { [store] request in
            DebuggerControl.Entry(entry: try await store.entry(request.sequence, includeScreenshot: request.includeScreenshot))
        }
        local(DebuggerControl.Diff.self, heavy: true) { [self] request in try await diff(request) }
        local(DebuggerControl.Replay.self) { [self] request in try await replay(request) }
        local(DebuggerControl.Export.self, heavy: true) { [self] request in try await export(request) }
        local(DebuggerControl.Import.self, heavy: true) { [self] request in try await importPiece(request) }
        local(DebuggerControl.DeleteSessions.self) { [self] request in
            if let session = request.session {
                try await deleteSession(session)
                return DebuggerControl.Deleted(sessions: [session])
            }
            guard let before = request.endedBefore else { return DebuggerControl.Deleted(sessions: []) }
            let deleted = try await store.deleteSessions(endedBefore: before)
            for id in deleted { events.publish(.sessionDeleted(id: id)) }
            if !deleted.isEmpty { logger.info("debugger sessions pruned", metadata: ["sessions": "\(deleted.count)"]) }
            return DebuggerControl.Deleted(sessions: deleted)
        }
        local(DebuggerControl.Filters.self) { [self] _ in DebuggerControl.FilterList(filters: filters.withLock { $0 }) }
        transceiver.respond(to: DebuggerControl.Follow.self, localOnly: true) { [self] request, client in
            // A named filter that does not exist is refused now, not silently matched against nothing later.
            if let filter = request.filter { _ = try filter.resolved(in: filters.withLock { $0 }) }
            // Registered before the newest sequence is read: an entry recorded in between is both sent and at
            // most that sequence, and the client prints each sequence once.
            followers.withLock { $0[client.id] = request }
            return DebuggerControl.Following(lastSequence: try await ControlRefusal.coding { try await store.newestSequence() })
        }
    }

    /// A control request answered only on the control socket (to LAN peers the type does not exist). `heavy`:
    /// its request or reply can be megabytes, so it is decoded and encoded on the shared blocking pool.
    func local<Request: Decodable & Sendable & NamedMessage, Reply: Encodable & Sendable>(
        _ type: Request.Type, heavy: Bool = false, _ answer: @escaping @Sendable (Request) async throws -> Reply
    ) {
        transceiver.respond(to: type, localOnly: true, codingOn: heavy ? .shared : nil) { request, _ in
            try await ControlRefusal.coding { try await answer(request) }
        }
    }

    func diff(_ request: DebuggerControl.Diff) async throws -> DebuggerControl.DiffResult {
        let to = try await store.entry(request.to, includeScreenshot: false)
        let fromSequence: Int64
        if let given = request.from {
            fromSequence = given
        } else if let previous = try await store.predecessor(of: request.to) {
            fromSequence = previous.sequence
        } else {
            throw DebuggerError.firstOfSession(request.to, session: to.summary.session)
        }
        let from = try await store.entry(fromSequence, includeScreenshot: false)
        let size = from.state.readableBytes + to.state.readableBytes
        guard size <= diffMaxBytes else { throw DebuggerError.diffTooLarge(bytes: size, limit: diffMaxBytes) }
        // Seconds of CPU for large states: on the shared blocking pool (one thread per core), never on an event
        // loop, where it would stall every connection of that loop.
        let limit = diffTimeLimit
        let diff: StateDiff
        do {
            diff = try await BlockingPool.shared.run { try StateDiff(old: from.state, new: to.state, timeLimit: limit) }
        } catch is StateDiffTimeLimitExceeded {
            throw DebuggerError.diffTooSlow(limit: limit)
        }
        return DebuggerControl.DiffResult(from: from.summary, to: to.summary, diff: diff)
    }

    /// Sends an entry's state, byte for byte as recorded, to the apps chosen, as `parley.debugger.restore`.
    func replay(_ request: DebuggerControl.Replay) async throws -> DebuggerControl.ReplayResult {
        let entry = try await store.entry(request.sequence, includeScreenshot: false)
        let apps = transceiver.peers.filter { !$0.isLocal && $0.accepts.contains(StateRestore.messageType) }
        let targets: [Peer]
        if request.all {
            targets = apps
        } else if let selector = request.to {
            targets = PeerSelector.select(selector, among: apps, id: \.id.rawValue, name: \.name)
            guard !targets.isEmpty else { throw DebuggerError.noSuchApp(selector, connected: apps) }
        } else {
            // The connection the session arrived on, if it is still there; not whoever holds its peer id now.
            let session = try await store.session(entry.summary.session)
            let carrier = openSessions.withLock { sessions in sessions.values.first { $0.id == session.id }?.connection }
            guard let own = apps.first(where: { $0.id.rawValue == session.peerID && $0.connectionID == carrier }) else {
                throw DebuggerError.sessionAppGone(session, connected: apps)
            }
            targets = [own]
        }
        guard !targets.isEmpty else { throw DebuggerError.noApps }
        var sent: [DebuggerControl.ReplayResult.Recipient] = []
        for target in targets {
            try await transceiver.sendRaw(typeName: StateRestore.messageType, payload: entry.state, toConnectionOf: target)
            sent.append(.init(name: target.name, id: target.id.rawValue))
            logger.info(
                "state replayed",
                metadata: ["sequence": "\(request.sequence)", "peer-id": "\(target.id)", "peer-name": "\(target.name)"]
            )
        }
        return DebuggerControl.ReplayResult(sentTo: sent)
    }

    private func export(_ request: DebuggerControl.Export) async throws -> DebuggerControl.ExportChunk {
        let cursor = try request.cursor.map { try JSONDecoder().decode(HistoryExportCursor.self, from: Data($0.utf8)) }
        // Each piece travels as a JSON string in one control frame: escaping can double it, so stay well below.
        let maxBytes = min(HistoryStore.defaultExportChunkBytes, transceiver.configuration.maximumFrameSize / 4)
        let chunk = try await store.exportChunk(session: request.session, cursor: cursor, maxBytes: maxBytes)
        let next = try chunk.next.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        return DebuggerControl.ExportChunk(lines: String(buffer: chunk.data), cursor: next)
    }

    private func importPiece(_ request: DebuggerControl.Import) async throws -> DebuggerControl.ImportProgress {
        let lines = ByteBuffer(string: request.lines)
        var progress: HistoryImport
        if let text = request.progress {
            progress = try JSONDecoder().decode(HistoryImport.self, from: Data(text.utf8))
            if lines.readableBytes > 0 { try await store.continueImport(&progress, lines: lines) }
        } else {
            progress = try await store.beginImport(firstPiece: lines)
        }
        if request.last {
            // A file imported before is read to its end all the same: a damaged copy is reported as damaged.
            let (session, again) = try await store.completeImport(progress)
            return DebuggerControl.ImportProgress(progress: nil, session: session, alreadyInHistory: again ? true : nil)
        }
        return DebuggerControl.ImportProgress(progress: String(decoding: try JSONEncoder().encode(progress), as: UTF8.self), session: nil)
    }
}

/// Why a debugger request cannot be done, in words that fit every front end (parleyctl and the web show them): what
/// happened and what is there, never a command or a button. A front end adds its own way on, by the error's code.
enum DebuggerError: Error, CustomStringConvertible {
    case firstOfSession(Int64, session: Int64)
    case noSuchApp(String, connected: [Peer])
    case sessionAppGone(SessionSummary, connected: [Peer])
    case noApps
    case diffTooLarge(bytes: Int, limit: Int)
    case diffTooSlow(limit: Duration)

    var description: String {
        switch self {
        case .firstOfSession(let sequence, let session):
            "entry \(sequence) is the first of session \(session): there is nothing before it to compare with"
        case .noSuchApp(let selector, let connected):
            "no connected debugger app matches \"\(selector)\"" + Self.list(connected)
        case .sessionAppGone(let session, let connected):
            "the app of session \(session.id) (\(session.appName)) is not connected" + Self.list(connected)
        case .noApps:
            "no debugger app is connected"
        case .diffTooSlow(let limit):
            "the diff ran longer than diffTimeLimit (\(limit.components.seconds) s) and was given up; raise diffTimeLimit in parleyd's configuration to allow it"
        case .diffTooLarge(let bytes, let limit):
            "the two states are \(bytes) bytes together, above diffMaxBytes (\(limit)): a diff of states this large takes seconds of CPU and several times their size in memory; raise diffMaxBytes in parleyd's configuration to allow it"
        }
    }

    private static func list(_ apps: [Peer]) -> String {
        apps.isEmpty ? " (no debugger app is connected)" : "; connected apps: " + apps.map(\.label).joined(separator: ", ")
    }
}
