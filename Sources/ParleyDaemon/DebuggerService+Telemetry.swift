import Foundation
import Logging
import NIOCore
import Parley
import ParleyBlocking
import ParleyControl
import ParleyDebugger
import ParleyHistory
import ParleyJSON
import ParleyTelemetry
import Synchronization

/// parleyd's side of an app's logs and traces: the `parley.telemetry.Batch` messages apps send are checked (a batch
/// past its size, or not JSON, is refused whole; a record that cannot be kept alone; what is too long is cut) and
/// stored in the app's session, beside its states; the `parley.telemetry.*` control requests read them back.
///
/// Nothing an app sends here ends its connection: a refused batch or record costs only a (throttled) warning
/// naming the app and why, and its other messages, and other apps, go on as before.
extension DebuggerService {
    func installTelemetry() {
        // Handlers run in order per connection, so each connection's batches reach the store in that order; the
        // store keeps it, taking batches that wait together into one transaction. What follows storing (telling
        // pages and followers) runs in the same order, in one lane per connection, while the connection's next
        // batches are decoded and wait for the store (at most the lane's depth of them).
        // The session is found here, in the connection's order, not in the lane: the connection's states (another
        // handler) and batches go to the one session begun for it.
        transceiver.receiveRaw(typeName: TelemetryBatch.messageType) { [self] message, peer in
            guard let received = await check(telemetry: message.payload, from: peer) else { return }
            let session: Int64
            do {
                session = try await sessionID(for: peer)
            } catch {
                notStored(received, from: peer, error)
                return
            }
            let append = store.enqueueTelemetry(received.batch, to: session)
            await telemetryLanes.add(peer.connectionID) { [self] in
                do {
                    try await stored(append, appName: peer.name, peerID: peer.id.rawValue)
                } catch {
                    notStored(received, from: peer, error)
                }
            }
        }
        // Pages of up to 500 records of up to a few hundred KiB each: coded off the event loops.
        local(TelemetryControl.Logs.self, heavy: true) { [store] request in
            var query = request.query
            query.limit = min(max(0, query.limit), TelemetryControl.Logs.pageSize)
            return TelemetryControl.LogPage(page: Self.fitted(try await store.logs(query), id: \.id) { Self.estimatedSize(of: $0.record) })
        }
        transceiver.respond(to: TelemetryControl.FollowLogs.self, localOnly: true) { [self] request, client in
            try await ControlRefusal.coding {
                // A pattern that is not one is refused now, not silently matched against nothing later.
                _ = try LogFollow(request.query)
                // Registered before the newest id is read: a record stored in between is both sent and at most that
                // id, and the client prints each id once.
                logFollowers.withLock { $0[client.id] = request.query }
                return TelemetryControl.FollowingLogs(lastID: try await store.newestLogID())
            }
        }
        local(TelemetryControl.Traces.self) { [store] request in
            let limit = min(max(1, request.limit), TelemetryControl.Traces.pageSize)
            return TelemetryControl.TraceList(traces: try await store.traces(session: request.session, app: request.app, limit: limit))
        }
        local(TelemetryControl.Trace.self, heavy: true) { [store] request in
            TelemetryControl.TraceDetail(spans: try await store.trace(request.traceID))
        }
        local(TelemetryControl.Spans.self, heavy: true) { [store] request in
            let limit = min(max(0, request.limit), TelemetryControl.Spans.pageSize)
            let page = try await store.spans(session: request.session, kind: request.kind, after: request.after, limit: limit)
            return TelemetryControl.SpanPage(page: Self.fitted(page, id: \.id) { Self.estimatedSize(of: $0.span) })
        }
    }

    // MARK: - Receiving

    /// Checks a batch an app sent: what of it may be stored, with a warning for what may not; nil when nothing may.
    func check(telemetry payload: ByteBuffer, from peer: Peer) async -> ReceivedTelemetry? {
        let metadata = Self.metadata(of: peer, bytes: payload.readableBytes)
        let received: ReceivedTelemetry
        do {
            received = try await ReceivedTelemetry.check(payload, limits: .default)
        } catch {
            telemetryCounts.batchesRefused.add(1, ordering: .relaxed)
            transceiver.logThrottle.warning(
                "telemetry batch refused; nothing of it was stored", metadata: metadata.merging(["reason": "\(error)"]) { $1 }, to: logger)
            return nil
        }
        if let first = received.refused.first {
            telemetryCounts.recordsRefused.add(received.refused.count, ordering: .relaxed)
            transceiver.logThrottle.warning(
                "telemetry records refused; the rest of their batch is stored",
                metadata: metadata.merging(["refused": "\(received.refused.count)", "reason": "\(first)"]) { $1 }, to: logger)
        }
        if !received.cuts.isEmpty {
            transceiver.logThrottle.warning(
                "telemetry records cut to the limits (docs/protocol.md); the rest of them is stored",
                metadata: metadata.merging(["texts-cut": "\(received.cuts.textsCut)", "items-dropped": "\(received.cuts.itemsDropped)"]) { $1 },
                to: logger)
        }
        return received.batch.isEmpty ? nil : received
    }

