import Foundation
import Logging
import NIOCore
import Parley
import ParleyDebugger
import ParleyRemoteDebugger
import ParleyTestSupport
import Synchronization
import Testing

// MARK: - An app's types

struct CounterState: Codable, Sendable, Equatable {
    var count: Int
    var label: String
    var ratio: Double
    var tags: [String]
}

enum CounterAction: Sendable, Equatable {
    case increment
    case reset
    case tick(Int)
    case mouseMoved(x: Int, y: Int)
}

/// The team's named filters, kept in one place as the documentation of ``ActionFilter`` suggests.
extension ActionFilter where Action == CounterAction {
    /// Actions fired continuously (timers, pointer movement): recorded, they bury the interesting ones.
    static var noisy: Self {
        Self { action in
            switch action {
            case .tick, .mouseMoved: true
            case .increment, .reset: false
            }
        }
    }

    static var resets: Self {
        Self { $0 == .reset }
    }
}

/// PNG signature followed by every byte value, including ones that are not valid UTF-8 and would be mangled by
/// anything treating the screenshot as text.
let samplePNG = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) })

func sampleState(_ count: Int) -> CounterState {
    CounterState(count: count, label: "Zähler №\(count) ✓", ratio: Double(count) + 0.1, tags: ["a/b", "\"q\""])
}

