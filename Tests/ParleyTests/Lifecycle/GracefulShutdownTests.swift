import Foundation
import Logging
@testable import Parley
import ParleyTestSupport
import ServiceLifecycle
import Synchronization
import Testing

@Suite("Graceful shutdown as a Service", .timeLimit(.minutes(1)))
struct GracefulShutdownTests {
    @Test("graceful shutdown of a ServiceGroup drains: a reply being computed still reaches the requester, then the peer hears goodbye")
    func drainsInFlightReply() async throws {
        let server = makeTransceiver("server")
        let client = makeTransceiver("client", listen: nil)
        let handling = Inbox<String>()
        let release = AsyncStream<Void>.makeStream()
        server.respond(to: Echo.self) { echo, _ -> Echo in
            handling.put(echo.text)
            for await _ in release.stream { break }  // held until the shutdown has begun
            return Echo(text: "answered " + echo.text)
        }
        let group = ServiceGroup(services: [server], logger: .init(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await server.waitUntilListening()
            try await client.start()
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let events = client.peerEvents
            let reply = Task { try await client.request(Echo(text: "last words"), from: peer, expecting: Echo.self) }
            #expect(try await handling.next() == "last words")

            await group.triggerGracefulShutdown()
            // Draining: no longer running, but the handler's connection stays until its reply is out.
            #expect(await eventually { !server.isRunning })
            await #expect(throws: TransceiverError.self) { try await server.waitUntilListening() }
            release.continuation.yield()
            #expect(try await reply.value == Echo(text: "answered last words"))

            var reason: DisconnectReason?
            for await event in events {
                if case .disconnected(_, let why) = event {
                    reason = why
                    break
                }
            }
            guard case .peerSaidGoodbye(.goingAway, _)? = reason else {
                Issue.record("expected the server's goodbye (going-away), got \(reason.map(String.init(describing:)) ?? "no reason")")
                return
            }
            try await tasks.next()
            await client.stop()
        }
    }
}