    private func notStored(_ received: ReceivedTelemetry, from peer: Peer, _ error: any Error) {
        telemetryCounts.recordsRefused.add(received.batch.count, ordering: .relaxed)
        transceiver.logThrottle.warning(
            "telemetry batch not stored", metadata: Self.metadata(of: peer, bytes: nil).merging(["reason": "\(error)"]) { $1 }, to: logger)
    }

    private static func metadata(of peer: Peer, bytes: Int?) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["peer-id": "\(peer.id)", "peer-name": "\(peer.name)"]
        if let bytes { metadata["bytes"] = "\(bytes)" }
        return metadata
    }

    /// Stores checked records in `session` (of the app `appName`, peer id `peerID`), tells the open web pages and
    /// the local clients following log records, and hands them to the forwarder (`otlpForward`) under `resource`
    /// (an OTLP exporter's own; for a Swift app, its name and peer id as `service.name` and `service.instance.id`).
    @discardableResult
    func storeTelemetry(
        _ batch: TelemetryBatch, session: Int64, appName: String, peerID: String, resource: TelemetryAttributes? = nil
    ) async throws(HistoryStoreError) -> TelemetryAppend.Stored {
        try await stored(store.enqueueTelemetry(batch, to: session), appName: appName, peerID: peerID, resource: resource)
    }

    /// Waits for an enqueued batch to be stored, then does what ``storeTelemetry(_:session:appName:peerID:resource:)``
    /// says follows.
    @discardableResult
    private func stored(
        _ append: TelemetryAppend, appName: String, peerID: String, resource: TelemetryAttributes? = nil
    ) async throws(HistoryStoreError) -> TelemetryAppend.Stored {
        let stored = try await append.stored()
        let session = append.session
        forwarder?.enqueue(append.batch, resource: resource ?? Self.resource(appName: appName, peerID: peerID))
        telemetryCounts.logsStored.add(stored.logs.count, ordering: .relaxed)
        telemetryCounts.spansStored.add(stored.spans.count, ordering: .relaxed)
        logger.debug("telemetry stored", metadata: ["session": "\(session)", "logs": "\(stored.logs.count)", "spans": "\(stored.spans.count)"])
        events.publish(.telemetry(session: session, logs: stored.logs, spans: stored.spans))
        await notifyLogFollowers(of: stored.logs, session: session, appName: appName, peerID: peerID)
        return stored
    }

    /// A Swift app as an OpenTelemetry resource: what a receiver parleyd forwards to names its service by.
    static func resource(appName: String, peerID: String) -> TelemetryAttributes {
        [
            "service.name": .string(appName), "service.instance.id": .string(peerID),
            "telemetry.sdk.name": .string("parley"), "telemetry.sdk.language": .string("swift"),
        ]
    }

    /// Sends stored log records to each local client following them, in order; as ``notifyFollowers(of:)`` does for
    /// states, a client that takes nothing for the slow-peer timeout stops following.
    private func notifyLogFollowers(of logs: [StoredLogRecord], session: Int64, appName: String, peerID: String) async {
        guard !logs.isEmpty else { return }
        let following = logFollowers.withLock { $0 }
        for (client, query) in following {
            if let wanted = query.session, wanted != session { continue }
            if let app = query.app, !PeerSelector.matches(app, id: peerID, name: appName) { continue }
            guard let follow = try? LogFollow(query) else { continue }
            var matching = logs.filter(follow.includes)
            if let text = query.text, let first = matching.first {
                // The words of a message as the listing finds them: through the store's full-text index.
                let found = try? await store.logs(LogQuery(session: session, text: text, after: first.id - 1, limit: logs.count))
                let ids = Set(found?.items.map(\.id) ?? [])
                matching = matching.filter { ids.contains($0.id) }
            }
            do {
                for record in matching {
                    try await transceiver.send(
                        TelemetryControl.LogAppended(record: record), to: client, stallTimeout: transceiver.configuration.slowPeerTimeout)
                }
            } catch {
                _ = logFollowers.withLock { $0.removeValue(forKey: client) }
                logger.warning("local client not taking log records; it no longer follows", metadata: ["peer-id": "\(client)", "reason": "\(error)"])
            }
        }
    }

    // MARK: - Pages that fit a frame

    /// A page cut short (at least one item kept) where its items' estimated size passes a quarter of the frame
    /// limit: records may be large (a 32 KiB message, 128 attributes of 8 KiB), and a page must fit one reply.
    static func fitted<Item>(
        _ page: HistoryPage<Item>, id: (Item) -> Int64, maxBytes: Int = 16 << 20, size: (Item) -> Int
    ) -> HistoryPage<Item> {
        var total = 0
        for (index, item) in page.items.enumerated() {
            total += size(item)
            if total > maxBytes, index > 0 {
                return HistoryPage(items: Array(page.items[..<index]), total: page.total, nextAfter: id(page.items[index - 1]))
            }
        }
        return page
    }

    static func estimatedSize(of record: LogRecord) -> Int {
        128 + record.message.utf8.count * 2 + record.label.utf8.count + record.file.utf8.count + record.function.utf8.count
            + estimatedSize(of: record.metadata)
    }

    static func estimatedSize(of span: SpanRecord) -> Int {
        256 + span.name.utf8.count + (span.status.message?.utf8.count ?? 0) + estimatedSize(of: span.attributes)
            + span.events.reduce(0) { $0 + 64 + $1.name.utf8.count + estimatedSize(of: $1.attributes) }
            + span.links.reduce(0) { $0 + 96 + estimatedSize(of: $1.attributes) }
    }

    private static func estimatedSize(of attributes: TelemetryAttributes) -> Int {
        attributes.reduce(0) { $0 + 8 + $1.key.utf8.count * 2 + estimatedSize(of: $1.value) }
    }

    /// Escaping may double a text; numbers take some twenty characters.
    private static func estimatedSize(of value: TelemetryValue) -> Int {
        switch value {
        case .string(let text): 2 + text.utf8.count * 2
        case .bool, .int, .double: 24
        case .array(let items): 2 + items.reduce(0) { $0 + 1 + estimatedSize(of: $1) }
        case .map(let items): estimatedSize(of: items)
        }
    }
}

