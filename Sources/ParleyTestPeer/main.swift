import Foundation
import Logging
import NIOCore
import Parley
import ParleyTestSupport

// A Parley peer in its own process, for the two-process tests and the benchmarks.
//
//   parley-test-peer serve                      listen on 127.0.0.1 (any port); answer Echo, Blob, ProgressQuery, SlowRequest
//   parley-test-peer stream HOST:PORT [COUNT]    connect and send Sequenced messages (forever when COUNT is absent)
//
// Prints `READY port=<port> id=<peer id>` once it is listening or connected.

let arguments = CommandLine.arguments.dropFirst()
guard let mode = arguments.first else {
    FileHandle.standardError.write(Data("usage: parley-test-peer serve | stream HOST:PORT [COUNT]\n".utf8))
    exit(2)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = ProcessInfo.processInfo.environment["PARLEY_TEST_PEER_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
    return handler
}

let tracker = SequenceTracker()
let parley = Transceiver(
    configuration: .init(name: "test-peer-\(getpid())", identity: .ephemeral, listenHost: "127.0.0.1", port: 0)
)
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
    while try await parley.request(ProgressQuery(), from: peer, expecting: Progress.self).lastSequence[id] != sequence - 1 {
        try await Task.sleep(for: .milliseconds(20))
    }
    await parley.stop()
default:
    FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
    exit(2)
}
