import ParleyDiscovery

/// The text `nsupdate` reads to register or remove one DNS-SD service instance (RFC 6763 §4, §6): the type's PTR
/// record pointing at the instance, the instance's SRV and TXT records, and the host's A/AAAA records.
/// Names are written in master-file syntax, with every byte outside letters, digits, `-` and `_` escaped, so an
/// instance name may hold spaces, dots and any UTF-8; the host name is a valid host name made from the node's name
/// (``DNSUpdateSettings/hostLabel(for:)``).
struct DNSUpdateScript {
    var settings: DNSUpdateSettings

    /// The instance's full name: `Instance._debug._tcp.domain.`
    func instanceName(_ advertisement: Advertisement) -> String {
        "\(Self.label(advertisement.instanceName)).\(advertisement.type.rawValue).\(settings.domain)."
    }

    var hostName: String { "\(DNSUpdateSettings.hostLabel(for: settings.hostLabel)).\(settings.domain)." }

    private var header: [String] {
        var lines: [String] = []
        // A server that does not parse never gets here: the registrar refuses to run nsupdate with it.
        if let server = settings.server, let (host, port) = DNSUpdateSettings.parseServer(server) {
            lines.append(port.map { "server \(host) \($0)" } ?? "server \(host)")
        }
        lines.append("zone \(settings.domain).")
        return lines
    }

    /// Replaces what this instance had with the current records (one atomic update).
    func register(_ advertisement: Advertisement, addresses: [InterfaceAddress]) -> String {
        let instance = instanceName(advertisement)
        let ttl = settings.ttl
        var lines = header
        lines.append("update delete \(instance) SRV")
        lines.append("update delete \(instance) TXT")
        lines.append("update delete \(hostName) A")
        lines.append("update delete \(hostName) AAAA")
        lines.append("update add \(advertisement.type.rawValue).\(settings.domain). \(ttl) PTR \(instance)")
        lines.append("update add \(instance) \(ttl) SRV 0 0 \(advertisement.port) \(hostName)")
        let txt = advertisement.txt.encodedStrings.map(Self.quoted).joined(separator: " ")
        lines.append("update add \(instance) \(ttl) TXT \(txt.isEmpty ? "\"\"" : txt)")
        for address in addresses {
            lines.append("update add \(hostName) \(ttl) \(address.family == .ipv4 ? "A" : "AAAA") \(address.host)")
        }
        lines.append("send")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Removes exactly this instance's records (other instances' PTR records stay).
    func deregister(_ advertisement: Advertisement) -> String {
        let instance = instanceName(advertisement)
        var lines = header
        lines.append("update delete \(advertisement.type.rawValue).\(settings.domain). PTR \(instance)")
        lines.append("update delete \(instance) SRV")
        lines.append("update delete \(instance) TXT")
        lines.append("update delete \(hostName) A")
        lines.append("update delete \(hostName) AAAA")
        lines.append("send")
        return lines.joined(separator: "\n") + "\n"
    }

    /// One DNS label in master-file syntax: `Living room` → `Living\032room`.
    static func label(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out += "\\" + String(format3: byte)
            }
        }
        return out
    }

    /// One TXT string, quoted, with quotes, backslashes and bytes outside printable ASCII escaped.
    static func quoted(_ bytes: [UInt8]) -> String {
        var out = "\""
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out += "\\" + String(Character(Unicode.Scalar(byte)))
            case 0x20...0x7E: out.append(Character(Unicode.Scalar(byte)))
            default: out += "\\" + String(format3: byte)
            }
        }
        return out + "\""
    }
}

extension String {
    /// A byte as three decimal digits (`\032` for a space in master-file syntax).
    fileprivate init(format3 byte: UInt8) {
        let digits = String(byte)
        self = String(repeating: "0", count: 3 - digits.count) + digits
    }
}
