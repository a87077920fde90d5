import Foundation
import Logging
import Parley
import UnixSignals
import ParleyControl

/// parleyctl as a local client of parleyd: a transceiver without a listener or discovery, connected to
/// parleyd's control socket. Control requests (`parley.control.*`) are answered by parleyd; messages for LAN
/// peers go out as `@<peer id>/<Type>` (see ``RoutedType``).
struct DaemonClient {
    /// How long a control request (peers, status, subscribe, reload) may take.
    static let controlTimeout = Duration.seconds(5)

    let socketPath: String
    let offersDirect: Bool
    let transceiver: Transceiver
    /// parleyd, as the handshake introduced it.
    private(set) var daemon: Peer?

    /// `offersDirect`: the command has `--direct`, so not reaching parleyd may suggest it. `awaitsReply`: see
    /// ``TransceiverConfiguration/forOneRequest()``.
    init(socketPath: String, name: String, logLevel: String, offersDirect: Bool = false, awaitsReply: Bool = false) {
        bootstrapLogging(logLevel)
        self.socketPath = socketPath
        self.offersDirect = offersDirect
        var configuration = TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: nil, port: 0)
        configuration.logger = Logger(label: "parleyctl")
        if awaitsReply { configuration.forOneRequest() }
        transceiver = Transceiver(configuration: configuration)
    }

    /// Connects, runs `body`, and always stops the transceiver afterwards. Not reaching parleyd is exit status 5.
    func run<T: Sendable>(_ body: (DaemonClient) async throws -> T) async throws -> T {
        try await transceiver.start()
        do {
            var connected = self
            do {
                connected.daemon = try await transceiver.connect(toUnixSocket: socketPath)
            } catch TransceiverError.connectFailed(_, let failure) {
                // The socket's own failure ("no such file", "refused"): the path is in the message already.
                throw CtlFailure.daemonUnreachable(socketPath, reason: "\(failure)", offersDirect: offersDirect)
            } catch {
                throw CtlFailure.daemonUnreachable(socketPath, reason: ErrorText(error).message, offersDirect: offersDirect)
            }
            let result = try await body(connected)
            await transceiver.stop()
            return result
        } catch {
            await transceiver.stop()
            throw error
        }
    }

    /// Runs `consume` (which prints what parleyd streams) until it returns, SIGINT or SIGTERM arrives (both a
    /// normal end: exit 0), or parleyd closes the connection (exit status 5). `events` must have been taken from
    /// the transceiver before it connected, so that the daemon's departure cannot be missed.
    func stream(watching events: AsyncStream<PeerEvent>, _ consume: @escaping @Sendable () async throws -> Void) async throws {
        // Trapped before `consume` prints anything: a signal sent after the first line ends the stream cleanly
        // rather than killing the process with the default action.
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let lostDaemon = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await consume()
                return false
            }
            group.addTask {
                for await event in events {
                    if case .disconnected(let peer, _) = event, peer.isLocal { return true }
                }
                return false
            }
            group.addTask {
                var signal = signals.makeAsyncIterator()
                _ = await signal.next()
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        if lostDaemon {
            throw CtlFailure(.daemonUnreachable, "parleyd (\(socketPath)) closed the connection")
        }
    }

    /// A control request to parleyd.
    func control<Request: Encodable & Sendable, Reply: Decodable & Sendable>(
        _ request: Request, expecting reply: Reply.Type, timeout: Duration = Self.controlTimeout
    ) async throws -> Reply {
        guard let daemon else { throw CtlFailure.daemonUnreachable(socketPath, reason: "not connected", offersDirect: offersDirect) }
        return try await transceiver.request(request, from: daemon, expecting: reply, timeout: timeout)
    }

    /// Every peer parleyd lists, a page at a time.
    func peers() async throws -> [Control.PeerInfo] {
        var peers: [Control.PeerInfo] = []
        var after: String?
        repeat {
            let page = try await control(Control.Peers(after: after), expecting: Control.PeerList.self)
            peers += page.peers
            after = page.nextAfter
        } while after != nil
        return peers
    }

    /// The peer gate, through parleyd: asks it to answer when a Parley peer matching `to` (a name or an id
    /// prefix; any when nil) is connected, within `timeout` (parleyd waits on its connection events). Fails with
    /// exit status 3 naming what was waited for, and which peers are connected instead.
    func waitForPeer(_ wanted: WantedPeer, timeout: Duration) async throws -> Control.PeerInfo {
        let milliseconds = Int(timeout.components.seconds) * 1000 + Int(timeout.components.attoseconds / 1_000_000_000_000_000)
        do {
            // The control request itself may take the whole gate's time, plus a margin for the answer to come back.
            let peer = try await control(
                Control.WaitForPeer(wanted, timeoutMilliseconds: milliseconds),
                expecting: Control.PeerInfo.self, timeout: timeout + Self.controlTimeout
            )
            if wanted.selector == nil, wanted.acceptingType != nil {
                let connected = try await peers().filter(\.connected)
                if let choice = wanted.ambiguity(among: connected, id: \.id, name: \.name, accepts: \.accepts) {
                    throw CtlFailure.usage(choice)
                }
            }
            return peer
        } catch TransceiverError.remoteError(let code, _) where ControlErrorCode(code) == .noMatchingPeer {
            let connected = (try? await peers())?.filter(\.connected) ?? []
            var message = "no \(wanted) connected to parleyd (\(socketPath)) within \(timeout.secondsText)"
            if !connected.isEmpty {
                message += "; connected: " + connected.map { "\($0.name) (\($0.id.prefix(8)))" }.joined(separator: ", ")
            }
            throw CtlFailure(.noPeer, message)
        }
    }
}

extension Duration {
    /// `1 s`, `0.5 s`.
    var secondsText: String {
        let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

extension TransceiverConfiguration {
    /// For a command whose last exchange is a request: once its reply came, or parleyctl gave up on it, nothing it
    /// sent is still on its way, so its goodbye needs no long wait for the peer's (a peer still busy with the request
    /// would otherwise hold parleyctl up to the 2 s flush, well past `--reply-timeout`).
    mutating func forOneRequest() {
        shutdownFlushTimeout = .milliseconds(100)
    }
}
