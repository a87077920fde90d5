import Foundation
import Logging
import NIOCore
import NIOPosix
import Parley
import ParleyJSON
import ParleyTestSupport
import Synchronization

// parley-bench: Parley between two processes over loopback. The parent sends; a child copy of this binary
// (`parley-bench receiver`) receives. Every figure is printed; nothing is asserted. The latency rows end with a
// bare SwiftNIO echo of the same bytes (`parley-bench bare-echo`, BareEcho.swift), the floor under Parley's.
//
//   parley-bench [--quick | --long] [--encrypted] [--nio-executor] [--json] [--only typed,raw,latency,roundtrip,large,big,daemon,telemetry,otlp,handshake,stall]
//
// --encrypted: both sides share a secret, so every frame is sealed (ChaCha20-Poly1305) after the handshake.
// --nio-executor: this process installs NIO's event loops as Swift's global executor (NIOSingletons) before it
//   starts; the rows "on the global executor" then run there.
// --only: just these measurements (JSON alone always runs: the typed row is read against it). With --long
//   (10× more messages) one measurement lasts long enough to be profiled on its own (`perf record -p`).
// --json: the figures as one JSON object on stdout, the human lines on stderr (Report.swift).

struct SmallMessage: Codable, Sendable, NamedMessage {
    static let messageType = "bench.Small"
    var id: Int
    var title: String
    var tags: [String]
    var done: Bool
}

struct LargeMessage: Codable, Sendable, NamedMessage {
    static let messageType = "bench.Large"
    var items: [String]
}

struct CountQuery: Codable, Sendable, NamedMessage {
    static let messageType = "bench.CountQuery"
}

struct Count: Codable, Sendable, NamedMessage {
    static let messageType = "bench.Count"
    var messages: Int
    var bytes: Int
}

struct Ping: Codable, Sendable, NamedMessage {
    static let messageType = "bench.Ping"
    var sequence: Int
}

let rawTypeName = "bench.Raw"
let stallTypeName = "bench.Stall"
/// Answered with the request's own payload: a round trip with no codec, like pyzmq's REQ/REP byte echo.
let echoTypeName = "bench.Echo"

func configuration(_ name: String, listen: Bool, secret: SharedSecret?) -> TransceiverConfiguration {
    TransceiverConfiguration(name: name, identity: .ephemeral, listenHost: listen ? "127.0.0.1" : nil, port: 0, sharedSecret: secret)
}

// MARK: - Receiver process

/// Counts what arrives. A lock, not an actor: an actor call from a handler would hop threads per message and
/// measure Swift's executor, not Parley.
final class Tally: Sendable {
    private let state = Mutex((messages: 0, bytes: 0))
    func add(_ size: Int) {
        state.withLock {
            $0.messages += 1
            $0.bytes += size
        }
    }
    var count: Count { state.withLock { Count(messages: $0.messages, bytes: $0.bytes) } }
}

func runReceiver(secretFile: String?) async throws -> Never {
    let tally = Tally()
    let secret = try secretFile.map { try SharedSecret(contentsOfFile: $0) }
    let parley = Transceiver(configuration: configuration("bench-receiver", listen: true, secret: secret))
    parley.receive(SmallMessage.self) { message, _ in tally.add(message.title.utf8.count) }
    parley.receive(LargeMessage.self) { message, _ in tally.add(message.items.count) }
    parley.receiveRaw(typeName: rawTypeName) { message, _ in tally.add(message.payload.readableBytes) }
    parley.receiveRaw(typeName: stallTypeName) { _, _ in
        // A receiver that stops reading: its handler never returns, so Parley stops reading from the socket.
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
    parley.respond(to: CountQuery.self) { _, _ in tally.count }
    parley.respond(to: Ping.self) { ping, _ in ping }
    parley.respondRaw(to: echoTypeName) { message, _ in (echoTypeName, message.payload) }
    try await parley.start()
    try await announceReady(port: parley.listeningPort!, id: "\(parley.localPeerID!)")
}

/// Tells the parent process (PeerProcess) where to connect, then serves until killed.
func announceReady(port: Int, id: String) async throws -> Never {
    FileHandle.standardOutput.write(Data("READY port=\(port) id=\(id)\n".utf8))
    while true { try await Task.sleep(for: .seconds(3600)) }
}

// MARK: - Measurements

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func format(_ value: Double) -> String {
    value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value)
}

