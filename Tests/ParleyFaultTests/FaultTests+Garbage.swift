import Foundation
import NIOCore
import ParleyTestSupport
import ParleyWire
import Testing

extension FaultTests {
    /// What one garbage connection sends (then it half-closes), and what parleyd must make of it.
    enum Garbage: CaseIterable, Sendable {
        /// Random bytes whose first byte is neither start byte.
        case randomBytes
        /// 0xCF and a length above the 64 MiB maximum.
        case hugeParleyLength
        /// 0xCE and a length above the maximum.
        case hugeOriginalLength
        /// 0xCE and a negative length.
        case negativeOriginalLength
        /// A whole 0xCF frame of random body (a random kind byte, not hello or close).
        case randomParleyBody
        /// 0xCF, a length under the maximum (up to 60 MiB), and far fewer bytes before the end of the stream.
        case truncatedFrame
        /// Nothing at all: connect, then close.
        case nothing
        /// A hello frame whose JSON is random bytes.
        case badHelloJSON
        /// A well-formed hello for protocol versions 2…9.
        case wrongVersions
        /// A valid hello, then random bytes.
        case helloThenRandom
        /// A valid hello, then a frame announcing a length above the maximum.
        case helloThenHugeLength
        /// A valid hello, then an original-debugger frame, which a Parley peer must not send.
        case helloThenOriginalFrame
        /// An original-debugger frame whose body is not JSON: a debugger app is accepted, its record refused.
        case originalNotJSON

        /// The start of the log line parleyd must write for it.
        var expectedLog: String {
            switch self {
            case .helloThenRandom, .helloThenHugeLength, .helloThenOriginalFrame: "protocol error; connection closed"
            case .originalNotJSON: "frame in the original debugger framing not understood"
            default: "handshake failed; connection closed"
            }
        }

        /// The close code parleyd must send, where it sends one.
        var expectedCloseCode: ErrorCode? {
            switch self {
            case .wrongVersions: .incompatibleVersion
            case .helloThenRandom: .malformedFrame
            case .helloThenHugeLength: .frameTooLarge
            case .helloThenOriginalFrame: .malformedFrame  // after a Parley hello, 0xCE is just a wrong start byte
            case .hugeParleyLength, .randomParleyBody, .badHelloJSON: .protocolViolation
            default: nil
            }
        }

        func bytes(using random: inout SeededGenerator) -> [UInt8] {
            func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
            let maximum = UInt32(FrameLayout.defaultMaximumBodySize)
            switch self {
            case .randomBytes:
                var first = UInt8.random(in: 0...255, using: &random)
                while first == 0xCE || first == 0xCF { first = UInt8.random(in: 0...255, using: &random) }
                return [first] + random.bytes(Int.random(in: 0..<2048, using: &random))
            case .hugeParleyLength:
                return [0xCF] + le32(UInt32.random(in: (maximum + 1)...UInt32.max, using: &random)) + random.bytes(64)
            case .hugeOriginalLength:
                return [0xCE] + le32(UInt32.random(in: (maximum + 1)...UInt32(Int32.max), using: &random)) + random.bytes(64)
            case .negativeOriginalLength:
                return [0xCE] + le32(UInt32.random(in: 0x8000_0000...UInt32.max, using: &random)) + random.bytes(64)
            case .randomParleyBody:
                // Any kind but hello (which may announce other versions) and close (a refusal, answered with nothing).
                let length = Int.random(in: 1...512, using: &random)
                var body = random.bytes(length)
                while body[0] == 0x01 || body[0] == 0x30 { body[0] = UInt8.random(in: 0...255, using: &random) }
                return [0xCF] + le32(UInt32(length)) + body
            case .truncatedFrame:
                let length = UInt32.random(in: 1000...(60 << 20), using: &random)
                return [0xCF] + le32(length) + random.bytes(Int.random(in: 0..<Int(min(length, 4096)), using: &random))
            case .nothing:
                return []
            case .badHelloJSON:
                let body = random.bytes(Int.random(in: 1...300, using: &random))
                return [0xCF] + le32(UInt32(5 + body.count)) + [0x01, 1, 0, 1, 0] + body
            case .wrongVersions:
                return helloBytes(name: "from-the-future", minimumVersion: 2, maximumVersion: 9)
            case .helloThenRandom:
                var first = UInt8.random(in: 0...255, using: &random)
                while first == 0xCE || first == 0xCF { first = UInt8.random(in: 0...255, using: &random) }
                return helloBytes(name: "garbage") + [first] + random.bytes(Int.random(in: 0..<512, using: &random))
            case .helloThenHugeLength:
                return helloBytes(name: "garbage") + [0xCF] + le32(UInt32.random(in: (maximum + 1)...UInt32.max, using: &random))
            case .helloThenOriginalFrame:
                let json = Array(#"{"state":{},"action":"x","imageData":""}"#.utf8)
                return helloBytes(name: "garbage") + [0xCE] + le32(UInt32(json.count)) + json
            case .originalNotJSON:
                let body = [0x00] + random.bytes(Int.random(in: 0..<1024, using: &random))
                return [0xCE] + le32(UInt32(body.count)) + body
            }
        }
    }

    static let garbageWaves = 20
    static let garbageWaveSize = 30

