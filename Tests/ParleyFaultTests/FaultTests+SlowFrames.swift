import Foundation
import NIOCore
import Parley
import ParleyTestSupport
import ParleyWire
import Testing

extension FaultTests {
    static let slowFrameAttackers = 40

    /// Memory is bounded against frames that arrive slowly: 40 connections complete the hello, announce a frame of the
    /// maximum size and send 1 MiB of it, then nothing. parleyd runs with small limits (a 16 MiB budget, 8 MiB frames,
    /// a 2 s frame stall timeout) so that a regression fails here instead of taking the machine down. The 40 MiB the
    /// attackers push cannot all be held: the connections holding the most are closed with `memory-budget` as the
    /// budget fills, the rest with `stalled-frame` once their frame stops; normal peers' round trips through parleyd
    /// keep completing throughout (their latency is printed, not asserted).
    @Test("slow frames: 40 unfinished 8 MiB frames cannot take parleyd past its memory budget; holders are closed with memory-budget or stalled-frame while normal peers are served")
    func slowFrames() async throws {
        let budget = 16 << 20
        let maximumFrame = 8 << 20
        let daemon = try await ParleydProcess.start(name: "faultd", arguments: [
            "--memory-budget", String(budget), "--max-frame-size", String(maximumFrame), "--frame-stall-timeout", "2",
            "--max-connections-per-address", "64",
        ])
        let traffic = EchoTraffic(peerCount: 2)
        try await withRunning(traffic.transceivers) {
            try await traffic.connect(to: daemon)
            _ = try await traffic.measure(20)  // warm up
            let before = try daemon.memory()

            // The first MiB of a frame announcing (nearly) the maximum size.
            let header = MessageHeader(typeName: "attack.Slow", id: MessageID(1))
            let whole = frameBytes(.message(MessageFrame(header: header, payload: ByteBuffer(repeating: 0x20, count: maximumFrame - 256))))
            let firstMebibyte = Array(whole.prefix(1 << 20))
            let attackers = try await withThrowingTaskGroup(of: RawConnection.self) { group in
                for index in 0..<Self.slowFrameAttackers {
                    group.addTask {
                        let connection = try await RawConnection.open(port: daemon.port, from: "127.0.2.\(index % 4 + 1)")
                        try await connection.write(helloBytes(name: "slow-\(index)"))
                        try await connection.write(firstMebibyte)
                        return connection
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let allClosed: @Sendable () -> Bool = { attackers.allSatisfy(\.isClosed) }
            let deadline = ContinuousClock.now + .seconds(20)
            let during = try await traffic.measure { allClosed() || ContinuousClock.now > deadline }
            let after = try daemon.memory()

            let codes = attackers.map { attacker in
                frames(in: attacker.bytes).compactMap { frame -> ErrorCode? in
                    if case .close(let close) = frame { return close.code }
                    return nil
                }.first
            }
            let evicted = codes.count { $0 == .memoryBudget }
            let stalled = codes.count { $0 == .stalledFrame }
            report("slow frames: \(Self.slowFrameAttackers) connections × 1 MiB of an 8 MiB frame against a \(budget >> 20) MiB budget: \(evicted) closed with memory-budget, \(stalled) with stalled-frame, \(codes.count { $0 == nil }) without a close frame")
            report("slow frames: parleyd before \(before), after \(after); peak above the start \(ProcessMemory.mebibytes(after.peakResident - before.resident))")
            report("slow frames: normal round trips during the attack: \(during)")

            #expect(allClosed(), "attackers still open after 20 s")
            #expect(evicted > 0, "40 MiB against a 16 MiB budget: some holder must have been closed for the budget")
            #expect(evicted + stalled == Self.slowFrameAttackers, "\(codes)")
            #expect(during.count > 0, "no normal round trip completed during the attack")
            #expect(after.peakResident - before.resident < budget + (100 << 20), "parleyd grew past the budget + 100 MiB")
            #expect(daemon.warningCount("memory budget full: closing the connection that holds the most") == evicted)
        }
        #expect(try await daemon.stop() == 0)
    }
}
