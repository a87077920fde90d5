import NIOCore

extension Channel {
    /// A Unix domain socket connection: a local client of the control socket (or, as dialer, parleyd's).
    var isLocalSocket: Bool { (localAddress ?? remoteAddress)?.protocol == .unix }
}
