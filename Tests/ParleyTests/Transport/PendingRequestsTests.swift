import NIOCore
import NIOEmbedded
@testable import Parley
import ParleyWire
import Synchronization
import Testing

/// The table of requests waiting for their replies, its timers on a testing loop moved by hand.
@Suite("Pending requests and their deadlines")
struct PendingRequestsTests {
    static let alice = PeerID()

    @Test("each request fails at its own deadline, not before, whatever order they were sent in; one answered in time does not")
    func requestDeadlines() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let requests = PendingRequests()
        let bob = PeerID()
        let start = loop.now
        let slow = requests.register(MessageID(1), to: Self.alice, deadline: start + .seconds(3), timerOn: loop)
        let answered = requests.register(MessageID(2), to: Self.alice, deadline: start + .seconds(2), timerOn: loop)
        // Sent after the others, with a shorter timeout: due first.
        let short = requests.register(MessageID(3), to: Self.alice, deadline: start + .seconds(1), timerOn: loop)
        let toBob = requests.register(MessageID(4), to: bob, deadline: start + .seconds(1), timerOn: loop)

        await loop.advanceTime(to: start + .milliseconds(999))
        #expect(requests.count == 4)
        await loop.advanceTime(to: start + .seconds(1))
        await #expect(throws: TimeoutExpired.self) { try await short.value() }
        await #expect(throws: TimeoutExpired.self) { try await toBob.value() }
        #expect(requests.count == 2)

        await loop.advanceTime(to: start + .milliseconds(1500))
        let reply = InboundMessage(header: MessageHeader(typeName: "test.Note", id: MessageID(9), inReplyTo: MessageID(2)), payload: ByteBuffer())
        #expect(requests.resolve(MessageID(2), from: Self.alice, with: .success(.message(reply))))
        guard case .message(let answer) = try await answered.value() else {
            Issue.record("the answered request did not get its reply")
            return
        }
        #expect(answer.header.id == MessageID(9))

        // Due between the deadlines already known: the timer is re-armed for it.
        let added = requests.register(MessageID(5), to: Self.alice, deadline: start + .milliseconds(2500), timerOn: loop)
        await loop.advanceTime(to: start + .milliseconds(2499))
        #expect(requests.count == 2)
        await loop.advanceTime(to: start + .milliseconds(2500))
        await #expect(throws: TimeoutExpired.self) { try await added.value() }
        await loop.advanceTime(to: start + .milliseconds(2999))
        #expect(requests.count == 1)
        await loop.advanceTime(to: start + .seconds(3))
        await #expect(throws: TimeoutExpired.self) { try await slow.value() }
        #expect(requests.count == 0)
        #expect(!requests.resolve(MessageID(1), from: Self.alice, with: .success(.message(reply))), "a timed-out request is gone")
    }

    @Test("a reply counts only from the peer the request went to; a peer that leaves fails its own requests only")
    func repliesFromTheirPeerOnly() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let requests = PendingRequests()
        let mallory = PeerID()
        let toAlice = requests.register(MessageID(1), to: Self.alice, deadline: .distantFuture, timerOn: loop)
        let toMallory = requests.register(MessageID(2), to: mallory, deadline: .distantFuture, timerOn: loop)
        let reply = InboundMessage(header: MessageHeader(typeName: "test.Note", id: MessageID(9), inReplyTo: MessageID(1)), payload: ByteBuffer())

        #expect(!requests.resolve(MessageID(1), from: mallory, with: .success(.message(reply))), "another peer guessed the id")
        #expect(!requests.resolve(MessageID(1), from: mallory, with: .failure(TimeoutExpired())))
        struct Gone: Error {}
        requests.failAll(to: mallory, with: Gone())
        await #expect(throws: Gone.self) { try await toMallory.value() }
        #expect(requests.count == 1, "Alice's request still waits")

        #expect(requests.resolve(MessageID(1), from: Self.alice, with: .success(.message(reply))))
        guard case .message(let answer) = try await toAlice.value() else {
            Issue.record("Alice's request did not get her reply")
            return
        }
        #expect(answer.header.id == MessageID(9))
        #expect(requests.count == 0)
    }
}
