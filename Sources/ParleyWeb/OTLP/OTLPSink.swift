import ParleyOTLP

/// Where the OTLP receiver hands what it decoded: parleyd's history. Implemented by parleyd; tests use their own.
public protocol OTLPSink: Sendable {
    /// Stores an export's records, each resource in the session of its service instance; `client` is the address
    /// the request came from (the session's key when a resource names no service).
    func store(_ export: OTLPExport, signal: OTLPSignal, client: String) async -> OTLPStoreOutcome
}

/// What became of an export.
public enum OTLPStoreOutcome: Sendable, Hashable {
    /// Stored, except `rejected` items (counted with the decoder's own refusals), for `reason`.
    case stored(rejected: Int, reason: String?)
    /// Nothing stored; the sender should try again after this many seconds (503 with `Retry-After`).
    case unavailable(retryAfterSeconds: Int, reason: String)
}