/// The resident set (VmRSS) of this process, or of the process `pid`, in MiB; -1 if it cannot be read.
func residentMemoryMiB(of pid: Int32? = nil) -> Double {
    guard let status = try? String(contentsOfFile: "/proc/\(pid.map(String.init) ?? "self")/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
    else { return -1 }
    return kib / 1024
}

/// Minor page faults of the process `pid` so far (field 10 of /proc/PID/stat); -1 if it cannot be read.
func minorFaults(of pid: Int32) -> Int {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 7, let faults = Int(fields[7])
    else { return -1 }
    return faults
}

let smallValue = SmallMessage(
    id: 42, title: "Buy oat milk and a loaf of sourdough", tags: ["groceries", "weekend", "urgent"], done: false
)

/// Waits until the receiver has handled `expected` messages since the start of the run (requests travel on
/// the same connection behind the messages, so one round trip usually suffices).
func waitForReceiver(_ parley: Transceiver, _ peer: Peer, expected: Int) async throws {
    try await waitUntil(expected) { try await parley.request(CountQuery(), from: peer, expecting: Count.self, timeout: .seconds(60)).messages }
}

/// Sends `payload` `count` times as `bench.Raw` and waits until the receiver has handled them all; returns the
/// seconds that took. `received`: what the receiver has counted since the run began, before and after.
func sendRaw(_ payload: ByteBuffer, count: Int, _ parley: Transceiver, _ peer: Peer, received: inout Int) async throws -> Double {
    let start = ContinuousClock.now
    for _ in 0..<count { try await parley.sendRaw(typeName: rawTypeName, payload: payload, to: peer.id) }
    received += count
    try await waitForReceiver(parley, peer, expected: received)
    return seconds(ContinuousClock.now - start)
}

/// Asks `count` until it reaches `expected`.
func waitUntil(_ expected: Int, counted count: () async throws -> Int) async throws {
    while try await count() < expected { try await Task.sleep(for: .milliseconds(5)) }
}

/// Times of `count` round trips made one after the other, in microseconds, sorted.
func latencies(count: Int, of roundTrip: (Int) async throws -> Void) async throws -> [Double] {
    var latencies: [Double] = []
    latencies.reserveCapacity(count)
    for sequence in 0..<count {
        let start = ContinuousClock.now
        try await roundTrip(sequence)
        latencies.append(seconds(ContinuousClock.now - start) * 1e6)
    }
    return latencies.sorted()
}

/// Typed round trips: a `Ping` answered with itself (JSON both ways).
func requestLatencies(_ parley: Transceiver, _ peer: Peer, count: Int) async throws -> [Double] {
    try await latencies(count: count) { sequence in
        _ = try await parley.request(Ping(sequence: sequence), from: peer, expecting: Ping.self)
    }
}

/// Pre-encoded round trips: `payload` echoed back as it is.
func rawRequestLatencies(_ parley: Transceiver, _ peer: Peer, payload: ByteBuffer, count: Int) async throws -> [Double] {
    try await latencies(count: count) { _ in
        _ = try await parley.requestRaw(typeName: echoTypeName, payload: payload, from: peer.id)
    }
}

@main
struct Bench {
    static func main() async throws {
        // Before anything else: from here on every task that has no executor of its own runs on NIO's event loops
        // instead of Swift's thread pool, so a reply resumes its caller on the loop that read it.
        let nioExecutor = CommandLine.arguments.contains("--nio-executor")
        if nioExecutor, !NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
            FileHandle.standardError.write(Data("parley-bench: NIO's event loops could not be installed as the global executor\n".utf8))
            exit(2)
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "receiver" { try await runReceiver(secretFile: arguments.dropFirst().first) }
        if arguments.first == "bare-echo" { try await runBareEcho() }
        // `main` runs on the main actor; the measurements run off it, or every `await` into Parley would add
        // two executor hops that measure Swift's main-actor scheduling rather than Parley.
        func usageError(_ text: String) -> Never {
            FileHandle.standardError.write(Data("parley-bench: \(text)\n".utf8))
            exit(2)
        }
        var only: Set<Substring>?
        if let flag = arguments.firstIndex(of: "--only") {
            let names = Set(arguments.dropFirst(flag - arguments.startIndex + 1).first?.split(separator: ",") ?? [])
            let unknown = names.subtracting(measurementNames)
            if names.isEmpty || !unknown.isEmpty {
                let what = names.isEmpty ? "--only needs a list" : "unknown measurement \(unknown.sorted().joined(separator: ", "))"
                usageError("\(what); one or more of \(measurementNames.sorted().joined(separator: ","))")
            }
            only = names
        }
        if arguments.contains("--quick") && arguments.contains("--long") { usageError("--quick and --long together; give one") }
        let scale = arguments.contains("--quick") ? Scale.quick : arguments.contains("--long") ? .long : .full
        let encrypted = arguments.contains("--encrypted")
        var report = Report(json: arguments.contains("--json"))
        try await runBenchmarks(scale: scale, encrypted: encrypted, nioExecutor: nioExecutor, only: only, report: &report)
        try report.writeJSON(scale: scale, encrypted: encrypted, nioExecutor: nioExecutor)
    }
}

/// What `--only` can name.
let measurementNames: Set<Substring> = ["typed", "raw", "latency", "roundtrip", "large", "big", "daemon", "telemetry", "otlp", "handshake", "stall"]

/// How many messages each measurement sends: `full` is the table in docs/performance.md.
enum Scale {
    case quick, full, long

    /// `count` messages of a full run, at this scale (never fewer than `minimum`).
    func of(_ count: Int, minimum: Int = 1) -> Int {
        switch self {
        case .quick: max(count / 10, minimum)
        case .full: count
        case .long: count * 10
        }
    }
}

func runBenchmarks(scale: Scale, encrypted: Bool, nioExecutor: Bool, only: Set<Substring>?, report: inout Report) async throws {
    /// Whether the measurement `name` runs.
    func runs(_ name: Substring) -> Bool { only?.contains(name) ?? true }
    do {

        // The receiver reads the secret from a file, as a real node would.
        let secret = encrypted ? SharedSecret.generate() : nil
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("parley-bench-\(UUID().uuidString).secret").path
        try secret?.write(toFile: secretFile, replacing: false)
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let child = try await PeerProcess.start(executable: "parley-bench", arguments: ["receiver"] + (encrypted ? [secretFile] : []))
        defer { child.terminate() }
        let parley = Transceiver(configuration: configuration("bench-sender", listen: false, secret: secret))
        try await parley.start()
        let peer = try await parley.connect(to: Endpoint(host: "127.0.0.1", port: child.port))
        var received = 0

        report.say("Parley benchmark — two processes over loopback" + (encrypted ? ", encrypted (shared secret)" : ", open"))
        if nioExecutor { report.say("global executor: NIO's event loops (--nio-executor)") }
        report.say("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)")
        let payloadSize = try JSONEncoder().encode(smallValue).count
        report.say("small message payload: \(payloadSize) bytes of JSON")
        report.say("")

        // 1. JSON alone, same value.
        let codecCount = scale == .quick ? 20_000 : 200_000
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let encoded = try encoder.encode(smallValue)
        var clock = ContinuousClock.now
        for _ in 0..<codecCount { _ = try encoder.encode(smallValue) }
        let encodeRate = Double(codecCount) / seconds(ContinuousClock.now - clock)
        clock = .now
        for _ in 0..<codecCount { _ = try decoder.decode(SmallMessage.self, from: encoded) }
        let decodeRate = Double(codecCount) / seconds(ContinuousClock.now - clock)
        report.record("encode", encodeRate, unit: "msgs/s", line: "JSONEncoder alone:                \(format(encodeRate)) msgs/s")
        // What the typed path encodes with (JSONEncoder stays the yardstick the typed row is read against).
        let streamEncoder = JSONStreamEncoder()
        var streamed = ByteBuffer()
        clock = .now
        for _ in 0..<codecCount {
            streamed.clear()
            try streamEncoder.encode(smallValue, into: &streamed)
        }
        let streamRate = Double(codecCount) / seconds(ContinuousClock.now - clock)
        report.record(
            "encode_stream", streamRate, unit: "msgs/s",
            line: "Parley's JSON encoder alone:      \(format(streamRate)) msgs/s  (what the typed path encodes with)")
        report.record("decode", decodeRate, unit: "msgs/s", line: "JSONDecoder alone:                \(format(decodeRate)) msgs/s")

        // 2. Typed small messages, one way. A million: the sender may run ahead of the receiver by its queue's high
        //    watermark and the socket buffers (up to some 90 000 of these messages, 0.2 – 0.45 s of work), which the
        //    receiver then handles alone while the sender's core idles: over the 200 000 messages measured before,
        //    that tail was a third of the run, and the figure measured it more than the steady rate.
        if runs("typed") {
            let typedCount = scale.of(1_000_000)
            clock = .now
            for _ in 0..<typedCount { try await parley.send(smallValue, to: peer) }
            let sent = ContinuousClock.now - clock
            received += typedCount
            try await waitForReceiver(parley, peer, expected: received)
            let elapsed = ContinuousClock.now - clock
            let typedRate = Double(typedCount) / seconds(elapsed)
            report.record(
                "typed", typedRate, unit: "msgs/s",
                line: "typed messages, one way:          \(format(typedRate)) msgs/s  (\(format(100 * typedRate / encodeRate)) % of encode-alone; "
                    + "all sent after \(format(seconds(sent))) s, all handled after \(format(seconds(elapsed))) s)")
        }

        // 3. Pre-encoded frames, one way: the payload is encoded once; Parley adds only its header.
        let rawCount = scale.of(2_000_000)
        var rawPayload = ByteBuffer()
        rawPayload.writeBytes(encoded)
        var rawRate: Double?
        if runs("raw") {
            rawRate = Double(rawCount) / (try await sendRaw(rawPayload, count: rawCount, parley, peer, received: &received))
            report.record("raw", rawRate!, unit: "msgs/s", line: "pre-encoded frames, one way:      \(format(rawRate!)) msgs/s")
        }

        // 4. Request/reply latency, one at a time: from the global executor, then pinned to the connection's
        //    event loop (no thread hand-off).
        //    `roundtrip`: the pre-encoded rows and the bare echo only (scripts/bench-compare --rtt-rounds).
        if runs("latency") || runs("roundtrip") {
            let pingCount = scale.of(20_000)
            if runs("latency") {
                for sequence in 0..<1_000 { _ = try await parley.request(Ping(sequence: sequence), from: peer, expecting: Ping.self) }
                let unpinned = try await requestLatencies(parley, peer, count: pingCount)
                report.recordLatency("rtt", unpinned, label: "request/reply latency:            ")
                let pinned = try await withTaskExecutorPreference(parley.taskExecutor(for: peer.id)) {
                    try await requestLatencies(parley, peer, count: pingCount)
                }
                report.recordLatency("rtt_pinned", pinned, label: "request/reply latency, pinned:    ")
            }
            // The same without JSON: the 109-byte payload echoed back as it is.
            for _ in 0..<1_000 { _ = try await parley.requestRaw(typeName: echoTypeName, payload: rawPayload, from: peer.id) }
            let rawUnpinned = try await rawRequestLatencies(parley, peer, payload: rawPayload, count: pingCount)
            report.recordLatency("raw_rtt", rawUnpinned, label: "pre-encoded request/reply latency: ")
            let rawPinned = try await withTaskExecutorPreference(parley.taskExecutor(for: peer.id)) {
                try await rawRequestLatencies(parley, peer, payload: rawPayload, count: pingCount)
            }
            report.recordLatency("raw_rtt_pinned", rawPinned, label: "pre-encoded request/reply, pinned: ")
            // The floor under these: SwiftNIO alone echoing the same bytes, no protocol (BareEcho.swift).
            let bare = try await bareEchoLatencies(payload: rawPayload, count: pingCount, warmUp: 1_000)
            report.recordLatency("bare_rtt", bare, label: "bare SwiftNIO echo (reference):   ")
        }

        // 5. 4 MB typed messages: transport time against encode + decode alone.
        if runs("large") {
            let large = LargeMessage(items: (0..<100_000).map { "item \($0) of a long shopping list" })
            let largeEncoded = try encoder.encode(large)
            let largeCount = scale.of(20, minimum: 5)
            clock = .now
            // Encoded as the typed path encodes (into a ByteBuffer) and decoded as the receiver decodes (from Data).
            for _ in 0..<largeCount {
                var buffer = ByteBuffer()
                try streamEncoder.encode(large, into: &buffer)
                _ = try decoder.decode(LargeMessage.self, from: Data(buffer.readableBytesView))
            }
            let codecSeconds = seconds(ContinuousClock.now - clock) / Double(largeCount)
            clock = .now
            for _ in 0..<largeCount { try await parley.send(large, to: peer) }
            received += largeCount
            try await waitForReceiver(parley, peer, expected: received)
            let transportSeconds = seconds(ContinuousClock.now - clock) / Double(largeCount)
            let megabytes = Double(largeEncoded.count) / 1_048_576
            report.record("large_size", megabytes, unit: "MiB")
            report.record(
                "large", megabytes / transportSeconds, unit: "MiB/s",
                line: "4 MB typed messages (\(format(megabytes)) MiB each): \(format(megabytes / transportSeconds)) MiB/s; "
                    + "\(format(transportSeconds * 1000)) ms each vs \(format(codecSeconds * 1000)) ms encode+decode alone "
                    + "(transport adds \(format(100 * (transportSeconds - codecSeconds) / codecSeconds)) %)")
        }

        // 6. 4 MiB pre-encoded frames, one way: the transport without JSON.
        let big = ByteBuffer(repeating: 0x42, count: 4 << 20)
        let bigCount = scale.of(100, minimum: 20)
        var bigRate: Double?
        if runs("big") {
            bigRate = Double(bigCount * big.readableBytes) / (try await sendRaw(big, count: bigCount, parley, peer, received: &received))
            report.record(
                "big", bigRate! / 1_048_576, unit: "MiB/s",
                line: "4 MiB frames, one way:            \(format(bigRate! / 1_048_576)) MiB/s (\(format(bigRate! / 1e9)) GB/s)")
        }

        // 7. The same through parleyd, the daemon forwarding without decoding the payload.
        if runs("daemon") {
            received = try await throughDaemon(
                receiverPort: child.port, received: received, small: (rawPayload, rawCount, rawRate), big: (big, bigCount, bigRate),
                rounds: scale.of(20_000), report: &report)
            received = try await fanOutThroughDaemon(
                first: child, received: received, payload: rawPayload, messages: scale.of(200_000), report: &report)
        }

        // 8. Log records and spans stored by parleyd, with a bystander's status request timed meanwhile.
        if runs("telemetry") {
            try await telemetryIntoDaemon(scale: scale, report: &report)
        }

        // 8b. Spans stored by parleyd over OTLP/HTTP (a Swift load generator, the Python SDK) against the same as
        //     Parley messages, with the web debugger's answer times meanwhile.
        if runs("otlp") {
            try await otlpIntoDaemon(scale: scale, report: &report)
        }

        // 8c. A new connection's handshake in each mode: open, shared secret, devices over TLS.
        if runs("handshake") {
            try await handshakeFigures(count: scale.of(400, minimum: 50), report: &report)
        }

        // 9. A stalled receiver: the sender's memory must stay bounded while it keeps trying to send.
        if runs("stall") {
            let before = residentMemoryMiB()
            let chunk = ByteBuffer(repeating: 0x42, count: 1 << 20)
            var queued = 0
            var peak = before
            let stallPeer = peer.id
            let sentBefore = parley.messageCounts(for: stallPeer)?.sent ?? 0
            let stallDuration: Duration = scale == .quick ? .seconds(2) : .seconds(5)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    while true { try await parley.sendRaw(typeName: stallTypeName, payload: chunk, to: stallPeer) }
                }
                let deadline = ContinuousClock.now + stallDuration
                while ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(100))
                    peak = max(peak, residentMemoryMiB())
                }
                queued = (parley.messageCounts(for: stallPeer)?.sent ?? 0) - sentBefore
                group.cancelAll()
            }
            report.record(
                "stall_peak_rss", peak, unit: "MiB",
                line: "stalled receiver:                 sender RSS \(format(before)) MiB before, peak \(format(peak)) MiB after trying to send 1 MiB messages for \(seconds(stallDuration)) s (\(queued) of them accepted before send had to wait)")
        }

        await parley.stop()
    }
}