/// Counts of what came of the apps' log records and spans, for parleyd's metrics.
final class TelemetryCounts: Sendable {
    let logsStored = Atomic<Int>(0)
    let spansStored = Atomic<Int>(0)
    /// Records refused alone (invalid ids, missing fields) or with their batch's session (a storage failure).
    let recordsRefused = Atomic<Int>(0)
    /// Batches refused whole: too large, too many records, not JSON.
    let batchesRefused = Atomic<Int>(0)

    init() {}
}

/// The filters of a ``LogQuery`` that a record is checked against in memory (all but its text): what a local
/// client following log records is sent.
struct LogFollow {
    let query: LogQuery
    let label: ActionGlob?

    init(_ query: LogQuery) throws(HistoryStoreError) {
        self.query = query
        do {
            label = try query.label.map { pattern throws(ActionFilterError) in try ActionGlob(pattern) }
        } catch {
            throw .invalidLabelPattern(error)
        }
    }

    func includes(_ stored: StoredLogRecord) -> Bool {
        if let minimum = query.minimumSeverity, stored.record.severity < minimum { return false }
        if let since = query.since, stored.record.time < since { return false }
        if let label, !label.matches(stored.record.label) { return false }
        return true
    }
}

/// A `parley.telemetry.Batch` as parleyd takes it in: checked against the limits, its records cut, and each record
/// that cannot be kept (a span whose ids are not ids, a record without its time) left out and named.
struct ReceivedTelemetry: Sendable {
    var batch: TelemetryBatch
    var cuts: TelemetryCuts
    /// Why each record left out was, in order: `spans[2].traceId: a trace id is 32 hexadecimal digits, not all zero`.
    var refused: [String]

