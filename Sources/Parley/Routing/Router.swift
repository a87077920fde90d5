import Foundation
import NIOCore
import NIOFoundationCompat
import ParleyJSON
import ParleyWire
import Synchronization

/// A received message as raw handlers see it: the header and the undecoded payload.
public struct InboundMessage: Sendable {
    public var header: MessageHeader
    public var payload: ByteBuffer
    public var typeName: String { header.typeName }
    /// The sender waits for a reply (a request).
    public var expectsReply: Bool { header.flags.contains(.expectsReply) }

    /// The payload decoded as `T`, as ``Transceiver/receive(_:handler:)`` decodes it: for a raw handler that looks
    /// at the payload first (its size). Thrown out of the handler, a payload that does not decode is answered, if
    /// it was a request, with `undecodable-payload`, as for a typed handler.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try PayloadCoding.decode(T.self, from: self)
    }
}

/// Type name → handler for one transceiver. Never shared between transceivers: each owns its router.
final class Router: Sendable {
    enum Handler: Sendable {
        /// Fire and forget.
        case receive(@Sendable (InboundMessage, Peer) async throws -> Void)
        /// Produces a reply: a type name and an encoded payload.
        case respond(@Sendable (InboundMessage, Peer) async throws -> (String, ByteBuffer))
        /// Forwards: replies when it returns something, and a request it returns nothing for gets `no-responder`.
        /// `immediately`, if given, is offered runs of one-way messages first, on the connection's event loop, and
        /// the async part gets the messages it did not take (see ``Handler/immediately``).
        case route(
            immediately: ImmediateRouting?,
            @Sendable (InboundMessage, Peer) async throws -> (typeName: String, payload: ByteBuffer)?
        )

        /// The immediate part of a router, if it has one: offered one-way messages of one type, in runs, before the
        /// async part (``Transceiver/routeUnhandled(immediately:otherwise:)``).
        var immediately: ImmediateRouting? {
            if case .route(let immediately, _) = self { immediately } else { nil }
        }
    }

    /// The outcome of dispatching one message, for the caller to act on (reply, count, log).
    enum Outcome: Sendable {
        case handled
        case reply(typeName: String, payload: ByteBuffer)
        case failed(ErrorCode, String)
    }

    private struct Entry: Sendable {
        var handler: Handler
        /// Only for local clients (the control socket): to a network peer the type does not exist.
        var localOnly: Bool
    }

    private struct Table {
        var handlers: [String: Entry] = [:]
        /// Receives messages of every type that has no handler of its own (tools such as `parleyctl listen`).
        var fallback: Handler?
    }

    private let table = Mutex(Table())
    /// Changes whenever a handler is added or removed, so that a connection can keep the handler it found for the
    /// type it receives again and again (``Lookup``).
    private let changes = Atomic<UInt64>(0)

    func registerFallback(_ handler: Handler?) {
        table.withLock { $0.fallback = handler }
        changes.add(1, ordering: .releasing)
    }

    func register(_ typeName: String, _ handler: Handler, localOnly: Bool = false) {
        table.withLock { $0.handlers[typeName] = Entry(handler: handler, localOnly: localOnly) }
        changes.add(1, ordering: .releasing)
    }

    func unregister(_ typeName: String) {
        _ = table.withLock { $0.handlers.removeValue(forKey: typeName) }
        changes.add(1, ordering: .releasing)
    }

    /// One connection's last lookup: a stream of messages mostly repeats one type, and hashing its name and taking
    /// the table's lock for every one of them was a tenth of a receiver's time. Kept by the connection's task.
    struct Lookup {
        private var typeName: String?
        private var changes: UInt64 = 0
        private var handler: Handler?

        /// The handler for `message` from `peer` (always the same peer: one connection's), found again only when
        /// the type differs from the last one or the router has changed since.
        mutating func handler(for message: InboundMessage, from peer: Peer, in router: Router) -> Handler? {
            // Read before the table: a change after it makes the next lookup look again.
            let now = router.changes.load(ordering: .acquiring)
            if let typeName, now == changes, typeName == message.typeName { return handler }
            handler = router.handler(for: message, from: peer)
            (typeName, changes) = (message.typeName, now)
            return handler
        }
    }