/// app → parleyd → receiver: this process connects to a parleyd of its own as a local client (the control socket)
/// and sends `@bench-receiver/<type>`; parleyd reaches the receiver over TCP (a static peer) and forwards each frame
/// with its payload untouched. Prints the rates and their share of the direct ones; returns the receiver's count.
func throughDaemon(
    receiverPort: Int, received: Int, small: (payload: ByteBuffer, count: Int, directRate: Double?),
    big: (payload: ByteBuffer, count: Int, directRate: Double?), rounds: Int, report: inout Report
) async throws -> Int {
    // PARLEYD: another build of parleyd than the one beside this program (scripts/bench-compare: the installed kind).
    let daemon = try await ParleydProcess.start(
        name: "bench-parleyd",
        arguments: ["--web-listen", "off", "--log-level", "notice", "--static-peer", "127.0.0.1:\(receiverPort)"],
        executable: ProcessInfo.processInfo.environment["PARLEYD"] ?? "parleyd", readyTimeout: .seconds(30)
    )
    let socket = daemon.controlSocket
    let client = Transceiver(configuration: configuration("bench-app", listen: false, secret: nil))
    try await client.start()
    let parleyd = try await client.connect(toUnixSocket: socket)
    let target = "@bench-receiver/"

    /// The receiver's count, asked through parleyd; parleyd answers an error until it has connected the receiver.
    func count() async throws -> Int {
        let reply = try await client.requestRaw(
            typeName: target + CountQuery.messageType, payload: ByteBuffer(string: "{}"), from: parleyd.id, timeout: .seconds(60))
        return try JSONDecoder().decode(Count.self, from: Data(reply.payload.readableBytesView)).messages
    }
    var connected = false
    while !connected {
        connected = (try? await count()) != nil
        if !connected { try await Task.sleep(for: .milliseconds(50)) }
    }
    let idle = residentMemoryMiB(of: daemon.pid)
    var expected = received
    /// Sends `payload` `times` times through parleyd and waits until the receiver has counted them; the seconds taken.
    func forward(_ payload: ByteBuffer, times: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<times { try await client.sendRaw(typeName: target + rawTypeName, payload: payload, to: parleyd.id) }
        expected += times
        try await waitUntil(expected, counted: count)
        return seconds(ContinuousClock.now - start)
    }

    let smallRate = Double(small.count) / (try await forward(small.payload, times: small.count))
    report.record(
        "daemon_small", smallRate, unit: "msgs/s",
        line: "pre-encoded frames via parleyd:   \(format(smallRate)) msgs/s" + share(smallRate, of: small.directRate))

    let faultsBefore = minorFaults(of: daemon.pid)
    let bigRate = Double(big.count * big.payload.readableBytes) / (try await forward(big.payload, times: big.count))
    let faultsPerFrame = Double(minorFaults(of: daemon.pid) - faultsBefore) / Double(big.count)
    report.record(
        "daemon_big", bigRate / 1_048_576, unit: "MiB/s",
        line: "4 MiB frames via parleyd:         \(format(bigRate / 1_048_576)) MiB/s (\(format(bigRate / 1e9)) GB/s)"
            + share(bigRate, of: big.directRate) + ", \(format(faultsPerFrame)) page faults in parleyd per frame")
    let afterForwarding = residentMemoryMiB(of: daemon.pid)
    // Rooms for large frames that parleyd keeps for reuse go back to the system after one to two seconds unused.
    try await Task.sleep(for: .milliseconds(2_500))
    let later = residentMemoryMiB(of: daemon.pid)
    report.record("daemon_rss_idle", idle, unit: "MiB")
    report.record("daemon_rss_after_forwarding", afterForwarding, unit: "MiB")
    report.record(
        "daemon_rss_later", later, unit: "MiB",
        line: "parleyd resident memory:          \(format(idle)) MiB idle with two peers, \(format(afterForwarding)) MiB after forwarding, \(format(later)) MiB 2.5 s later")

    // Request/reply through parleyd: the 109 bytes echoed by the receiver, one at a time.
    let echo = target + echoTypeName
    for _ in 0..<1_000 { _ = try await client.requestRaw(typeName: echo, payload: small.payload, from: parleyd.id) }
    let roundTrips = try await latencies(count: rounds) { _ in
        _ = try await client.requestRaw(typeName: echo, payload: small.payload, from: parleyd.id)
    }
    report.recordLatency("daemon_rtt", roundTrips, label: "request/reply via parleyd:        ")

    await client.stop()
    _ = try await daemon.stop()
    return expected
}

