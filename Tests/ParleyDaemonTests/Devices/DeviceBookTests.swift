import Foundation
import Logging
@testable import Parley
import ParleyControl
@testable import ParleyDaemon
import ParleyTestSupport
import Testing

/// parleyd's book of devices on its own: which requests a flood pushes out, and what an unpair does when its file
/// cannot be written. (PairingTests drive the same book through a real parleyd.)
@Suite("parleyd: the device book")
struct DeviceBookTests {
    static let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// A book of a parleyd of its own, in a directory removed afterwards.
    static func withBook(logger: Logger = logger, _ body: (DeviceBook, String) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-devicebook-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try body(try DeviceBook(directory: directory, identity: try DeviceIdentity.generate(name: "parleyd"), logger: logger), directory)
    }

    /// A pairing request from a device of its own (a fresh certificate) at `host`.
    static func request(from host: String, to book: DeviceBook) throws -> DeviceFingerprint {
        let device = try DeviceIdentity.generate(name: "device")
        _ = book.requested(DeviceRequest(
            fingerprint: device.fingerprint, name: "device", peerID: nil, address: "\(host):4000", host: host,
            code: PairingCode(book.identity.fingerprint, device.fingerprint)))
        return device.fingerprint
    }

    static func pending(_ book: DeviceBook) -> Set<String> { Set(book.list(connected: []).pending.map(\.fingerprint)) }

    @Test("one host sending fresh certificates in a loop pushes out its own requests, not another machine's")
    func floodFromOneHost() throws {
        try Self.withBook { book, _ in
            let real = try Self.request(from: "192.0.2.7", to: book)
            var flood: [DeviceFingerprint] = []
            for _ in 0..<(DeviceBook.maximumPending + 8) { flood.append(try Self.request(from: "192.0.2.66", to: book)) }

            let pending = Self.pending(book)
            #expect(pending.contains(real.full))
            #expect(pending.count == 1 + DeviceBook.maximumPendingPerHost)
            // The flood's newest requests are the ones kept.
            #expect(Set(flood.suffix(DeviceBook.maximumPendingPerHost).map(\.full)) == pending.subtracting([real.full]))
        }
    }

    @Test("a flood of requests writes a burst of pairing lines, then one line counting the rest")
    func floodIsThrottledInTheLog() async throws {
        let logs = LogCapture()
        let requests = 100
        // The certificates first: made in the loop they would pace it, and the throttle would refill between them.
        let devices = try (0..<requests).map { _ in try DeviceIdentity.generate(name: "device") }
        try Self.withBook(logger: logs.logger) { book, _ in
            for (index, device) in devices.enumerated() {
                _ = book.requested(DeviceRequest(
                    fingerprint: device.fingerprint, name: "device", peerID: nil, address: "198.51.100.\(index % 200 + 1):4000",
                    host: "198.51.100.\(index % 200 + 1)", code: PairingCode(book.identity.fingerprint, device.fingerprint)))
            }
        }
        let heldBack = "log lines held back"
        #expect(await logs.logged(mentioning: heldBack))
        let written = logs.all.count { $0.message.hasPrefix("a device asks to pair") }
        let counted = logs.records(mentioning: heldBack).compactMap { Int($0.metadata["count"] ?? "") }.reduce(0, +)
        #expect(written < requests / 2, "\(written) pairing lines for \(requests) requests")
        #expect(written + counted == requests, "every request is either written or counted")
    }

    @Test("many hosts together are held to the overall limit, the oldest request going first")
    func floodFromManyHosts() throws {
        try Self.withBook { book, _ in
            let first = try Self.request(from: "192.0.2.1", to: book)
            for index in 0..<DeviceBook.maximumPending { _ = try Self.request(from: "198.51.100.\(index + 1)", to: book) }

            let pending = Self.pending(book)
            #expect(pending.count == DeviceBook.maximumPending)
            #expect(!pending.contains(first.full))
        }
    }

    @Test("an unpair whose file cannot be written still takes the device back at once, and says the file was not written")
    func unpairWithoutItsFile() throws {
        try Self.withBook { book, directory in
            let device = try Self.request(from: "192.0.2.7", to: book)
            _ = try book.accept(device.short)
            #expect(book.trusts(device))

            let file = directory + "/" + DeviceBook.fileName
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode == 0o600, "devices.json is written owner-only, like every protected file")

            // A directory where the file goes: no write can replace it, whoever runs the test (root included).
            try FileManager.default.removeItem(atPath: file)
            try FileManager.default.createDirectory(atPath: file + "/blocked", withIntermediateDirectories: true)

            let (fingerprint, paired, saveFailure) = try book.unpair(device.short)
            #expect(fingerprint == device)
            #expect(paired.fingerprint == device.full)
            #expect(!book.trusts(device))
            let failure = try #require(saveFailure)
            #expect("\(failure)".contains(DeviceBook.fileName))
            #expect("\(failure)".contains("lost then"))
        }
    }
}
