import Foundation
import Logging
import ParleyDebugger
import ParleyHistory
import ParleyOTLP
import ParleyTelemetry
import ParleyWeb

/// Stores what the OTLP receiver decoded in the history: each service instance (`service.name` and
/// `service.instance.id`, else the address it exports from) records into a session of kind `otlp`, with its
/// resource's attributes, as a Swift app records into its own. OTLP has no connection to end a session by: one
/// ends when its instance has sent nothing for ``idleEnd``, and its next export begins a new one.
actor OTLPHistorySink: OTLPSink {
    /// How long an instance may be silent before its session ends. OpenTelemetry SDKs export every few seconds
    /// while there is anything to send.
    static let idleEnd = Duration.seconds(600)

    private let store: HistoryStore
    /// Stores through the debugger service, so that OTLP records reach `parleyctl logs -f` and the metrics as an
    /// app's do.
    private let debugger: DebuggerService
    private let logger: Logger
    private let clock = ContinuousClock()
    private var sessions: [String: (id: Int64, lastExport: ContinuousClock.Instant)] = [:]

    init(store: HistoryStore, debugger: DebuggerService, logger: Logger) {
        self.store = store
        self.debugger = debugger
        self.logger = logger
    }

    func store(_ export: OTLPExport, signal: OTLPSignal, client: String) async -> OTLPStoreOutcome {
        await endIdleSessions()
        var refused = 0
        var reason: String?
        for resource in export.resources where !resource.batch.isEmpty {
            if let forwarder = debugger.forwarder, forwarder.cameBack(resource.attributes, batch: resource.batch) { continue }
            var batch = resource.batch
            let cuts = TelemetryLimits.default.apply(to: &batch)
            if !cuts.isEmpty {
                // As an app's are (DebuggerService+Telemetry): a warning, through the log throttle.
                debugger.transceiver.logThrottle.warning(
                    "OTLP records cut to the limits (docs/protocol.md); the rest of them is stored",
                    metadata: ["client": "\(client)", "texts-cut": "\(cuts.textsCut)", "items-dropped": "\(cuts.itemsDropped)"], to: logger)
            }
            do {
                let (session, appName, peerID) = try await session(for: resource, client: client)
                _ = try await debugger.storeTelemetry(batch, session: session, appName: appName, peerID: peerID, resource: resource.attributes)
            } catch {
                if case .database(_, let failure) = error, failure.kind == .diskFull || failure.kind == .busy {
                    // Nothing of this export is lost if the exporter sends it again later, which OTLP exporters do.
                    return .unavailable(retryAfterSeconds: failure.kind == .diskFull ? 60 : 1, reason: "parleyd cannot store now: \(error)")
                }
                refused += batch.count
                reason = reason ?? "\(error)"
                logger.warning("OTLP records not stored", metadata: ["client": "\(client)", "records": "\(batch.count)", "reason": "\(error)"])
            }
        }
        return .stored(rejected: refused, reason: reason)
    }

    /// The open session of the resource's instance, begun now if it has none, with the name and peer id it is
    /// recorded under.
    private func session(for resource: OTLPExport.Resource, client: String) async throws(HistoryStoreError) -> (Int64, String, String) {
        let name = resource.serviceName
        let key = "\(name ?? "")/\(resource.instanceID ?? client)"
        let appName = TelemetryLimits.cut(name ?? "OpenTelemetry \(client)", toBytes: 63)
        if let known = sessions[key] {
            sessions[key] = (known.id, clock.now)
            return (known.id, appName, "otlp:" + key)
        }
        var attributes = resource.attributes
        var cuts = TelemetryCuts()
        _ = TelemetryLimits.default.apply(to: &attributes, cuts: &cuts)
        let session = try await store.beginSession(
            peerID: "otlp:" + key, appName: appName, kind: .otlp, host: client,
            resource: attributes)
        sessions[key] = (session.id, clock.now)
        debugger.events.publish(.sessionStarted(session))
        logger.info("an OpenTelemetry service began a session", metadata: ["session": "\(session.id)", "service": "\(session.appName)", "client": "\(client)"])
        return (session.id, appName, "otlp:" + key)
    }

    /// Ends the sessions of instances silent for ``idleEnd``.
    func endIdleSessions() async {
        let now = clock.now
        for (key, session) in sessions where now - session.lastExport >= Self.idleEnd {
            sessions[key] = nil
            await end(session.id)
        }
    }

    /// Ends every open session (parleyd is stopping).
    func endAll() async {
        let open = sessions.values.map(\.id)
        sessions = [:]
        for id in open { await end(id) }
    }

    private func end(_ id: Int64) async {
        do {
            try await store.endSession(id)
            if let ended = try? await store.session(id) { debugger.events.publish(.sessionEnded(ended)) }
        } catch {
            logger.warning("cannot end an OpenTelemetry session", metadata: ["session": "\(id)", "reason": "\(error)"])
        }
    }
}
