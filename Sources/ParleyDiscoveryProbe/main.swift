// parley-discovery-probe: advertise and/or browse through ParleyDiscovery and print every event as one JSON object
// per line on stdout (logs go to stderr). The discovery tests run it inside network namespaces; it is also handy by
// hand:  parley-discovery-probe --advertise Kitchen --port 7000 --txt id=42 --browse _debug._tcp
// `--backend dnssd` runs the same through dns_sd.h (ParleyDNSSD) instead of Avahi's client library.
//
// stdin, one command per line: `withdraw`, `advertise NAME`, `txt KEY=VALUE` (advertise again with that TXT entry
// changed), `quit` (end of input also quits).
import Foundation
import Logging
import ParleyAvahi
import ParleyDNSSD
import ParleyDiscovery

struct Options {
    var advertise: String?
    var type = ServiceType.debug
    var subtypes: [String] = []
    var port: UInt16 = 4242
    var txt = TXTRecord()
    var browse: [ServiceType] = []
    var exitAfter: Double?
    var logLevel = Logger.Level.info
    var backend = DiscoveryBackendFactory.avahi
}

let usage = """
    usage: parley-discovery-probe [--advertise NAME|-] [--type _x._tcp] [--subtype _s]... [--port N] [--txt k=v]...
                                  [--browse _x._tcp|-]... [--exit-after SECONDS] [--log-level LEVEL]
                                  [--backend avahi|dnssd]
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("parley-discovery-probe: \(message)\n\(usage)\n".utf8))
    exit(2)
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var iterator = arguments.makeIterator()
    func value(_ flag: String) -> String {
        guard let value = iterator.next() else { fail("\(flag) needs a value") }
        return value
    }
    func serviceType(_ text: String) -> ServiceType {
        if text == "-" { return .debug }
        do { return try ServiceType(text) } catch { fail("\(error)") }
    }
    while let argument = iterator.next() {
        switch argument {
        case "--advertise":
            let name = value(argument)
            options.advertise = name == "-" ? Advertisement.defaultInstanceName : name
        case "--type": options.type = serviceType(value(argument))
        case "--subtype": options.subtypes.append(value(argument))
        case "--port":
            guard let port = UInt16(value(argument)) else { fail("bad port") }
            options.port = port
        case "--txt":
            let pair = value(argument)
            if let equals = pair.firstIndex(of: "=") {
                options.txt[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            } else {
                options.txt.setValue(nil, forKey: pair)
            }
        case "--browse": options.browse.append(serviceType(value(argument)))
        case "--exit-after":
            guard let seconds = Double(value(argument)) else { fail("bad --exit-after") }
            options.exitAfter = seconds
        case "--log-level":
            guard let level = Logger.Level(rawValue: value(argument)) else { fail("bad log level") }
            options.logLevel = level
        case "--backend":
            switch value(argument) {
            case "avahi": options.backend = .avahi
            case "dnssd": options.backend = .dnssd
            case let other: fail("unknown backend \(other): avahi or dnssd")
            }
        case "-h", "--help":
            print(usage)
            exit(0)
        default: fail("unknown argument \(argument)")
        }
    }
    return options
}

// MARK: - JSON lines

func quoted(_ string: String) -> String {
    var out = "\""
    for scalar in string.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func object(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\(quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}"
}

func json(_ service: DiscoveredService) -> String {
    let txt = service.txt.entries.map { entry in
        "[\(quoted(entry.key)),\(entry.stringValue.map(quoted) ?? "null")]"
    }
    let addresses = service.addresses.map { address in
        object([
            ("host", quoted(address.host)),
            ("family", quoted(address.family == .ipv4 ? "ipv4" : "ipv6")),
            ("interfaceIndex", String(address.interfaceIndex)),
            ("interface", address.interfaceName.map(quoted) ?? "null"),
            ("linkLocal", String(address.isLinkLocal)),
            ("connect", quoted(address.connectHost)),
        ])
    }
    return object([
        ("name", quoted(service.instanceName)),
        ("type", quoted(service.type.rawValue)),
        ("domain", quoted(service.domain)),
        ("host", quoted(service.hostName)),
        ("port", String(service.port)),
        ("txt", "[" + txt.joined(separator: ",") + "]"),
        ("addresses", "[" + addresses.joined(separator: ",") + "]"),
    ])
}

func emit(_ event: String, _ fields: [(String, String)] = []) {
    let now = Date().timeIntervalSince1970 * 1000
    let line = object([("event", quoted(event)), ("wallMs", String(format: "%.1f", now))] + fields) + "\n"
    FileHandle.standardOutput.write(Data(line.utf8))
}

func emit(_ event: DiscoveryEvent) {
    switch event {
    case .found(let service): emit("found", [("service", json(service))])
    case .updated(let service): emit("updated", [("service", json(service))])
    case .removed(let name, let type, let domain):
        emit("removed", [("name", quoted(name)), ("type", quoted(type.rawValue)), ("domain", quoted(domain))])
    case .advertised(let name): emit("advertised", [("name", quoted(name))])
    case .renamed(let from, let to): emit("renamed", [("from", quoted(from)), ("to", quoted(to))])
    case .advertisementFailed(let error): emit("advertisementFailed", [("error", quoted("\(error)"))])
    case .daemonUnavailable(let reason): emit("daemonUnavailable", [("reason", quoted(reason))])
    case .daemonAvailable: emit("daemonAvailable")
    }
}

// MARK: - Main

let options = parse(Array(CommandLine.arguments.dropFirst()))
let logLevel = options.logLevel
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = logLevel
    return handler
}
let logger = Logger(label: "parley.discovery")

let discovery = options.backend.makeBackend(logger: logger)
func advertisement(named name: String, txt: TXTRecord = options.txt) -> Advertisement {
    Advertisement(instanceName: name, type: options.type, subtypes: options.subtypes, port: options.port, txt: txt)
}

do {
    try discovery.start()
    if let name = options.advertise { try discovery.advertise(advertisement(named: name)) }
    for type in options.browse { discovery.browse(type) }
} catch {
    emit("error", [("message", quoted("\(error)"))])
    exit(1)
}
emit("started", [("pid", String(getpid()))])

/// Resumed once: by `quit`, end of stdin, or --exit-after.
let (done, finish) = AsyncStream.makeStream(of: Void.self)

let stdinReader = Thread {
    var name = options.advertise
    var txt = options.txt
    while let line = readLine() {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        switch words.first {
        case "withdraw":
            discovery.withdraw()
            emit("withdrawn")
        case "advertise" where words.count == 2:
            name = words[1]
            do { try discovery.advertise(advertisement(named: words[1], txt: txt)) } catch {
                emit("error", [("message", quoted("\(error)"))])
            }
        case "txt" where words.count == 2 && words[1].contains("=") && name != nil:
            let pair = words[1].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            txt[String(pair[0])] = String(pair[1])
            do { try discovery.advertise(advertisement(named: name!, txt: txt)) } catch {
                emit("error", [("message", quoted("\(error)"))])
            }
        case "quit": finish.yield(); return
        case nil: continue
        default: emit("error", [("message", quoted("unknown command: \(line)"))])
        }
    }
    finish.yield()
}
stdinReader.start()

if let seconds = options.exitAfter {
    Task {
        try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        finish.yield()
    }
}

let printer = Task.detached {
    for await event in discovery.events { emit(event) }
}
for await _ in done { break }
discovery.stop()
await printer.value
emit("stopped")
exit(0)
