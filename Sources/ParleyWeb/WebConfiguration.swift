import Foundation

/// Where the web debugger listens and who may use it.
public struct WebConfiguration: Sendable, Hashable {
    /// The address to bind: an IP address or host name.
    public var host: String
    /// 0: any free port (tests).
    public var port: Int
    /// The access token every request needs; nil: no token, reading is open (allowed on loopback only, see
    /// ``problem``).
    public var token: String?
    /// What signs a browser in for changes (`/?token=…`, traded for the session cookie) and authorises a program's
    /// changes (`Authorization: Bearer …`): the access token when there is one, else one made at random for this
    /// run. Only those with parleyd's control socket learn it (`parleyctl web` prints the URL that carries it), so a
    /// local user who can reach the port but not the socket can read, never change.
    public var signInToken: String
    /// Names that requests may carry in `Host` besides the loopback names and `host`, e.g. this machine's name.
    public var extraHostNames: [String]
    /// Where a person gets the URL that carries ``signInToken``, as the access checks' refusals name it to the
    /// person in the browser ("open …"): the program that runs the web debugger names its own way (parleyd: `the
    /// URL that parleyctl web prints`).
    public var signInURLHint = "the URL that carries the web debugger's sign-in token"
    /// Open web connections at most; more are closed at once (see ``WebConnectionCount``).
    public var maxConnections = 128
    /// Pages following the live events at most (``LiveFeed``); another gets 503.
    public var maxLivePages = 64
    /// How long a connection may take to send a whole request head, and stay open idle between requests.
    public var headerTimeout = Duration.seconds(10)
    /// How long a request body may stop arriving, and a connection take nothing parleyd writes, before it is closed.
    public var stallTimeout = Duration.seconds(30)

    public init(host: String, port: Int, token: String? = nil, extraHostNames: [String] = []) {
        self.host = host
        self.port = port
        self.token = token
        self.signInToken = token ?? Self.randomToken()
        self.extraHostNames = extraHostNames
    }

    /// 256 random bits in hex.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    public static let defaultPort = 7207
    public static let defaultHost = "127.0.0.1"

    /// Whether `host` is a loopback address or name: only there may the web debugger run without a token.
    public var isLoopback: Bool { Self.isLoopback(host) }

    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased()
        return name == "localhost" || name == "::1" || name == "[::1]" || name.hasPrefix("127.")
    }

    /// Why this configuration cannot be used, or nil.
    public var problem: WebConfigurationProblem? {
        if !isLoopback && token == nil { return .openBeyondLoopback(host: host) }
        if !(0...65535).contains(port) { return .notAPort(port) }
        return nil
    }

    /// The URL people open: with the sign-in token for those who may change things (the browser trades it for its
    /// cookie), without it where it would be seen by others (the journal, the readiness line).
    public func url(port boundPort: Int, includingToken: Bool) -> String {
        let shownHost = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        let hostPart = shownHost.contains(":") ? "[\(shownHost)]" : shownHost
        var url = "http://\(hostPart):\(boundPort)/"
        if includingToken {
            url += "?token=" + (signInToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? signInToken)
        }
        return url
    }
}

/// Why a ``WebConfiguration`` cannot be used. The text names no program's settings: the program that configures the
/// web debugger adds its own, by case.
public enum WebConfigurationProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// Listening on an address other than loopback without an access token.
    case openBeyondLoopback(host: String)
    /// The port is outside 0–65535.
    case notAPort(Int)

    public var description: String {
        switch self {
        case .openBeyondLoopback(let host):
            "the web debugger would listen on \(host), which is not loopback, without a token: anyone on the network could read every recorded state and replay states to your apps; listen on 127.0.0.1, or give it an access token"
        case .notAPort(let port):
            "port \(port) is not a TCP port (0–65535)"
        }
    }
}
