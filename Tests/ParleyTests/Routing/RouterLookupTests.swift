import NIOCore
import ParleyWire
import Testing

@testable import Parley

@Suite("A connection's handler lookup")
struct RouterLookupTests {
    static let lan = Peer(id: PeerID(), name: "lan", address: "127.0.0.1:7000", protocolVersion: 1)
    static let local = Peer(id: PeerID(), name: "app", address: "unix:/run/parley/parleyd.sock", protocolVersion: 1)

    static func message(_ typeName: String) -> InboundMessage {
        InboundMessage(header: MessageHeader(typeName: typeName, id: MessageID(1)), payload: ByteBuffer())
    }

    /// A handler that answers with `name`, so that a test can tell which one a lookup found.
    static func answering(_ name: String) -> Router.Handler {
        .respond { _, _ in (name, ByteBuffer()) }
    }

    /// The name the handler found for `typeName` answers with; nil when none was found.
    static func found(_ lookup: inout Router.Lookup, _ typeName: String, from peer: Peer = lan, in router: Router) async throws -> String? {
        guard case .respond(let respond)? = lookup.handler(for: message(typeName), from: peer, in: router) else { return nil }
        return try await respond(message(typeName), peer).0
    }

    @Test("the same type again finds the same handler; a handler added, replaced or removed since is seen at once")
    func followsTheRouter() async throws {
        let router = Router()
        var lookup = Router.Lookup()
        #expect(try await Self.found(&lookup, "a.Note", in: router) == nil)
        router.register("a.Note", Self.answering("first"))
        #expect(try await Self.found(&lookup, "a.Note", in: router) == "first")
        #expect(try await Self.found(&lookup, "a.Note", in: router) == "first")
        router.register("a.Note", Self.answering("second"))
        #expect(try await Self.found(&lookup, "a.Note", in: router) == "second")
        router.register("b.Other", Self.answering("other"))
        #expect(try await Self.found(&lookup, "b.Other", in: router) == "other")
        #expect(try await Self.found(&lookup, "a.Note", in: router) == "second")
        router.unregister("a.Note")
        #expect(try await Self.found(&lookup, "a.Note", in: router) == nil)
        router.registerFallback(Self.answering("fallback"))
        #expect(try await Self.found(&lookup, "a.Note", in: router) == "fallback")
    }

    @Test("a type only local clients may send stays unknown to a LAN peer's connection, and found on a local one")
    func localOnly() async throws {
        let router = Router()
        router.register("parley.control.Status", Self.answering("status"), localOnly: true)
        var fromLAN = Router.Lookup()
        var fromLocal = Router.Lookup()
        #expect(try await Self.found(&fromLAN, "parley.control.Status", from: Self.lan, in: router) == nil)
        #expect(try await Self.found(&fromLAN, "parley.control.Status", from: Self.lan, in: router) == nil)
        #expect(try await Self.found(&fromLocal, "parley.control.Status", from: Self.local, in: router) == "status")
    }
}
