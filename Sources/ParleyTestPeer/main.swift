import Foundation
import Logging
import NIOCore
import Parley
import ParleyAvahi
import ParleyDNSSD
import ParleyTestSupport

// A Parley peer in its own process, for the two-process tests and the benchmarks.
//
//   parley-test-peer serve                      listen on 127.0.0.1 (any port); answer Echo, Blob, ProgressQuery, SlowRequest
//   parley-test-peer stream HOST:PORT [COUNT]    connect and send Sequenced messages (forever when COUNT is absent)
//   parley-test-peer discover NAME [HOST:PORT…] [--no-connect] [--dnssd]
//                                               advertise as NAME on _debug._tcp, browse, auto-connect (unless
//                                               --no-connect) and keep static peers connected; on each connection
//                                               exchange an Echo; print JSON-lines events. --dnssd: discovery through
//                                               dns_sd.h (ParleyDNSSD) instead of Avahi's client library
//   parley-test-peer debugger-app NAME COUNT [--original] [--dnssd]
//                                               an app using RemoteDebugger: finds the debugger on _debug._tcp,
//                                               writes COUNT states {"step": i} (action step.i, a small PNG),
//                                               prints each state sent back as a JSON "restored" event
//
// Prints `READY port=<port> id=<peer id>` once it is listening or connected (discover: a JSON "ready" event).

let arguments = CommandLine.arguments.dropFirst()
guard let mode = arguments.first else {
    FileHandle.standardError.write(Data("usage: parley-test-peer serve | stream HOST:PORT [COUNT]\n".utf8))
    exit(2)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: "parley-test-peer[\(getpid())] \(label)")
    handler.logLevel = ProcessInfo.processInfo.environment["PARLEY_TEST_PEER_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
    return handler
}

if mode == "debugger-app" {
    try await runDebuggerApp(Array(arguments.dropFirst()))
    exit(0)
}

let tracker = SequenceTracker()
let discovering = mode == "discover"
var configuration = TransceiverConfiguration(
    name: discovering ? String(arguments.dropFirst().first ?? "peer") : "test-peer-\(getpid())",
    identity: .ephemeral, listenHost: discovering ? "::" : "127.0.0.1", port: 0
)
if !discovering {
    // On loopback beside a busy test run, as the test process's own transceivers are (Tests/ParleyTests/Support.swift):
    // a peer that dies closes its socket, and the tests that are about liveness use the lab's `discover` mode.
    configuration.heartbeatTimeout = .seconds(15)
}
if discovering {
    configuration.port = TransceiverConfiguration.defaultPort
    let options = arguments.dropFirst(2)
    configuration.discovery = DiscoveryConfiguration(
        backend: options.contains("--dnssd") ? .dnssd : .avahi,
        instanceName: configuration.name,
        autoConnect: options.contains("--no-connect") ? .none : .all
    )
    configuration.staticPeers = options.compactMap(Endpoint.init)
}
let parley = Transceiver(configuration: configuration)
parley.respond(to: Echo.self) { echo, _ in echo }
parley.respond(to: Blob.self) { blob, _ in BlobDigest(of: blob.data) }
parley.respondRaw(to: RawBlob.typeName) { message, _ in
    (BlobDigest.messageType, ByteBuffer(bytes: try JSONEncoder().encode(BlobDigest(of: message.payload))))
}
parley.respond(to: ProgressQuery.self) { _, _ in await tracker.progress }
parley.respond(to: SlowRequest.self) { request, _ in
    try await Task.sleep(for: .milliseconds(request.milliseconds))
    return Echo(text: "slept \(request.milliseconds) ms")
}
parley.receive(Sequenced.self) { message, _ in await tracker.record(message) }

try await parley.start()
let id = parley.localPeerID!.rawValue

func announceReady() {
    FileHandle.standardOutput.write(Data("READY port=\(parley.listeningPort ?? 0) id=\(id)\n".utf8))
}

switch mode {
case "serve":
    announceReady()
    // Serve until killed or terminated.
    while true { try await Task.sleep(for: .seconds(3600)) }
case "stream":
    let target = arguments.dropFirst().first.flatMap(Endpoint.init)!
    let count = arguments.dropFirst(2).first.flatMap(Int.init)
    let peer = try await parley.connect(to: target)
    announceReady()
    var sequence = 0
    while count.map({ sequence < $0 }) ?? true {
        try await parley.send(Sequenced(sender: id, sequence: sequence), to: peer)
        sequence += 1
    }
    // Wait until the receiver has everything before leaving, so the count is exact.
    // The queue ahead of the query may take a while to drain on a loaded machine; the subject is loss, not speed.
    while try await parley.request(ProgressQuery(), from: peer, expecting: Progress.self, timeout: .seconds(60))
        .lastSequence[id] != sequence - 1 {
        try await Task.sleep(for: .milliseconds(20))
    }
    await parley.stop()
case "discover":
    // JSON lines, one per event, with a wall-clock time so that processes in different namespaces compare.
    func emit(_ event: String, _ fields: [String: String] = [:]) {
        var object: [String: Any] = ["event": event, "wallMs": Date().timeIntervalSince1970 * 1000, "pid": Int(getpid())]
        for (key, value) in fields { object[key] = value }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
    let events = parley.peerEvents
    emit("ready", ["name": parley.configuration.name, "reason": id])
    for await event in events {
        switch event {
        case .connected(let peer):
            emit("connected", ["name": peer.name, "reason": peer.address])
            let reply = try? await parley.request(Echo(text: "hello from \(parley.configuration.name)"), from: peer, expecting: Echo.self)
            emit("exchanged", ["name": peer.name, "reason": reply?.text ?? "no reply"])
        case .disconnected(let peer, let reason):
            emit("disconnected", ["name": peer.name, "reason": "\(reason)"])
        }
    }
default:
    FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
    exit(2)
}