    /// Hundreds of connections sending garbage, in waves of 30 from 30 loopback addresses (one connection each,
    /// so no connection limit interferes), every kind of `Garbage` in turn, while a normal peer's round trips through
    /// parleyd keep going. parleyd must close every one, log each with the right line (its protocol errors counted
    /// in its log), tell Parley-looking ones the right close code, keep serving, and exit cleanly on SIGTERM.
    @Test("hundreds of garbage connections: parleyd closes and logs each, keeps serving a normal peer, and does not crash")
    func garbage() async throws {
        let seed = ProcessInfo.processInfo.environment["FAULT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        var random = SeededGenerator(seed: seed)
        let daemon = try await ParleydProcess.start(name: "faultd")
        let traffic = EchoTraffic(peerCount: 1)
        let kinds = Garbage.allCases
        let plan: [(Garbage, [UInt8])] = (0..<(Self.garbageWaves * Self.garbageWaveSize)).map { index in
            let kind = kinds[index % kinds.count]
            return (kind, kind.bytes(using: &random))
        }
        let allSent = Shared(false)
        let started = ContinuousClock.now
        let (outcomes, during) = try await withRunning(traffic.transceivers) {
            try await traffic.connect(to: daemon)
            return try await withThrowingTaskGroup(of: ([(Garbage, Bool, ErrorCode?)], Latencies?).self) { group in
                group.addTask { ([], try await traffic.measure { allSent.current }) }
                group.addTask {
                    defer { allSent.update { $0 = true } }
                    var outcomes: [(Garbage, Bool, ErrorCode?)] = []
                    for wave in 0..<Self.garbageWaves {
                        let slice = plan[(wave * Self.garbageWaveSize)..<((wave + 1) * Self.garbageWaveSize)]
                        outcomes += try await withThrowingTaskGroup(of: (Garbage, Bool, ErrorCode?).self) { connections in
                            for (offset, (kind, bytes)) in slice.enumerated() {
                                connections.addTask {
                                    let connection = try await RawConnection.open(port: daemon.port, from: "127.0.2.\(offset + 1)")
                                    if !bytes.isEmpty { try? await connection.write(bytes) }
                                    await connection.shutdownOutput()
                                    let closed = await connection.waitUntilClosed(timeout: .seconds(15))
                                    return (kind, closed, closeCode(in: frames(in: connection.bytes)))
                                }
                            }
                            return try await connections.reduce(into: []) { $0.append($1) }
                        }
                    }
                    return (outcomes, nil)
                }
                var outcomes: [(Garbage, Bool, ErrorCode?)] = []
                var during: Latencies?
                for try await (some, latencies) in group {
                    outcomes += some
                    during = during ?? latencies
                }
                return (outcomes, during)
            }
        }
        let elapsed = ContinuousClock.now - started
        let bytesSent = plan.reduce(0) { $0 + $1.1.count }
        let status = try await daemon.ctl(["status"])
        let memory = try daemon.memory()

        func expected(_ log: String) -> Int { plan.filter { $0.0.expectedLog == log }.count }
        // Lines held back by parleyd's log throttle are counted a second after the first of them.
        let logKinds = [Garbage.randomBytes, .helloThenRandom, .originalNotJSON].map(\.expectedLog)
        let wanted = logKinds.map(expected)
        _ = await eventually(timeout: .seconds(10)) { logKinds.map(daemon.warningCount) == wanted }
        let handshakeFailures = daemon.warningCount(Garbage.randomBytes.expectedLog)
        let protocolErrors = daemon.warningCount(Garbage.helloThenRandom.expectedLog)
        let rejected = daemon.warningCount(Garbage.originalNotJSON.expectedLog)
        let written = logKinds.map { kind in daemon.logLines(containing: ": " + kind).count }.reduce(0, +)
        report("garbage: seed \(seed) (FAULT_SEED=\(seed) replays it); \(plan.count) connections, \(ProcessMemory.mebibytes(bytesSent)) of garbage in \(Latencies.ms(elapsed))")
        report("garbage: closed by parleyd \(outcomes.filter(\.1).count) of \(plan.count); logged \(handshakeFailures) handshake failures, \(protocolErrors) protocol errors after the handshake, \(rejected) rejected debugger records (\(written) lines written, the rest counted in \(daemon.logLines(containing: "log lines held back").count) held-back lines)")
        report("garbage: a normal peer's round trips through parleyd meanwhile: \(during.map(\.description) ?? "none"); parleyd \(memory)")

        #expect(outcomes.count == plan.count)
        #expect(outcomes.allSatisfy { $0.1 }, "parleyd left \(outcomes.filter { !$0.1 }.map(\.0)) open")
        for (kind, _, code) in outcomes {
            if let wanted = kind.expectedCloseCode { #expect(code == wanted, "\(kind): close code \(code.map(\.description) ?? "none")") }
        }
        #expect(handshakeFailures == expected(Garbage.randomBytes.expectedLog))
        #expect(protocolErrors == expected(Garbage.helloThenRandom.expectedLog))
        #expect(rejected == expected(Garbage.originalNotJSON.expectedLog))
        #expect(daemon.logLines(containing: "connection refused").isEmpty)
        #expect((during?.count ?? 0) > 0)
        #expect(daemon.isRunning && status.status == 0, "\(status)")
        #expect(try await daemon.stop() == 0)
    }
}
