import ArgumentParser
import Foundation
import Logging
import ParleyAvahi
import ParleyDiscovery

struct Browse: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the services of a type on the LAN, straight from avahi-daemon (no parleyd needed).",
        discussion: """
            Browses for --timeout seconds, then prints each service still present:
            instance name, host, addresses (with their interface), port and TXT
            record; with --json one object per line. Fails (status 1) if avahi-daemon
            cannot be reached.

            With --domain, also browses that unicast DNS domain (wide-area DNS-SD, through
            the DNS servers avahi-daemon uses; it needs enable-wide-area=yes in
            avahi-daemon.conf); each service shows the domain it was found in.

            Examples:
              parleyctl browse
              parleyctl browse --domain office.example.org
              parleyctl browse --type _http._tcp --timeout 5 --json
            """
    )

    @Option(help: "Seconds to browse before printing.")
    var timeout: Double = 3

    @Option(name: .customLong("type"), help: "DNS-SD service type.")
    var serviceType = ServiceType.debug.rawValue

    @Option(name: .customLong("domain"), help: ArgumentHelp("A unicast DNS domain to browse as well as the link (repeatable).", valueName: "domain"))
    var domains: [String] = []

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error or critical.")
    var logLevel = "error"

    @OptionGroup var format: OutputOptions

    func validate() throws {
        try validatePositive(timeout, "--timeout")
        do { _ = try ServiceType(serviceType) } catch { throw ValidationError("--type: \(error)") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \"\(logLevel)\"") }
    }

    func run() async throws {
        bootstrapLogging(logLevel)
        let type = try ServiceType(serviceType)
        let found = try await ServiceBrowser.browse(type, domains: domains, for: seconds(timeout))
        if format.json {
            for service in found { Output.json(ServiceRecord(service)) }
            return
        }
        if found.isEmpty {
            Output.error("parleyctl: no \(type) services found within \(timeout) s")
            return
        }
        for service in found {
            Output.line("\(service.instanceName.shown)  (\(service.type).\(service.domain))")
            Output.line("  host:      \(service.hostName.shown)")
            Output.line("  port:      \(service.port)")
            Output.line("  addresses: \(service.addresses.map { address in address.connectHost + (address.interfaceName.map { " (\($0))" } ?? "") }.joined(separator: ", "))")
            Output.line("  txt:       \(service.txt.entries.map { entry in entry.value == nil ? entry.key : "\(entry.key)=\(entry.stringValue ?? "<\(entry.value!.count) bytes>")" }.joined(separator: " "))")
        }
    }
}

/// Browsing through avahi-daemon for a while, as `browse` and `otel-env` do.
enum ServiceBrowser {
    /// The services of `type` still present after `duration`, or as soon as `enough` holds of those found: the link
    /// first, then each wide-area domain. Fails (status 1) when nothing was found and avahi-daemon could not be
    /// reached.
    static func browse(
        _ type: ServiceType, domains: [String] = [], for duration: Duration, until enough: @escaping ([DiscoveredService]) -> Bool = { _ in false }
    ) async throws -> [DiscoveredService] {
        let discovery = AvahiDiscovery(logger: Logger(label: "parleyctl"))
        try discovery.start()
        discovery.browse(type)
        for domain in domains { discovery.browse(type, domain: domain) }

        var services: [DiscoveredService.ID: DiscoveredService] = [:]
        var unavailable: String?
        await withTaskGroup(of: Void.self) { group in
            // Stopping finishes the event stream, which ends the loop below.
            group.addTask {
                try? await Task.sleep(for: duration)
                discovery.stop()
            }
            for await event in discovery.events {
                switch event {
                case .found(let service), .updated(let service):
                    services[service.id] = service
                    if enough(Array(services.values)) { discovery.stop() }
                case .removed(let name, _, let domain): services[DiscoveredService.ID(instanceName: name, domain: domain)] = nil
                case .daemonUnavailable(let reason): unavailable = reason
                case .daemonAvailable: unavailable = nil
                case .advertised, .renamed, .advertisementFailed: break
                }
            }
            group.cancelAll()
        }

        if services.isEmpty, let unavailable {
            throw CtlFailure(.error, "cannot browse \(type): avahi-daemon is not reachable (\(unavailable))")
        }
        return services.values.sorted {
            ($0.domain == "local" ? 0 : 1, $0.instanceName, $0.domain) < ($1.domain == "local" ? 0 : 1, $1.instanceName, $1.domain)
        }
    }
}

/// A service in JSON output; TXT values that are not UTF-8 text appear as base64 under `txtBase64`.
private struct ServiceRecord: Encodable {
    struct Address: Encodable {
        var address: String
        var family: String
        var interface: String?
        var linkLocal: Bool
    }

    var instance: String
    var type: String
    var domain: String
    var host: String
    var port: UInt16
    var addresses: [Address]
    var txt: [String: String?]
    var txtBase64: [String: String]?

    init(_ service: DiscoveredService) {
        instance = service.instanceName
        type = service.type.rawValue
        domain = service.domain
        host = service.hostName
        port = service.port
        addresses = service.addresses.map {
            Address(address: $0.connectHost, family: $0.family == .ipv4 ? "ipv4" : "ipv6", interface: $0.interfaceName, linkLocal: $0.isLinkLocal)
        }
        var txt: [String: String?] = [:]
        var binary: [String: String] = [:]
        for entry in service.txt.entries {
            if let value = entry.value, entry.stringValue == nil {
                binary[entry.key] = Data(value).base64EncodedString()
            } else {
                txt[entry.key] = .some(entry.stringValue)
            }
        }
        self.txt = txt
        txtBase64 = binary.isEmpty ? nil : binary
    }
}
