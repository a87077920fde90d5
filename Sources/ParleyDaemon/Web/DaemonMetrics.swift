import Metrics
import Parley
import ParleyHistory
import ParleyOTLP
import Prometheus
import Synchronization

/// parleyd's metrics in Prometheus' text format, through swift-metrics with a factory of parleyd's own (no global
/// bootstrap, so that several parleyds can run in one test process). The transceiver keeps its counts in atomics
/// on the hot path; they are read when someone scrapes `/metrics`, and the counters here advance by the difference.
final class DaemonMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    private let transceiver: Transceiver
    private let store: HistoryStore
    private let telemetry: TelemetryCounts
    private let forwarder: OTLPForwarder?
    /// The counts at the previous scrape.
    private let reported = Mutex<[String: Int]>([:])

    init(transceiver: Transceiver, store: HistoryStore, telemetry: TelemetryCounts = TelemetryCounts(), forwarder: OTLPForwarder? = nil) {
        self.forwarder = forwarder
        self.transceiver = transceiver
        self.store = store
        self.telemetry = telemetry
        factory = PrometheusMetricsFactory(registry: registry)
    }

    func exposition() async -> String {
        let statistics = transceiver.statistics
        var counters: [(label: String, dimensions: [(String, String)], value: Int)] = [
            ("parley_messages_total", [("direction", "in")], statistics.messagesReceived),
            ("parley_messages_total", [("direction", "out")], statistics.messagesSent),
            ("parley_payload_bytes_total", [("direction", "in")], statistics.payloadBytesReceived),
            ("parley_payload_bytes_total", [("direction", "out")], statistics.payloadBytesSent),
            ("parley_handshake_failures_total", [], statistics.handshakeFailures),
            ("parley_dropped_messages_total", [("reason", "unknown-type")], statistics.unknownType),
            ("parley_dropped_messages_total", [("reason", "undecodable")], statistics.undecodable),
            ("parley_dropped_messages_total", [("reason", "handler-failed")], statistics.handlerFailures),
            ("parley_dropped_messages_total", [("reason", "late-reply")], statistics.lateReplies),
            ("parley_closed_connections_total", [("reason", "protocol-error")], statistics.protocolErrors),
            ("parley_closed_connections_total", [("reason", "slow-peer")], statistics.slowPeersDropped),
            ("parley_closed_connections_total", [("reason", "idle")], statistics.idleConnectionsClosed),
            ("parley_closed_connections_total", [("reason", "rate-limit")], statistics.rateLimitedConnections),
            ("parley_closed_connections_total", [("reason", "memory-budget")], statistics.budgetEvictions),
            ("parley_closed_connections_total", [("reason", "stalled-frame")], statistics.stalledFrames),
            ("parley_closed_connections_total", [("reason", "silent")], statistics.silentConnectionsClosed),
            ("parley_closed_connections_total", [("reason", "no-sealed-close")], statistics.endsWithoutSealedClose),
            ("parley_refused_connections_total", [], statistics.connectionsRefused),
            ("parley_telemetry_stored_total", [("kind", "log")], telemetry.logsStored.load(ordering: .relaxed)),
            ("parley_telemetry_stored_total", [("kind", "span")], telemetry.spansStored.load(ordering: .relaxed)),
            ("parley_telemetry_refused_total", [("unit", "record")], telemetry.recordsRefused.load(ordering: .relaxed)),
            ("parley_telemetry_refused_total", [("unit", "batch")], telemetry.batchesRefused.load(ordering: .relaxed)),
        ]
        if let forwarder {
            let counts = forwarder.counts
            for signal in [OTLPSignal.logs, .traces] {
                counters.append(("parley_otlp_forward_sent_total", [("signal", signal.rawValue)], counts.sent(signal)))
                for reason in OTLPForwardCounts.DropReason.allCases {
                    counters.append(
                        ("parley_otlp_forward_dropped_total", [("signal", signal.rawValue), ("reason", reason.rawValue)], counts.dropped(signal, reason: reason)))
                }
            }
            counters.append(("parley_otlp_forward_failed_requests_total", [], counts.failedRequests))
        }
        let deltas = reported.withLock { reported in
            counters.map { counter -> Int in
                let key = counter.label + counter.dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
                defer { reported[key] = counter.value }
                return counter.value - (reported[key] ?? 0)
            }
        }
        for (counter, delta) in zip(counters, deltas) {
            // Created every time: the factory hands back the one registered under this name and these labels.
            // Incremented by 0 too: a counter is shown from the first scrape on, not only once it moved.
            Counter(label: counter.label, dimensions: counter.dimensions, factory: factory).increment(by: max(0, delta))
        }
        let open = transceiver.openConnections
        Gauge(label: "parley_connections", dimensions: [("kind", "tcp")], factory: factory).record(open.tcp)
        Gauge(label: "parley_connections", dimensions: [("kind", "local")], factory: factory).record(open.local)
        let peers = transceiver.peers
        Gauge(label: "parley_peers", dimensions: [("kind", "lan")], factory: factory).record(peers.filter { !$0.isLocal }.count)
        Gauge(label: "parley_peers", dimensions: [("kind", "local")], factory: factory).record(peers.filter(\.isLocal).count)
        if let forwarder {
            for signal in [OTLPSignal.logs, .traces] {
                Gauge(label: "parley_otlp_forward_queue", dimensions: [("signal", signal.rawValue)], factory: factory).record(forwarder.queued(signal))
            }
        }
        if let totals = try? await store.totals() {
            Gauge(label: "parley_history_entries", factory: factory).record(totals.entries)
            Gauge(label: "parley_history_bytes", factory: factory).record(Double(totals.bytes))
        }
        return registry.emitToString()
    }
}
