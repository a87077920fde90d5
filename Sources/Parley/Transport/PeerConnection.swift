import Foundation
import NIOCore
import ParleySecurity
import ParleyWire
import Synchronization

/// One live connection: its outbound queue and its counters. Its requests wait in the transceiver's
/// ``PendingRequests``.
final class PeerConnection: Sendable, Hashable {
    enum Reply: Sendable {
        case message(InboundMessage)
        case error(ErrorReplyFrame)
    }

    let channel: any Channel
    let role: ConnectionRole
    /// Unique in this process: ``Peer/connectionID`` of the peer on this connection.
    let id = PeerConnection.nextID.add(1, ordering: .relaxed).newValue
    private static let nextID = Atomic<UInt64>(0)
    /// How this connection authenticates: the node's way for TCP, none for the control socket (and none for an app
    /// in the original framing let in without it: see ``waiveAuthentication()``).
    var authentication: ConnectionAuthentication { authenticationBox.withLock { $0 } }
    private let authenticationBox: Mutex<ConnectionAuthentication>
    /// The secret this connection authenticates with, if it does with one.
    var sharedSecret: SharedSecret? {
        if case .sharedSecret(let secret) = authentication { secret } else { nil }
    }
    /// The remote address; computed on use because a dialled channel is configured before it is connected.
    var remoteAddress: String { channel.remoteAddress.map(Self.describe) ?? "unknown" }
    /// The remote IP address as ``ConnectionAdmission`` counts it (nil on a Unix socket): two connections with the
    /// same key come from the same host.
    var remoteHost: String? { channel.remoteAddress.flatMap(ConnectionAdmission.addressKey) }
    let outbound: OutboundQueue
    /// The connection's place in the node's memory budget (nil outside it: the control socket).
    let budget: BudgetTap?
    private let requests: PendingRequests
    private let peerBox = Mutex<Peer?>(nil)
    private let endReasonBox = Mutex<DisconnectReason?>(nil)
    private let activity = Mutex(Activity.reading)
    let messagesIn = Atomic<Int>(0)
    let messagesOut = Atomic<Int>(0)

    init(
        channel: any Channel, role: ConnectionRole, authentication: ConnectionAuthentication, requests: PendingRequests,
        configuration: TransceiverConfiguration, budget: BudgetTap? = nil
    ) {
        self.channel = channel
        self.requests = requests
        self.role = role
        self.authenticationBox = Mutex(authentication)
        self.budget = budget
        self.outbound = OutboundQueue(
            channel: channel,
            highWatermark: configuration.outboundHighWatermark,
            lowWatermark: configuration.outboundLowWatermark,
            budget: budget
        )
    }

    /// The connection speaks a framing that cannot authenticate and the configuration lets it in without the
    /// secret or a device certificate: its handshake is open. Called by the framing sniffer before the first frame
    /// goes up, so before the acceptor's handshake machine is made.
    func waiveAuthentication() { authenticate(.none) }

    /// An accepted connection turned out not to be TLS (its first byte): it authenticates the way the node does
    /// for peers in the clear. Called before its first frame goes up.
    func authenticate(_ authentication: ConnectionAuthentication) { authenticationBox.withLock { $0 = authentication } }

    var peer: Peer? {
        get { peerBox.withLock { $0 } }
        set { peerBox.withLock { $0 = newValue } }
    }

    /// Why the connection ended, as first noted by whoever ended it (heartbeat, protocol error, peer, shutdown).
    var endReason: DisconnectReason? { endReasonBox.withLock { $0 } }

    func noteEnd(_ reason: DisconnectReason) {
        endReasonBox.withLock { if $0 == nil { $0 = reason } }
    }

    /// What to do once the peer stops sending: nil once it has (the caller acts at once), else a token for
    /// ``forgetInputEnd(_:)``.
    private let inputEnd = Mutex(InputEnd())

    private struct InputEnd {
        var ended = false
        var next: UInt64 = 0
        var actions: [UInt64: @Sendable () -> Void] = [:]
    }

    func whenInputEnds(_ action: @escaping @Sendable () -> Void) -> UInt64? {
        inputEnd.withLock { state in
            guard !state.ended else { return nil }
            state.next += 1
            state.actions[state.next] = action
            return state.next
        }
    }

    func forgetInputEnd(_ token: UInt64) {
        _ = inputEnd.withLock { $0.actions.removeValue(forKey: token) }
    }