    /// The types a hello lists as accepted: local-only ones only towards local clients.
    func registeredTypes(includingLocalOnly: Bool) -> [String] {
        table.withLock { table in table.handlers.filter { includingLocalOnly || !$0.value.localOnly }.keys.sorted() }
    }

    /// The handler that takes `message` from `peer`: its type's own, else the fallback; nil for an unknown type.
    func handler(for message: InboundMessage, from peer: Peer) -> Handler? {
        table.withLock { table in
            guard let entry = table.handlers[message.typeName] else { return table.fallback }
            return entry.localOnly && !peer.isLocal ? nil : entry.handler
        }
    }

    /// Takes a run of consecutive one-way messages of one type from one connection and returns how many of them,
    /// from the first, it dealt with entirely, without waiting.
    typealias ImmediateRouting = @Sendable (ArraySlice<InboundMessage>, Peer) -> Int

    /// Runs `handler`, the one ``handler(for:from:)`` found for `message` (nil: none), and says what to answer.
    func dispatch(_ message: InboundMessage, to handler: Handler?, from peer: Peer) async -> Outcome {
        // Built only when needed: this runs for every message.
        var unknown: Outcome { .failed(.unknownType, "no handler for message type \"\(message.typeName)\"") }
        guard let handler else { return unknown }
        do {
            switch handler {
            case .receive(let body):
                try await body(message, peer)
                if message.expectsReply {
                    return .failed(.noResponder, "\"\(message.typeName)\" is one-way here: it was handled, and no reply is sent")
                }
                return .handled
            case .respond(let body):
                let (typeName, payload) = try await body(message, peer)
                return .reply(typeName: typeName, payload: payload)
            case .route(_, let body):
                if let (typeName, payload) = try await body(message, peer) {
                    return .reply(typeName: typeName, payload: payload)
                }
                if message.expectsReply {
                    return .failed(.noResponder, "\"\(message.typeName)\" was forwarded, but nothing answered it")
                }
                return .handled
            }
        } catch is UnhandledMessage {
            return unknown
        } catch let error as PayloadDecodingError {
            return .failed(.undecodablePayload, error.description)
        } catch let refusal as any CodedRefusal {
            return .failed(refusal.errorReplyCode, refusal.description)
        } catch {
            // The handler's own words: they are what the requester needs. The type is in the log line and in the
            // requester's own context; "handler … threw" is plumbing.
            return .failed(.handlerFailed, "\(error)")
        }
    }
}

/// Thrown by a ``Transceiver/routeUnhandled(_:)`` handler that found nobody for the message: it is then answered
/// and counted exactly as a message of a type nobody handles (`unknown-type`).
public struct UnhandledMessage: Error, Sendable {
    public init() {}
}

/// A payload that did not decode as the type its handler expects.
struct PayloadDecodingError: Error, CustomStringConvertible {
    var typeName: String
    var problem: PayloadProblem
    var description: String { "payload of \"\(typeName)\" does not decode: \(problem)" }
}

/// JSON coding of typed payloads, in one place.
enum PayloadCoding {
    // One of each for every message: they are Sendable (their options are behind a lock, and each call encodes or
    // decodes in state of its own), and making a new one per message cost a visible share of the typed path.
    // `/` as itself: escaped as `\/` it doubled the size of texts full of paths and URLs.
    private static let encoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()
    private static let decoder = JSONDecoder()

    private static let streamEncoder = JSONStreamEncoder()

    /// JSON as `JSONEncoder` writes it, written by ``JSONStreamEncoder`` (2.5 µs where `JSONEncoder` takes 5 for
    /// the benchmark's four-member message: docs/performance.md), and by `JSONEncoder` for a value that refuses,
    /// which also names the problem of a value that cannot be encoded at all.
    static func encode<T: Encodable>(_ value: T, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        if (try? streamEncoder.encode(value, into: &buffer)) != nil { return buffer }
        do {
            return try encoder.encodeAsByteBuffer(value, allocator: allocator)
        } catch {
            throw TransceiverError.encodingFailed(type: messageTypeName(of: T.self), underlying: PayloadProblem(error))
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from message: InboundMessage) throws -> T {
        do {
            return try decoder.decode(T.self, from: message.payload)
        } catch {
            throw PayloadDecodingError(typeName: message.typeName, problem: PayloadProblem(error))
        }
    }
}
