import NIOCore
import NIOEmbedded
import NIOPosix
@testable import Parley
import ParleyTestSupport
import Testing

/// The one place connections are bootstrapped (`TransportBootstraps`), on the groups this machine has: NIO's socket
/// loops work, through every entry point; groups that run neither sockets nor Network.framework are refused with an
/// error naming them. (The Network.framework branch compiles only on Apple platforms: docs/apple.md.)
@Suite("Transport bootstraps", .timeLimit(.minutes(1)))
struct TransportBootstrapsTests {
    typealias Bytes = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    static func wrap(_ channel: any Channel) -> EventLoopFuture<Bytes> {
        channel.eventLoop.makeCompletedFuture { try Bytes(wrappingChannelSynchronously: channel) }
    }

    /// Sends `text` from `sender`, and returns what `receiver` reads first.
    static func cross(_ text: String, from sender: NIOAsyncChannelOutboundWriter<ByteBuffer>, to receiver: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> String? {
        try await sender.write(ByteBuffer(string: text))
        return try await receiver.next().map { String(buffer: $0) }
    }

    @Test("on a MultiThreadedEventLoopGroup the TCP listener accepts the factory's connection to 127.0.0.1 and bytes cross both ways; the listener reuses its address, accepted connections allow remote half-closure, dialled ones as asked")
    func socketGroupTCP() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await TransportBootstraps.listen(on: group, at: try SocketAddress(ipAddress: "127.0.0.1", port: 0), childChannelInitializer: Self.wrap)
        #expect(try await server.channel.getOption(.socketOption(.so_reuseaddr)).get() != 0)
        let port = try #require(server.channel.localAddress?.port)
        try await server.executeThenClose { accepted in
            var connections = accepted.makeAsyncIterator()
            for halfClosure in [false, true] {
                let client = try await TransportBootstraps.connect(
                    on: group, to: Endpoint(host: "127.0.0.1", port: port), timeout: .seconds(5), allowsRemoteHalfClosure: halfClosure,
                    channelInitializer: Self.wrap
                )
                let child = try #require(try await connections.next())
                #expect(try await client.channel.getOption(.allowRemoteHalfClosure).get() == halfClosure)
                #expect(try await child.channel.getOption(.allowRemoteHalfClosure).get())
                try await client.executeThenClose { clientIn, clientOut in
                    try await child.executeThenClose { childIn, childOut in
                        var fromClient = childIn.makeAsyncIterator()
                        var fromChild = clientIn.makeAsyncIterator()
                        let atChild = try await Self.cross("ping", from: clientOut, to: &fromClient)
                        #expect(atChild == "ping")
                        let atClient = try await Self.cross("pong", from: childOut, to: &fromChild)
                        #expect(atClient == "pong")
                    }
                }
            }
        }
    }

