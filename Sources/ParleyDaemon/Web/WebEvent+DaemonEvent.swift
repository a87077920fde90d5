import ParleyWeb

extension WebEvent {
    /// A daemon event as pages hear it: a session that starts is live, one that ends is not; a batch of log records
    /// and spans is one event for its session.
    init(_ event: DaemonEvent) {
        switch event {
        case .entry(let entry): self = .entry(entry)
        case .telemetry(let session, let logs, let spans): self = .telemetry(WebTelemetry(session: session, logs: logs, spans: spans))
        case .sessionStarted(let session): self = .sessionStarted(WebSession(summary: session, live: true))
        case .sessionEnded(let session): self = .sessionEnded(WebSession(summary: session, live: false))
        case .sessionDeleted(let id): self = .sessionDeleted(id: id)
        case .peersChanged: self = .peersChanged
        case .drawer(let drawer): self = .drawer(drawer)
        }
    }
}