    /// The peer will send nothing more (it shut down its sending side, or the connection ended): called by the
    /// connection's ``FrameInbox``.
    func noteInputEnded() {
        let actions = inputEnd.withLock { state -> [@Sendable () -> Void] in
            guard !state.ended else { return [] }
            state.ended = true
            defer { state.actions = [:] }
            return Array(state.actions.values)
        }
        for action in actions { action() }
    }

    private let expectedPeerBox = Mutex<PeerID?>(nil)

    /// Whom the connection leads to while its handshake runs: the id a discovered service advertised, when this
    /// side dialled it, then the id in the remote's hello. Lets a peer whose other connection was closed as a
    /// duplicate be handed over to this one even when the two run over different addresses (IPv4 one way, IPv6
    /// the other).
    var expectedPeer: PeerID? {
        get { expectedPeerBox.withLock { $0 } }
        set { expectedPeerBox.withLock { $0 = newValue } }
    }

    private let handedOverFlag = Atomic<Bool>(false)

    /// The remote side closed this connection as a duplicate: it keeps another connection to us.
    var isHandedOver: Bool { handedOverFlag.load(ordering: .acquiring) }

    func noteHandedOver() { handedOverFlag.store(true, ordering: .releasing) }

    /// Where the connection's serving loop is, for a graceful shutdown: a handler that is running when the node
    /// starts draining finishes and sends its reply before the goodbye.
    private enum Activity {
        case reading
        case handling
        /// Draining began while a handler ran: finish the connection when it returns.
        case drainWhenHandled
        case drained
    }

    /// A handler is about to run; false once the connection is draining (the message is not handled).
    func handlerBegins() -> Bool {
        activity.withLock { activity in
            guard case .reading = activity else { return false }
            activity = .handling
            return true
        }
    }

    /// The handler returned; true if draining began meanwhile, so the caller must finish the connection now.
    func handlerEnds() -> Bool {
        activity.withLock { activity in
            switch activity {
            case .handling:
                activity = .reading
                return false
            case .drainWhenHandled:
                activity = .drained
                return true
            case .reading, .drained:
                return false
            }
        }
    }

    /// The node drains: true if no handler runs, so the caller finishes the connection now; false if the running
    /// handler's return will (``handlerEnds()``).
    func requestDrain() -> Bool {
        activity.withLock { activity in
            switch activity {
            case .reading:
                activity = .drained
                return true
            case .handling:
                activity = .drainWhenHandled
                return false
            case .drainWhenHandled, .drained:
                return false
            }
        }
    }

    func makeMessageID() -> MessageID {
        requests.makeMessageID()
    }

    /// A one-way message for this connection, with its next message id.
    @inline(__always)
    func message(_ typeName: String, _ payload: ByteBuffer) -> Frame {
        .message(MessageFrame(header: MessageHeader(typeName: typeName, id: makeMessageID()), payload: payload))
    }

    /// Queues `frames` if the queue has room (or regardless, `evenIfFull`); false (nothing queued) when it is full.
    func sendIfRoom(_ frames: some Collection<Frame>, evenIfFull: Bool = false) throws -> Bool {
        guard try outbound.enqueueIfRoom(frames, evenIfFull: evenIfFull) else { return false }
        messagesOut.add(frames.count, ordering: .relaxed)
        return true
    }

    /// Queues `frame`; with a stall timeout, gives up (``OutboundQueueStalled``) if the queue is full and nothing
    /// leaves it for that long.
    @inline(__always)  // see OutboundQueue.enqueue
    func send(_ frame: Frame, stallTimeout: Duration? = nil) async throws {
        try await outbound.enqueue(frame, stallTimeout: stallTimeout)
        messagesOut.add(1, ordering: .relaxed)
    }

