import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyBlocking
import ParleyDiscovery
import ParleySecurity
import ParleyWire
import Synchronization

extension Transceiver {
    /// Handles every message of type `T`. One handler per type; registering again replaces it.
    /// Messages from one peer reach handlers one at a time, in the order they were sent.
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type,
        handler: @escaping @Sendable (T, Peer) async throws -> Void
    ) {
        router.register(messageTypeName(of: T.self), .receive { message, peer in
            try await handler(PayloadCoding.decode(T.self, from: message), peer)
        })
    }

    /// Answers requests of type `T`: the value `handler` returns goes back to the requester as the reply.
    /// If `handler` throws, the requester receives an error naming the failure.
    /// `localOnly`: only local clients (the control socket) may ask; to a network peer the type does not exist —
    /// its hello does not list it, and a request gets `unknown-type`.
    /// `codingOn`: decode the request and encode the reply on this pool instead of the connection's event loop —
    /// for requests or replies of megabytes (a state, a screenshot, a piece of an export), whose JSON coding would
    /// hold up every other connection of that loop.
    public func respond<T: Decodable & Sendable, Reply: Encodable & Sendable>(
        to type: T.Type,
        localOnly: Bool = false,
        codingOn pool: BlockingPool? = nil,
        handler: @escaping @Sendable (T, Peer) async throws -> Reply
    ) {
        let respond = Router.Handler.respond { message, peer in
            let request = try await Self.coding(on: pool) { try PayloadCoding.decode(T.self, from: message) }
            let reply = try await handler(request, peer)
            let payload = try await Self.coding(on: pool) { try PayloadCoding.encode(reply, allocator: ByteBufferAllocator()) }
            return (messageTypeName(of: Reply.self), payload)
        }
        router.register(messageTypeName(of: T.self), respond, localOnly: localOnly)
    }

    /// ``respond(to:localOnly:codingOn:handler:)`` coding on a thread pool of the caller's.
    @available(*, deprecated, message: "pass a BlockingPool: BlockingPool(pool), or BlockingPool.shared for NIOThreadPool.singleton")
    public func respond<T: Decodable & Sendable, Reply: Encodable & Sendable>(
        to type: T.Type,
        localOnly: Bool = false,
        codingOn pool: NIOThreadPool,
        handler: @escaping @Sendable (T, Peer) async throws -> Reply
    ) {
        respond(to: type, localOnly: localOnly, codingOn: BlockingPool(pool), handler: handler)
    }

    private static func coding<Value: Sendable>(on pool: BlockingPool?, _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        guard let pool else { return try body() }
        return try await pool.run(body)
    }

    /// Handles messages of `typeName` without decoding them: for routers, bridges and tools that forward payloads.
    public func receiveRaw(typeName: String, handler: @escaping @Sendable (InboundMessage, Peer) async throws -> Void) {
        router.register(typeName, .receive(handler))
    }

    /// Answers requests of `typeName` with a raw reply (type name and payload).
    public func respondRaw(
        to typeName: String,
        handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)
    ) {
        router.register(typeName, .respond { message, peer in try await handler(message, peer) })
    }

    /// Handles every message whose type has no handler of its own, undecoded — for tools that show or forward
    /// whatever arrives. Requests reaching it are answered with `no-responder`. Pass `nil` to remove it.
    public func receiveUnhandled(_ handler: (@Sendable (InboundMessage, Peer) async throws -> Void)?) {
        router.registerFallback(handler.map { Router.Handler.receive($0) })
    }

    /// Like ``receiveUnhandled(_:)``, for routers: a request is answered with what `handler` returns (a type name
    /// and an undecoded payload, e.g. the reply it got by forwarding the request); `nil` answers nothing. Throw
    /// ``UnhandledMessage`` when nobody takes the message: it is then an unknown type to the sender.
    public func routeUnhandled(
        _ handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)?
    ) {
        // Stored as given: a wrapping closure would be one more async call for every message routed.
        router.registerFallback(.route(immediately: nil, handler))
    }

    /// ``routeUnhandled(_:)`` with a first try that does not wait, for routers that forward streams of messages.
    /// `immediately` is offered each run of consecutive one-way messages of one type that arrived together on one
    /// connection (often a whole socket read of them), on the connection's event loop, and returns how many of
    /// them, from the first, it dealt with entirely — for example, queued with
    /// ``sendRawIfRoom(typeName:payloads:to:)``. The first message it does not take goes to `handler`, with every
    /// rule of ``routeUnhandled(_:)``, and the rest of the run is offered to `immediately` again after it; the
    /// connection's messages are handled in order throughout. Requests only ever go to `handler`. `immediately`
    /// must not block. A run taken at once costs no async call, and one lookup of its route for all its messages.
    public func routeUnhandled(
        immediately: @escaping @Sendable (_ run: ArraySlice<InboundMessage>, _ from: Peer) -> Int,
        otherwise handler: @escaping @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)?
    ) {
        router.registerFallback(.route(immediately: immediately, handler))
    }

    /// Removes the handler for `typeName`; later messages of that type are counted as unknown.
    public func removeHandler(for typeName: String) {
        router.unregister(typeName)
    }
}