    @Test("a host name is resolved: connecting to localhost reaches a listener on 127.0.0.1")
    func socketGroupConnectsByName() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let server = try await TransportBootstraps.listen(on: group, at: try SocketAddress(ipAddress: "127.0.0.1", port: 0), childChannelInitializer: Self.wrap)
        let port = try #require(server.channel.localAddress?.port)
        try await server.executeThenClose { accepted in
            let client = try await TransportBootstraps.connect(
                on: group, to: Endpoint(host: "localhost", port: port), timeout: .seconds(5), allowsRemoteHalfClosure: false,
                channelInitializer: Self.wrap
            )
            var connections = accepted.makeAsyncIterator()
            let child = try #require(try await connections.next())
            #expect(client.channel.remoteAddress?.ipAddress == "127.0.0.1")
            try await client.executeThenClose { _, clientOut in
                try await child.executeThenClose { childIn, _ in
                    var fromClient = childIn.makeAsyncIterator()
                    let atChild = try await Self.cross("by name", from: clientOut, to: &fromClient)
                    #expect(atChild == "by name")
                }
            }
        }
    }

    @Test("on a MultiThreadedEventLoopGroup a Unix socket listens and is connected to; the send buffer asked for is applied, beyond a connection's without")
    func socketGroupUnixSocket() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let directory = try ScratchDirectory(prefix: "parley-bootstraps")
        let path = directory.file("node.sock")
        let server = try await TransportBootstraps.listen(on: group, unixDomainSocketPath: path, childChannelInitializer: Self.wrap)
        try await server.executeThenClose { accepted in
            var connections = accepted.makeAsyncIterator()
            let plain = try await TransportBootstraps.connect(on: group, unixDomainSocketPath: path, sendBufferSize: nil, channelInitializer: Self.wrap)
            let plainChild = try #require(try await connections.next())
            let widened = try await TransportBootstraps.connect(
                on: group, unixDomainSocketPath: path, sendBufferSize: 2 << 20, channelInitializer: Self.wrap
            )
            let widenedChild = try #require(try await connections.next())
            let plainBuffer = try await plain.channel.getOption(.socketOption(.so_sndbuf)).get()
            let widenedBuffer = try await widened.channel.getOption(.socketOption(.so_sndbuf)).get()
            #expect(widenedBuffer > plainBuffer)
            #expect(try await widened.channel.getOption(.allowRemoteHalfClosure).get())
            #expect(try await widenedChild.channel.getOption(.allowRemoteHalfClosure).get())
            try await plainChild.executeThenClose { _, _ in try await plain.executeThenClose { _, _ in } }
            try await widened.executeThenClose { _, widenedOut in
                try await widenedChild.executeThenClose { childIn, _ in
                    var fromClient = childIn.makeAsyncIterator()
                    let atChild = try await Self.cross("local", from: widenedOut, to: &fromClient)
                    #expect(atChild == "local")
                }
            }
        }
    }

    @Test("a group that runs neither sockets nor Network.framework is refused by every entry point, naming its type, before anything touches it", arguments: ["EmbeddedEventLoop", "NIOAsyncTestingEventLoop"])
    func otherGroupsRefused(kind: String) async throws {
        let group: any EventLoopGroup = kind == "EmbeddedEventLoop" ? EmbeddedEventLoop() : NIOAsyncTestingEventLoop()
        let endpoint = Endpoint(host: "127.0.0.1", port: 1)
        let attempts: [(String, () async throws -> Void)] = [
            ("check", { try TransportBootstraps.check(group) }),
            ("listen at an address", { _ = try await TransportBootstraps.listen(on: group, at: try SocketAddress(ipAddress: "127.0.0.1", port: 0), childChannelInitializer: Self.wrap) }),
            ("listen on a Unix socket", { _ = try await TransportBootstraps.listen(on: group, unixDomainSocketPath: "/nonexistent/node.sock", childChannelInitializer: Self.wrap) }),
            ("connect to an endpoint", { _ = try await TransportBootstraps.connect(on: group, to: endpoint, timeout: .seconds(1), allowsRemoteHalfClosure: true, channelInitializer: Self.wrap) }),
            ("connect to a Unix socket", { _ = try await TransportBootstraps.connect(on: group, unixDomainSocketPath: "/nonexistent/node.sock", sendBufferSize: nil, channelInitializer: Self.wrap) }),
        ]
        for (name, attempt) in attempts {
            do {
                try await attempt()
                Issue.record("\(name) on \(kind) was not refused")
            } catch TransceiverError.unsupportedEventLoopGroup(let type) {
                #expect(type == kind, "\(name)")
            }
        }
        if let testing = group as? NIOAsyncTestingEventLoop { await testing.shutdownGracefully() }
    }

    @Test("a transceiver given such a group is refused at start with an error naming it and the group to give instead, not a crash")
    func transceiverRefusesOtherGroups() async throws {
        // Thread-safe, unlike EmbeddedEventLoop: the transceiver touches its group from the test's threads.
        let loop = NIOAsyncTestingEventLoop()
        let transceiver = makeTransceiver("embedded") { $0.eventLoopGroup = loop }
        do {
            try await transceiver.start()
            Issue.record("a testing event loop was taken for a socket event loop group")
        } catch TransceiverError.unsupportedEventLoopGroup(let type) {
            #expect(type == "NIOAsyncTestingEventLoop")
        }
        let description = TransceiverError.unsupportedEventLoopGroup("NIOAsyncTestingEventLoop").description
        #expect(description.contains("NIOAsyncTestingEventLoop") && description.contains("MultiThreadedEventLoopGroup"))
        await loop.shutdownGracefully()
    }
}