    /// A payload past the batch limit is refused before anything of it is read; decoding, which takes a while for
    /// megabytes, runs on the blocking pool, off the event loop that reads the app's connection.
    static func check(_ payload: ByteBuffer, limits: TelemetryLimits) async throws(TelemetryBatchProblem) -> ReceivedTelemetry {
        let size = payload.readableBytes
        guard size <= limits.maximumBatchBytes else { throw .tooLarge(bytes: size, limit: limits.maximumBatchBytes) }
        let outcome: Result<ReceivedTelemetry, TelemetryBatchProblem>
        do {
            outcome = try await BlockingPool.shared.run {
                var refused: [String] = []
                return Result { () throws(TelemetryBatchProblem) in
                    // Checked whole first: the decoder finds bytes that are not UTF-8 only in the string it is reading,
                    // which would refuse that one record, with words of the decoder's internals.
                    if let offset = invalidUTF8(payload.readableBytesView) {
                        throw .malformed("its text is not UTF-8 (at byte \(offset))")
                    }
                    let (batch, cuts) = try limits.check(byteCount: size) {
                        let tree = try JSONValue(parsing: payload)
                        if let batch = LenientBatch.clean(tree) { return batch }
                        // A record in it is refused: read again record by record, through the records' own Decodable
                        // over the same tree (JSONValueDecoder), to keep the others and name each one refused.
                        let lenient = try JSONValueDecoder().decode(LenientBatch.self, from: tree)
                        refused = lenient.refused
                        return lenient.batch
                    }
                    return ReceivedTelemetry(batch: batch, cuts: cuts, refused: refused)
                }
            }
        } catch {
            throw .malformed("parleyd could not check it: \(error)")
        }
        return try outcome.get()
    }
}

/// The offset of the first byte of `bytes` that is not part of valid UTF-8, or nil when all of it is.
func invalidUTF8(_ bytes: ByteBufferView) -> Int? {
    if String(validating: bytes, as: UTF8.self) != nil { return nil }
    var decoder = UTF8()
    var iterator = bytes.makeIterator()
    var offset = 0
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue(let scalar): offset += UTF8.width(scalar)
        case .emptyInput: return nil
        case .error: return offset
        }
    }
}

/// `{"logs": [...], "spans": [...]}` with each record decoded on its own: one that does not decode is named in
/// ``refused`` and the others are kept. JSON that is not JSON, or not of this shape, still fails whole.
private struct LenientBatch: Decodable {
    var batch = TelemetryBatch()
    var refused: [String] = []

    enum Keys: String, CodingKey { case logs, spans }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        batch.logs = try records(LogRecord.self, container, .logs)
        batch.spans = try records(SpanRecord.self, container, .spans)
    }

    /// The batch, when every record in it reads: log records straight from the tree (`LogRecord(reading:)`, a
    /// fraction of their `Decodable`'s cost, which is what parleyd's rate of stored records was bound by), spans
    /// through their `Decodable`. Nil when any record does not, or the batch is not of this shape.
    static func clean(_ tree: JSONValue) -> TelemetryBatch? {
        guard case .object = tree else { return nil }
        var batch = TelemetryBatch()
        switch tree["logs"] {
        case nil, .null?: break
        case .array(let elements)?:
            batch.logs.reserveCapacity(elements.count)
            for element in elements {
                guard let record = LogRecord(reading: element) else { return nil }
                batch.logs.append(record)
            }
        default: return nil
        }
        switch tree["spans"] {
        case nil, .null?: break
        case .array(let elements)?:
            let decoder = JSONValueDecoder()
            batch.spans.reserveCapacity(elements.count)
            for element in elements {
                guard let span = try? decoder.decode(SpanRecord.self, from: element) else { return nil }
                batch.spans.append(span)
            }
        default: return nil
        }
        return batch
    }

    private mutating func records<Record: Decodable>(_ type: Record.Type, _ container: KeyedDecodingContainer<Keys>, _ key: Keys) throws -> [Record] {
        guard container.contains(key), try !container.decodeNil(forKey: key) else { return [] }
        var list = try container.nestedUnkeyedContainer(forKey: key)
        var records: [Record] = []
        while !list.isAtEnd {
            switch try list.decode(OneRecord<Record>.self).outcome {
            case .success(let record): records.append(record)
            case .failure(let problem): refused.append(problem.description)
            }
        }
        return records
    }
}

/// One record of a batch, or why it is not one.
private struct OneRecord<Record: Decodable>: Decodable {
    let outcome: Result<Record, RecordProblem>

    init(from decoder: any Decoder) {
        do {
            outcome = .success(try Record(from: decoder))
        } catch {
            outcome = .failure(RecordProblem(error))
        }
    }
}

/// The decoder's error as a person reads it: where in the batch, and what is wrong there.
private struct RecordProblem: Error, CustomStringConvertible {
    let description: String

    init(_ error: any Error) {
        guard let error = error as? DecodingError else {
            description = "\(error)"
            return
        }
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.hasPrefix(".") ? String(path.dropFirst()) + ": " : path + ": "
        }
        switch error {
        case .keyNotFound(let key, let context): description = at(context) + "\"\(key.stringValue)\" is missing"
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            description = at(context) + context.debugDescription
        @unknown default: description = "\(error)"
        }
    }
}