    /// Sends a request and waits up to `timeout` for the frame that answers it (then throws ``TimeoutExpired``).
    /// The deadline is kept by ``PendingRequests`` rather than a racing task: a request costs no extra tasks.
    ///
    /// With `requester`, the request is made for that connection's peer (parleyd forwarding a local tool's request):
    /// it fails as soon as the requester stops sending, since its answer would have no one to go to, and the
    /// requester's connection is not held open by a wait it gave up on.
    func request(
        _ header: MessageHeader, payload: ByteBuffer, to peer: PeerID, timeout: Duration, for requester: PeerConnection? = nil
    ) async throws -> Reply {
        let slot = requests.register(header.id, to: peer, deadline: channel.eventLoop.now + TimeAmount(timeout), timerOn: channel.eventLoop)
        var abandonment: UInt64?
        if let requester {
            let left = TransceiverError.connectionClosed(requester.peer?.id ?? peer, reason: .peerClosed)
            abandonment = requester.whenInputEnds { [requests, id = header.id] in
                _ = requests.resolve(id, from: peer, with: .failure(left))
            }
            if abandonment == nil {
                requests.remove(header.id)
                throw left
            }
        }
        defer { if let abandonment { requester?.forgetInputEnd(abandonment) } }
        do {
            try await send(.message(MessageFrame(header: header, payload: payload)))
            return try await slot.value()
        } catch {
            // The send failed, or the wait was cancelled: the table still holds the request. (A reply, a timeout or
            // the peer's leaving took it out already, so the answered path costs no second look-up.)
            requests.remove(header.id)
            throw error
        }
    }

    /// Completes the request `id` this node sent to the connection's peer (on this or another connection) if it
    /// is still outstanding; returns false for a reply nobody waits for.
    @discardableResult
    func resolve(_ id: MessageID, with result: Result<Reply, any Error>) -> Bool {
        guard let peer = peer?.id else { return false }
        return requests.resolve(id, from: peer, with: result)
    }

    static func == (lhs: PeerConnection, rhs: PeerConnection) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// An address as people write it: an IPv4 peer on a dual-stack listener as `10.0.0.2:7206`, not
    /// `[::ffff:10.0.0.2]:7206`; a link-local IPv6 address with its interface, `[fe80::1%eth0]:7206`, which is the
    /// only form that can be dialled back.
    static func describe(_ address: SocketAddress) -> String {
        switch address {
        case .v4:
            return Endpoint(host: address.ipAddress ?? "?", port: address.port ?? 0).description
        case .v6(let v6):
            var host = address.plainIPAddress ?? "?"
            if host.lowercased().hasPrefix("fe80:"), v6.address.sin6_scope_id != 0 {
                host += "%" + interfaceName(index: v6.address.sin6_scope_id)
            }
            return Endpoint(host: host, port: address.port ?? 0).description
        case .unixDomainSocket:
            return "unix:" + (address.pathname ?? "")
        }
    }

    /// The name of network interface `index` (`eth0`), or the index itself if the interface is gone.
    private static func interfaceName(index: UInt32) -> String {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return String(index) }
        let bytes = name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where the answer to one request lands. The reply may arrive before the requester starts waiting, so the
/// slot holds either the result or the waiting continuation, whichever comes first.
///
/// The continuation is an unchecked one (a checked one costs an allocation per request). Each is resumed exactly
/// once: `value` resumes its own at once unless the slot is empty, and a stored one is taken out of the state, under
/// its lock, by the one `fulfill` that finds it there.
final class ReplySlot: Sendable {
    private enum State {
        case empty
        case ready(Result<PeerConnection.Reply, any Error>)
        case waiting(UnsafeContinuation<PeerConnection.Reply, any Error>)
        case consumed
    }

    private let state = Mutex(State.empty)

    func fulfill(_ result: Result<PeerConnection.Reply, any Error>) {
        let waiter = state.withLock { state -> UnsafeContinuation<PeerConnection.Reply, any Error>? in
            switch state {
            case .empty:
                state = .ready(result)
                return nil
            case .waiting(let continuation):
                state = .consumed
                return continuation
            case .ready, .consumed:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> PeerConnection.Reply {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<PeerConnection.Reply, any Error>? in
                    switch state {
                    case .ready(let result):
                        state = .consumed
                        return result
                    case .empty:
                        state = .waiting(continuation)
                        return nil
                    case .waiting, .consumed:
                        return .failure(CancellationError())
                    }
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            fulfill(.failure(CancellationError()))
        }
    }
}

extension SocketAddress {
    /// The IP address, with an IPv4 address seen through a dual-stack listener (`::ffff:a.b.c.d`) in its plain
    /// form: one host is one key in the connection limits, and is shown as people write it.
    var plainIPAddress: String? {
        guard let ip = ipAddress else { return nil }
        let mapped = "::ffff:"
        if ip.lowercased().hasPrefix(mapped), ip.dropFirst(mapped.count).contains(".") { return String(ip.dropFirst(mapped.count)) }
        return ip
    }
}
