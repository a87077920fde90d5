import Foundation
import NIOCore
import Parley
import ParleyControl
import ParleyTestSupport
import Testing

extension FaultTests {
    static let stalledQueueBytes = 4 * 1024 * 1024
    static let blobSize = 64 * 1024

    /// A LAN peer completes its handshake (without `heartbeat`, so nothing times it out) and then never reads,
    /// while a local client has parleyd forward 64 KiB messages to it as fast as it can. parleyd's queue towards
    /// the peer fills to `maxOutboundQueueBytes` (4 MiB here), its forwarding handler for that client waits, it
    /// stops reading the client, and the client's own sends wait: memory is bounded by the configured queue, the
    /// frames of 4 socket reads buffered per connection (about 16 of 64 KiB) and the kernel's socket buffers, whatever the client tries to push.
    @Test("a peer that never reads while parleyd forwards to it: parleyd's memory stays bounded by its queue limit and other peers are served")
    func stalledReader() async throws {
        let daemon = try await ParleydProcess.start(name: "faultd", arguments: ["--max-outbound-queue-bytes", String(Self.stalledQueueBytes)])
        let stalled = try await RawConnection.open(port: daemon.port, reading: false)
        try await stalled.write(helloBytes(name: "stalled"))
        let traffic = EchoTraffic(peerCount: 2)
        let pusher = dialer("pusher")
        try await withRunning(traffic.transceivers + [pusher]) {
            try await traffic.connect(to: daemon)
            let parleyd = try await pusher.connect(toUnixSocket: daemon.controlSocket)
            let listed = try await pusher.request(Control.Peers(), from: parleyd, expecting: Control.PeerList.self)
            #expect(listed.peers.contains { $0.name == "stalled" }, "\(listed.peers.map(\.name))")
            let base = try daemon.memory()

            let payload = ByteBuffer(repeating: 0x42, count: Self.blobSize)
            let routed = RoutedType(target: "stalled", typeName: "load.Blob").wireName
            let pushed = Shared(0)
            let started = ContinuousClock.now
            var peakSampled = base.resident
            var stalledFor: Duration = .zero
            let during = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Until cancelled, which ends the send waiting for room.
                    while !Task.isCancelled {
                        guard (try? await pusher.sendRaw(typeName: routed, payload: payload, to: parleyd.id)) != nil else { return }
                        pushed.update { $0 += 1 }
                    }
                }
                // Until the pushing has made no progress for three seconds (everything is full), at most 30 s.
                var last = -1
                var lastChange = ContinuousClock.now
                while ContinuousClock.now - started < .seconds(30) {
                    peakSampled = max(peakSampled, try daemon.memory().resident)
                    let count = pushed.current
                    if count != last {
                        (last, lastChange) = (count, .now)
                    } else if ContinuousClock.now - lastChange > .seconds(3) {
                        break
                    }
                    // Real sleep: "nothing more is pushed for 3 s" is the absence of events, observed by sampling.
                    try await Task.sleep(for: .milliseconds(100))
                }
                stalledFor = ContinuousClock.now - lastChange
                // Everything is full now; the other peers must still get through parleyd.
                let during = try await traffic.measure(100)
                peakSampled = max(peakSampled, try daemon.memory().resident)
                group.cancelAll()
                return during
            }
            let memory = try daemon.memory()
            let pushedBytes = pushed.current * Self.blobSize
            // What parleyd may hold: the queue towards the stalled peer (one frame may go past the watermark), the
            // about 16 frames it buffers from the client (4 reads), a decoder buffer; generously, four queues' worth above the base.
            let bound = base.resident + 4 * Self.stalledQueueBytes + 17 * Self.blobSize
            report("stalled reader: the client pushed \(pushed.current) messages of 64 KiB (\(ProcessMemory.mebibytes(pushedBytes))) before its sends waited (no progress for \(Latencies.ms(stalledFor))); maxOutboundQueueBytes \(ProcessMemory.mebibytes(Self.stalledQueueBytes))")
            report("stalled reader: parleyd RSS before \(ProcessMemory.mebibytes(base.resident)), highest sampled \(ProcessMemory.mebibytes(peakSampled)), peak (VmHWM) \(ProcessMemory.mebibytes(memory.peakResident)); bound asserted \(ProcessMemory.mebibytes(bound))")
            report("stalled reader: other peers' round trips through parleyd meanwhile: \(during)")

            #expect(pushedBytes > 2 * Self.stalledQueueBytes, "the client could not even fill the queue: \(pushed.current) messages")
            #expect(memory.peakResident <= bound, "parleyd peaked at \(memory.peakResident) bytes, above \(bound)")
            #expect(during.count == 100)
            stalled.close()
        }
        #expect(try await daemon.stop() == 0)
    }
}
