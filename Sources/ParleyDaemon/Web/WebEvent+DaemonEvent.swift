import ParleyWeb

extension WebEvent {
    /// A daemon event as pages hear it: a session that starts is live, one that ends is not. Nil for an event the
    /// pages do not hear.
    init?(_ event: DaemonEvent) {
        switch event {
        case .entry(let entry): self = .entry(entry)
        case .telemetry: return nil
        case .sessionStarted(let session): self = .sessionStarted(WebSession(summary: session, live: true))
        case .sessionEnded(let session): self = .sessionEnded(WebSession(summary: session, live: false))
        case .sessionDeleted(let id): self = .sessionDeleted(id: id)
        case .peersChanged: self = .peersChanged
        case .drawer(let drawer): self = .drawer(drawer)
        }
    }
}
