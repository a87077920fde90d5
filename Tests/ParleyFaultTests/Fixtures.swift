import Foundation
import Logging
import NIOCore
import Parley
import ParleyControl
import ParleyTestSupport
import ParleyWire
import Synchronization

/// Figures go to standard output with one prefix, so `swift test --filter ParleyFaultTests 2>&1 | grep '\[fault\]'`
/// shows them all.
func report(_ line: String) {
    print("[fault] \(line)")
}

/// A transceiver that only dials (no listener), with a fresh id and no log output: hundreds of them share the
/// process-wide event-loop group.
func dialer(_ name: String) -> Transceiver {
    Transceiver(configuration: TransceiverConfiguration(
        name: name, identity: .ephemeral, listenHost: nil, port: 0,
        logger: Logger(label: "parley.fault", factory: { _ in SwiftLogNoOpLogHandler() })
    ))
}

/// Durations of completed round trips, summarised.
struct Latencies: CustomStringConvertible {
    var samples: [Duration] = []

    var count: Int { samples.count }

    func percentile(_ fraction: Double) -> Duration {
        guard !samples.isEmpty else { return .zero }
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    var description: String {
        guard !samples.isEmpty else { return "no samples" }
        return "\(count) round trips, p50 \(Self.ms(percentile(0.5))), p99 \(Self.ms(percentile(0.99))), max \(Self.ms(samples.max()!))"
    }

    static func ms(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.2f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}

/// The "normal peers" of the fault tests: LAN peers connected to parleyd over TCP that answer `test.Echo`, and a
/// local client on parleyd's control socket that asks them through parleyd (`@<peer>/test.Echo`), so each round
/// trip crosses parleyd's accept-side TCP connections, its routing and its control socket.
final class EchoTraffic: Sendable {
    let peers: [Transceiver]
    let client: Transceiver
    private let daemonID: Mutex<PeerID?> = Mutex(nil)
    private let peerIDs: Mutex<[PeerID]> = Mutex([])
    private let next = Atomic<Int>(0)

    init(peerCount: Int) {
        peers = (0..<peerCount).map { dialer("echo-\($0)") }
        for peer in peers { peer.respond(to: Echo.self) { echo, _ in echo } }
        client = dialer("echo-client")
    }

    var transceivers: [Transceiver] { peers + [client] }

    /// Connects the peers over TCP and the client over the control socket (the transceivers must be running).
    func connect(to daemon: ParleydProcess) async throws {
        var ids: [PeerID] = []
        for peer in peers {
            _ = try await peer.connect(to: daemon.endpoint)
            ids.append(peer.localPeerID!)
        }
        peerIDs.withLock { $0 = ids }
        let parleyd = try await client.connect(toUnixSocket: daemon.controlSocket)
        daemonID.withLock { $0 = parleyd.id }
    }

    /// One request through parleyd to the next echo peer (round robin); returns how long it took.
    func roundTrip(timeout: Duration = .seconds(20)) async throws -> Duration {
        let ids = peerIDs.withLock { $0 }
        let target = ids[next.add(1, ordering: .relaxed).oldValue % ids.count]
        let daemon = daemonID.withLock { $0 }!
        let text = "ping \(UUID().uuidString.prefix(8))"
        let started = ContinuousClock.now
        let reply = try await client.requestRaw(
            typeName: RoutedType(target: target.rawValue, typeName: Echo.messageType).wireName,
            payload: ByteBuffer(bytes: try JSONEncoder().encode(Echo(text: text))), from: daemon, timeout: timeout
        )
        let elapsed = ContinuousClock.now - started
        let echoed = try JSONDecoder().decode(Echo.self, from: Data(reply.payload.readableBytesView))
        guard reply.typeName == Echo.messageType, echoed.text == text else {
            throw PeerProcessError("round trip through parleyd answered \(reply.typeName) \(echoed.text), expected \(text)")
        }
        return elapsed
    }

    /// `count` round trips, one after the other.
    func measure(_ count: Int) async throws -> Latencies {
        var latencies = Latencies()
        for _ in 0..<count { latencies.samples.append(try await roundTrip()) }
        return latencies
    }

    /// Round trips one after the other until `done` returns true (checked between round trips). Every round trip
    /// must complete: the first failure is thrown.
    func measure(until done: @Sendable () -> Bool) async throws -> Latencies {
        var latencies = Latencies()
        while !done() { latencies.samples.append(try await roundTrip()) }
        return latencies
    }

    /// Round trips one after the other while `work` runs: what it gave, the round trips, and how long it ran.
    func measure<T: Sendable>(while work: Task<T, any Error>) async throws -> (result: T, during: Latencies, took: Duration) {
        let finished = Mutex(false)
        let watcher = Task {
            _ = try? await work.value
            finished.withLock { $0 = true }
        }
        let started = ContinuousClock.now
        let during = try await measure { finished.withLock { $0 } }
        let took = ContinuousClock.now - started
        _ = await watcher.value
        return (try await work.value, during, took)
    }
}

/// A hello as a hand-written peer sends it; without the `heartbeat` capability, so parleyd neither pings it nor
/// times it out for silence.
func helloBytes(name: String, minimumVersion: UInt16 = 1, maximumVersion: UInt16 = 1) -> [UInt8] {
    let json = #"{"peerID":"\#(UUID().uuidString)","name":"\#(name)","capabilities":[],"accepts":[]}"#
    return frameBytes(.hello(HelloFrame(minimumVersion: minimumVersion, maximumVersion: maximumVersion, body: ByteBuffer(string: json))))
}

func frameBytes(_ frame: Frame) -> [UInt8] {
    var buffer = ByteBuffer()
    frame.write(to: &buffer)
    return Array(buffer.readableBytesView)
}

/// The whole frames in `bytes` (what a raw connection received), ignoring a broken tail.
func frames(in bytes: [UInt8]) -> [Frame] {
    var buffer = ByteBuffer(bytes: bytes)
    var decoder = FrameDecoder()
    var frames: [Frame] = []
    while let frame = try? decoder.decode(buffer: &buffer) { frames.append(frame) }
    return frames
}

/// The code of the close frame among `frames`, if any.
func closeCode(in frames: [Frame]) -> ErrorCode? {
    for case .close(let close) in frames { return close.code }
    return nil
}

/// A value several tasks update; a class, so that tasks can share it (a `Mutex` on its own cannot be captured).
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func update<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
    var current: Value { value.withLock { $0 } }
}
