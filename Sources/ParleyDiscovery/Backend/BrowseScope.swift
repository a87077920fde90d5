/// What one browser looks for: a type in one domain ("local" for the link, else a unicast DNS domain).
package struct BrowseScope: Hashable, Sendable {
    package var type: ServiceType
    package var domain: String

    package init(_ type: ServiceType, domain: String?) {
        self.type = type
        self.domain = domain ?? "local"
    }

    /// Browsed through the system's DNS servers (wide-area DNS-SD), not by multicast on the link.
    package var isWideArea: Bool { !sameDomain(domain, "local") }
}
