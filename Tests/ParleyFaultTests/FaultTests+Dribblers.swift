import Foundation
import NIOCore
import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

extension FaultTests {
    static let dribblerCount = 50

    /// Slowloris: 50 connections each send a hello one byte a second. parleyd's handshake clock starts with an
    /// accepted connection's first byte, so each must be closed `handshakeTimeout` (5 s by default) after it. They
    /// come from five loopback addresses, ten each, so that the per-address limit (16) does not refuse them first.
    /// Meanwhile the normal peers' round trips through parleyd keep completing; their latency is printed (before,
    /// during and after), not asserted.
    @Test("50 connections dribbling a byte a second are closed by the handshake timeout while normal peers keep being served")
    func dribblers() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd")
        let traffic = EchoTraffic(peerCount: 4)
        let lateJoiner = dialer("late-joiner")
        try await withRunning(traffic.transceivers + [lateJoiner]) {
            try await traffic.connect(to: daemon)
            _ = try await traffic.measure(20)  // warm up
            let before = try await traffic.measure(200)

            let dribblers = try await withThrowingTaskGroup(of: RawConnection.self) { group in
                for index in 0..<Self.dribblerCount {
                    group.addTask { try await RawConnection.open(port: daemon.port, from: "127.0.1.\(index % 5 + 1)") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let hello = helloBytes(name: "dribbler")
            let firstByte = Shared<[Int: ContinuousClock.Instant]>([:])
            let sent = Shared(0)
            let allClosed: @Sendable () -> Bool = { dribblers.allSatisfy(\.isClosed) }
            let deadline = ContinuousClock.now + .seconds(30)

            let (during, joinTime) = try await withThrowingTaskGroup(of: (Latencies?, Duration?).self) { group in
                for (index, dribbler) in dribblers.enumerated() {
                    group.addTask {
                        for byte in hello where !dribbler.isClosed && ContinuousClock.now < deadline {
                            guard (try? await dribbler.write([byte])) != nil else { break }
                            sent.update { $0 += 1 }
                            firstByte.update { $0[index] = $0[index] ?? .now }
                            // Real sleep: a byte a second is the attack under test (slowloris).
                            try await Task.sleep(for: .seconds(1))
                        }
                        return (nil, nil)
                    }
                }
                group.addTask {
                    (try await traffic.measure { allClosed() || ContinuousClock.now > deadline }, nil)
                }
                group.addTask {
                    // A new peer arriving in the middle of it is served too. Real sleep: "the middle" of a dribble
                    // that lasts as long as the deadline is a point in time, not an event.
                    try await Task.sleep(for: .seconds(2))
                    let started = ContinuousClock.now
                    _ = try await lateJoiner.connect(to: daemon.endpoint)
                    return (nil, ContinuousClock.now - started)
                }
                var during: Latencies?
                var joinTime: Duration?
                for try await (latencies, join) in group {
                    during = during ?? latencies
                    joinTime = joinTime ?? join
                }
                return (during, joinTime)
            }
            let after = try await traffic.measure(200)

            let starts = firstByte.current
            let lifetimes = dribblers.enumerated().compactMap { index, dribbler in
                starts[index].flatMap { start in dribbler.closedAt.map { $0 - start } }
            }.sorted()
            let codes = dribblers.map { closeCode(in: frames(in: $0.bytes)) }
            let timedOutLines = daemon.logLines(containing: "handshake failed").filter { $0.contains("no hello within") }
            report("dribblers: \(Self.dribblerCount) connections sent \(sent.current) bytes in all; closed \(lifetimes.count), \(Latencies.ms(lifetimes.first ?? .zero)) – \(Latencies.ms(lifetimes.last ?? .zero)) after the first byte; parleyd logged \(timedOutLines.count) handshake timeouts")
            report("dribblers: round trips through parleyd before: \(before)")
            report("dribblers: round trips through parleyd during: \(during.map(\.description) ?? "none")")
            report("dribblers: round trips through parleyd after: \(after)")
            report("dribblers: a new peer connected during the dribble in \(joinTime.map(Latencies.ms) ?? "?"); parleyd \(try daemon.memory())")

            #expect(dribblers.allSatisfy { $0.isClosed }, "parleyd kept \(dribblers.filter { !$0.isClosed }.count) dribblers open")
            #expect(codes.allSatisfy { $0 == .handshakeTimeout }, "close codes: \(codes)")
            #expect(sent.current < Self.dribblerCount * hello.count, "a dribbler finished its hello")
            #expect(timedOutLines.count == Self.dribblerCount)
            #expect((during?.count ?? 0) > 0, "no round trip completed while the dribblers were connected")
            #expect(joinTime != nil)
            for dribbler in dribblers { dribbler.close() }
        }
        #expect(try await daemon.stop() == 0)
    }
}
