import Parley

/// What parleyd says of its OTLP/HTTP receiver in its DNS-SD TXT record, and how a client on another host reads it
/// back into the endpoint an OpenTelemetry SDK is given (`OTEL_EXPORTER_OTLP_ENDPOINT`).
///
/// parleyd advertises the receiver only when it listens beyond loopback: one on 127.0.0.1 cannot be reached from
/// another host, and a client on parleyd's own host asks parleyd over its control socket instead. A receiver beyond
/// loopback always needs the web debugger's token (parleyd refuses to start otherwise), so the key also says that
/// an exporter must send it.
public enum OTLPAdvertisement {
    /// The TXT key: `otlp=4318` for a receiver on every address of the host, `otlp=192.168.1.20:4318` (or
    /// `otlp=[fd00::20]:4318`) for one on a single address.
    public static let txtKey = "otlp"

    /// The TXT value for a receiver listening on `host` at `port`, or nil when it should not be advertised (it
    /// listens on loopback only).
    public static func txtValue(host: String, port: Int) -> String? {
        if isLoopback(host) { return nil }
        if isWildcard(host) { return String(port) }
        return Endpoint(host: host, port: port).description
    }

    /// The endpoint (`http://ADDRESS:PORT`) of the receiver `service` advertises, or nil when it advertises none or
    /// its value is not one parleyd writes. For a receiver on every address, the address is one of the service's:
    /// an IPv4 address first, then an IPv6 address that is not link-local (an exporter's URL cannot carry the
    /// interface a link-local one needs), else the service's host name.
    public static func endpoint(of service: DiscoveredService) -> String? {
        guard let value = service.txt[txtKey], !value.isEmpty else { return nil }
        if let port = Int(value) {
            guard (1...65535).contains(port) else { return nil }
            let addresses = service.addresses.filter { !$0.isLinkLocal }
            let host =
                addresses.first { $0.family == .ipv4 }?.connectHost ?? addresses.first?.connectHost
                ?? service.hostName.trimmingSuffix(".")
            guard !host.isEmpty else { return nil }
            return url(host: host, port: port)
        }
        guard let endpoint = Endpoint(value), endpoint.port > 0 else { return nil }
        return url(host: endpoint.host, port: endpoint.port)
    }

    /// `http://HOST:PORT`, an IPv6 address in brackets.
    public static func url(host: String, port: Int) -> String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    static func isWildcard(_ host: String) -> Bool { host == "0.0.0.0" || host == "::" || host == "[::]" }

    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