/// app → parleyd → ten receivers (`first` and nine more, all named `bench-receiver`): each message sent once, as
/// `@bench-receiver/<type>`, which parleyd forwards to every peer of that name (docs/protocol.md §10, broadcast).
/// The rate is of messages delivered: `messages` × 10 over the time until every receiver has counted them all.
/// Returns `first`'s count.
func fanOutThroughDaemon(first: PeerProcess, received: Int, payload: ByteBuffer, messages: Int, report: inout Report) async throws -> Int {
    var others: [PeerProcess] = []
    defer { for receiver in others { receiver.terminate() } }
    for _ in 0..<9 { others.append(try await PeerProcess.start(executable: "parley-bench", arguments: ["receiver"])) }
    let receivers = [first] + others
    let daemon = try await ParleydProcess.start(
        name: "bench-parleyd",
        arguments: ["--web-listen", "off", "--log-level", "notice"] + receivers.flatMap { ["--static-peer", "127.0.0.1:\($0.port)"] },
        executable: ProcessInfo.processInfo.environment["PARLEYD"] ?? "parleyd", readyTimeout: .seconds(30)
    )
    let client = Transceiver(configuration: configuration("bench-app", listen: false, secret: nil))
    try await client.start()
    let parleyd = try await client.connect(toUnixSocket: daemon.controlSocket)

    /// One receiver's count, asked through parleyd by its peer id; an error until parleyd has connected it.
    func count(of receiver: PeerProcess) async throws -> Int {
        let reply = try await client.requestRaw(
            typeName: "@\(receiver.peerID)/" + CountQuery.messageType, payload: ByteBuffer(string: "{}"), from: parleyd.id,
            timeout: .seconds(60))
        return try JSONDecoder().decode(Count.self, from: Data(reply.payload.readableBytesView)).messages
    }
    var before: [Int] = []
    for receiver in receivers {
        var counted: Int?
        while counted == nil {
            counted = try? await count(of: receiver)
            if counted == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        before.append(counted!)
    }
    let start = ContinuousClock.now
    for _ in 0..<messages { try await client.sendRaw(typeName: "@bench-receiver/" + rawTypeName, payload: payload, to: parleyd.id) }
    for (receiver, already) in zip(receivers, before) {
        try await waitUntil(already + messages) { try await count(of: receiver) }
    }
    let rate = Double(messages * receivers.count) / seconds(ContinuousClock.now - start)
    report.record(
        "daemon_fanout", rate, unit: "deliveries/s",
        line: "fan-out via parleyd to ten peers: \(format(rate)) messages delivered/s (\(format(rate / 10)) sent/s)")
    await client.stop()
    _ = try await daemon.stop()
    return received + messages
}

/// " (N % of direct)" when the direct rate was measured in this run (not with `--only daemon`).
func share(_ rate: Double, of direct: Double?) -> String {
    direct.map { " (\(format(100 * rate / $0)) % of direct)" } ?? ""
}
