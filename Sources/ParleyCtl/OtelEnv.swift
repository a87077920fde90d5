import ArgumentParser
import Foundation
import Parley
import ParleyControl

struct OtelEnv: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otel-env",
        abstract: "Print the OpenTelemetry variables that send an app's traces and logs to a parleyd.",
        discussion: """
            Prints `export OTEL_EXPORTER_OTLP_ENDPOINT=…` for parleyd's OTLP/HTTP receiver,
            and `export OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20…` when it needs
            a token (else `unset OTEL_EXPORTER_OTLP_HEADERS`), ready for eval. Any
            OpenTelemetry SDK reads them.

            Without NAME, the parleyd of this host, asked over its control socket
            (--socket); when none answers there, the one parleyd on the LAN that
            advertises its receiver. With NAME (an advertised name, or the start of a
            peer id), that parleyd: this host's when it has that name, else found by
            discovery through avahi-daemon within --timeout seconds. parleyd
            advertises its receiver (TXT key otlp) only when otlpListen is beyond
            loopback; such a receiver needs the token of parleyd's webTokenFile, which
            only its own host hands out: give a copy with --token-file.

            Examples:
              eval "$(parleyctl otel-env)"
              eval "$(parleyctl otel-env kitchen --token-file ~/.config/parley/kitchen-token)"
              parleyctl otel-env kitchen --token-file kitchen-token --json
            """
    )

    @Argument(help: ArgumentHelp("The parleyd: its advertised name or the start of its peer id.", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("A copy of the parleyd's webTokenFile, for a parleyd on another host.", valueName: "file"))
    var tokenFile: String?

    @Option(help: "Seconds to browse the LAN for the parleyd.")
    var timeout: Double = 3

    @Option(name: .customLong("type"), help: "DNS-SD service type parleyd advertises.")
    var serviceType = ServiceType.debug.rawValue

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        try validatePositive(timeout, "--timeout")
        do { _ = try ServiceType(serviceType) } catch { throw ValidationError("--type: \(error)") }
        if let name, name.isEmpty { throw ValidationError("NAME is empty; give a parleyd's name, or none for this host's") }
    }

    /// A receiver found, and what an exporter needs to reach it.
    struct Target: Encodable {
        var name: String
        var endpoint: String
        /// `OTEL_EXPORTER_OTLP_HEADERS`'s value; nil when no token is needed.
        var headers: String?
    }

    func run() async throws {
        // Logging is set up by the first attempt to reach this host's parleyd, which is always made.
        let target = try await find()
        if format.json {
            Output.json(target)
            return
        }
        Output.line("export OTEL_EXPORTER_OTLP_ENDPOINT=\(ShellWord.quoted(target.endpoint))")
        if let headers = target.headers {
            Output.line("export OTEL_EXPORTER_OTLP_HEADERS=\(ShellWord.quoted(headers))")
        } else {
            // A header for another parleyd, left from an earlier eval, would be sent here too.
            Output.line("unset OTEL_EXPORTER_OTLP_HEADERS")
        }
    }

    /// This host's parleyd when it is the one meant, else the one discovery finds.
    private func find() async throws -> Target {
        let local = await localReceiver()
        if let (status, report) = local, name == nil || Self.names(name!, status: status) {
            guard let endpoint = report.endpoint else {
                throw CtlFailure(
                    .error,
                    "parleyd (\(daemon.socketPath)) has no OTLP receiver: otlpListen is off, or another program has its port (parleyd's log says which); set otlpListen (docs/operations.md) and restart it"
                )
            }
            return Target(name: status.advertisedName ?? status.name, endpoint: endpoint, headers: report.token.map(Self.headers(token:)))
        }
        return try await discovered()
    }

    /// What this host's parleyd says of its receiver; nil when none answers on the control socket.
    private func localReceiver() async -> (Control.StatusReport, Control.OTLPEndpointReport)? {
        try? await daemon.session { client in
            (
                try await client.control(Control.Status(), expecting: Control.StatusReport.self),
                try await client.control(Control.OTLPEndpoint(), expecting: Control.OTLPEndpointReport.self)
            )
        }
    }

    static func names(_ name: String, status: Control.StatusReport) -> Bool {
        name == status.name || name == status.advertisedName || PeerSelector.matches(name, id: status.peerID, name: status.name)
    }

    static func names(_ name: String, service: DiscoveredService) -> Bool {
        name == service.instanceName || name == service.txt[TXTRecord.ParleyKey.displayName]
            || service.peerID.map { PeerSelector.matches(name, id: $0, name: service.instanceName) } == true
    }

    /// The parleyd named (or the only one) among those advertising a receiver on the LAN.
    private func discovered() async throws -> Target {
        let type = try ServiceType(serviceType)
        let wanted = name
        let found = try await ServiceBrowser.browse(type, for: seconds(timeout)) { services in
            // A parleyd named exactly, with its receiver and its addresses resolved: there is nothing to wait for.
            // (Before its addresses, its endpoint would be its host name, which an exporter may not resolve.)
            guard let wanted else { return false }
            return services.contains {
                ($0.instanceName == wanted || $0.txt[TXTRecord.ParleyKey.displayName] == wanted) && !$0.addresses.isEmpty
                    && OTLPAdvertisement.endpoint(of: $0) != nil
            }
        }
        let matching = wanted.map { wanted in found.filter { Self.names(wanted, service: $0) } } ?? found
        let receivers = matching.compactMap { service in OTLPAdvertisement.endpoint(of: service).map { (service: service, endpoint: $0) } }
        let described = { (service: DiscoveredService) in "\(service.instanceName) (\(service.peerID.map { String($0.prefix(8)) } ?? service.hostName))" }
        guard let receiver = receivers.first else {
            let without = matching.filter { $0.peerID != nil }
            if !without.isEmpty {
                throw CtlFailure(
                    .error,
                    "\(without.map(described).joined(separator: ", ")) \(without.count == 1 ? "advertises" : "advertise") no OTLP receiver: its otlpListen is off, or on loopback only, which other hosts cannot reach; set otlpListen to 0.0.0.0:4318 there (it then needs webTokenFile)"
                )
            }
            let whom = wanted.map { "no parleyd named \"\($0)\"" } ?? "no parleyd"
            throw CtlFailure(
                .error,
                "\(whom) advertising an OTLP receiver found on the LAN within \(seconds(timeout).secondsText) (\(type)); is it running, with otlpListen beyond loopback? --timeout waits longer"
            )
        }
        guard receivers.count == 1 else {
            throw CtlFailure.usage(
                "\(receivers.count) parleyds advertise an OTLP receiver: \(receivers.map { described($0.service) }.joined(separator: ", ")); name one: parleyctl otel-env NAME"
            )
        }
        // Advertised means beyond loopback, and there parleyd always asks for its token.
        guard let tokenFile else {
            throw CtlFailure(
                .error,
                "\(described(receiver.service)) needs its token to take exports: give --token-file FILE with a copy of its webTokenFile (the token travels in plain HTTP, so only on a network you trust)"
            )
        }
        let token: String
        do {
            token = try SharedSecret(contentsOfFile: tokenFile).fileText.trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw CtlFailure(.usage, "--token-file: \(error.descriptionNamingCommand)")
        }
        return Target(
            name: receiver.service.txt[TXTRecord.ParleyKey.displayName] ?? receiver.service.instanceName, endpoint: receiver.endpoint,
            headers: Self.headers(token: token))
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, values percent-encoded (the space after Bearer too).
    static func headers(token: String) -> String {
        "authorization=Bearer%20" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token)
    }
}

/// Words a POSIX shell reads back as given.
enum ShellWord {
    /// `text` as is when the shell would read it unchanged, else in single quotes (a quote inside as `'\''`).
    static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "@%+=:,./-_".unicodeScalars.contains(scalar))
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}