let quietLogger = Logger(label: "parley.test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A client of the test's debugger: at `127.0.0.1:port`, or wherever `location` says.
func makeClient(
    port: Int,
    location: DebuggerLocation? = nil,
    wireProtocol: DebuggerWireProtocol = .parley,
    queueCapacity: Int = 32,
    filter: ActionFilter<CounterAction> = .all,
    flushTimeout: Duration = .seconds(10),
    logger: Logger = quietLogger
) -> RemoteDebugger<CounterState, CounterAction> {
    RemoteDebugger(
        configuration: .init(
            appName: "counter-app",
            debugger: location ?? .endpoint(host: "127.0.0.1", port: port),
            wireProtocol: wireProtocol,
            queueCapacity: queueCapacity,
            filter: filter,
            identity: .ephemeral,
            flushTimeout: flushTimeout,
            trust: .anyOpen,
            logger: logger
        )
    )
}

// MARK: - Discovery the test controls

/// Stands in for the discovery backend an app passes (Avahi on a LAN): whatever type is browsed, its backends find
/// one service, the test's debugger on 127.0.0.1. Keeps what was browsed, so that a test sees it was the one used.
final class DebuggerDiscovery: Sendable {
    let port: Int
    /// The TXT record's peer id: what a transceiver needs to dial a discovered service by itself.
    let peerID: String?
    private let browsedTypes = Mutex<[String]>([])
    private let madeCount = Mutex(0)

    init(port: Int, peerID: String? = nil) {
        self.port = port
        self.peerID = peerID
    }

    /// The service types browsed so far, by every backend made.
    var browsed: [String] { browsedTypes.withLock { $0 } }
    /// How many backends were made.
    var made: Int { madeCount.withLock { $0 } }

    var factory: DiscoveryBackendFactory {
        DiscoveryBackendFactory(name: "test discovery") { _ in
            self.madeCount.withLock { $0 += 1 }
            return Backend(discovery: self)
        }
    }

    var service: DiscoveredService {
        let loopback = ResolvedAddress(host: "127.0.0.1", family: .ipv4, interfaceIndex: 1, interfaceName: "lo", isLinkLocal: false)
        return DiscoveredService(
            instanceName: "test-debugger", type: .debug, domain: "local", hostName: "localhost", addresses: [loopback],
            port: UInt16(port), txt: TXTRecord(peerID.map { [(key: TXTRecord.ParleyKey.peerID, value: $0)] } ?? [])
        )
    }

    final class Backend: DiscoveryBackend {
        let events: AsyncStream<DiscoveryEvent>
        private let continuation: AsyncStream<DiscoveryEvent>.Continuation
        private let discovery: DebuggerDiscovery

        init(discovery: DebuggerDiscovery) {
            self.discovery = discovery
            (events, continuation) = AsyncStream.makeStream()
        }

        func start() throws {}
        func advertise(_ advertisement: Advertisement) throws {}
        func withdraw() {}
        func browse(_ type: ServiceType, domain: String?) {
            discovery.browsedTypes.withLock { $0.append(type.rawValue) }
            var service = discovery.service
            service.type = type
            continuation.yield(.found(service))
        }
        func stopBrowsing(_ type: ServiceType, domain: String?) {}
        func stop() { continuation.finish() }
    }
}

// MARK: - A debugger for the typed protocol

/// An in-process stand-in for parleyd: a transceiver on 127.0.0.1 that handles `parley.debugger.record` and
/// collects what arrives.
final class TestDebugger: Sendable {
    struct Arrival: Sendable {
        var record: StateRecord
        var payloadSize: Int
        var peer: Peer
    }

    let transceiver: Transceiver
    let arrivals = Inbox<Arrival>()

    init(port: Int = 0) {
        transceiver = Transceiver(
            configuration: TransceiverConfiguration(
                name: "test-debugger", identity: .ephemeral, listenHost: "127.0.0.1", port: port, logger: quietLogger
            )
        )
        transceiver.receiveRaw(typeName: StateRecord.messageType) { [arrivals] message, peer in
            let record = try StateRecord(decoding: message.payload)
            arrivals.put(Arrival(record: record, payloadSize: message.payload.readableBytes, peer: peer))
        }
    }

    /// Starts a debugger; on a given port, retries for a while if the port is not free yet (seen on a loaded
    /// machine right after the previous listener on it closed).
    static func start(port: Int = 0) async throws -> TestDebugger {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let debugger = TestDebugger(port: port)
            do {
                try await debugger.transceiver.start()
                return debugger
            } catch {
                guard port != 0, ContinuousClock.now < deadline else { throw error }
                // Real sleep: a retry pause. The kernel frees the port in its own time and says nothing when it has.
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    var port: Int { transceiver.listeningPort! }

    func stop() async { await transceiver.stop() }

    /// The app, once it has connected.
    func waitForApp() async throws -> Peer {
        try await transceiver.waitForPeer(timeout: .seconds(30), description: "the app") { $0.name == "counter-app" }
    }

    /// The next `count` records, in arrival order.
    func records(_ count: Int) async throws -> [StateRecord] {
        try await arrivals.take(count).map(\.record)
    }

    /// The next `count` records from `client`. When they do not come, the error says what the client counted and
    /// whether it saw a debugger, and which peers the debugger had: a record never sent, one that failed, and one
    /// lost on the way fail differently.
    func records(_ count: Int, sentBy client: RemoteDebugger<CounterState, CounterAction>) async throws -> [StateRecord] {
        do {
            return try await records(count)
        } catch let error as TestTimeout {
            throw RecordsMissing(
                timeout: error, client: "\(client.statistics)", clientConnected: client.isConnected,
                pending: client.pendingCount, debuggerPeers: transceiver.peers.map(\.description))
        }
    }
}

struct RecordsMissing: Error, CustomStringConvertible {
    var timeout: TestTimeout
    var client: String
    var clientConnected: Bool
    var pending: Int
    var debuggerPeers: [String]

    var description: String {
        "\(timeout); the client: \(client), connected \(clientConnected), \(pending) queued; the debugger's peers: \(debuggerPeers)"
    }
}

extension StateRecord {
    func decodedState() throws -> CounterState {
        try JSONDecoder().decode(CounterState.self, from: Data(state.readableBytesView))
    }
}

// MARK: - Waiting

// MARK: - A raw debugger for the original framing

/// The original framing written and read by hand (no Parley code), so that the tests check the client's bytes
/// against the description of the framing, not against Parley's own codec: a start byte, the body's length as a
/// little-endian Int32, the body.
extension RawConnection {
    struct NegativeLength: Error, CustomStringConvertible {
        var length: Int32
        var description: String { "negative length \(length)" }
    }

    /// Reads one frame.
    func readOriginalFrame(timeout: Duration = .seconds(30)) async throws -> (start: UInt8, body: Data) {
        let prefix = try await read(5, timeout: timeout)
        let length = Int32(bitPattern: UInt32(prefix[1]) | UInt32(prefix[2]) << 8 | UInt32(prefix[3]) << 16 | UInt32(prefix[4]) << 24)
        guard length >= 0 else { throw NegativeLength(length: length) }
        return (prefix[0], Data(try await read(Int(length), timeout: timeout)))
    }

    /// Writes a 206 frame holding `json`.
    func writeOriginalFrame(_ json: Data) async throws {
        let length = UInt32(json.count)
        try await write([206, UInt8(length & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 24)] + [UInt8](json))
    }
}
