import Foundation
import Parley
import ParleyDrawer
@testable import ParleyRemoteDrawer
import ParleyTestSupport
import Synchronization
import Testing

/// The app's side alone, without parleyd: how a choice names its options, and the outbox that keeps what goes to
/// parleyd in order.
@Suite("Debug drawer in the app")
struct DebugDrawerTests {
    enum Contrast: String, CaseIterable, Codable, Sendable {
        case normal, highContrast = "high-contrast"
    }

    /// String raw values, and a Codable encoding of its own that differs: the raw values name the options.
    enum Legacy: String, CaseIterable, Codable, Sendable {
        case alpha, beta
        init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let value = Self(rawValue: String(text.dropFirst(2))) else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: text)) }
            self = value
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode("x-" + rawValue)
        }
    }

    /// No raw values, encoded as a string of its own: that string names the option.
    enum Region: CaseIterable, Codable, Sendable {
        case euWest, usEast
        var code: String { self == .euWest ? "eu-west" : "us-east" }
        init(from decoder: any Decoder) throws {
            let code = try decoder.singleValueContainer().decode(String.self)
            guard let region = Self.allCases.first(where: { $0.code == code }) else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: code)) }
            self = region
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(code)
        }
    }

    @Test("a choice of any CaseIterable & Codable enum: options by String raw value, by a string encoding, else by case name")
    func choiceOptions() {
        let drawer = DebugDrawer(transceiver: Transceiver(configuration: TransceiverConfiguration(name: "choices", identity: .ephemeral, listenHost: nil, port: 0)))
        _ = drawer.choice("theme", "Theme", default: Theme.dark)
        _ = drawer.choice("contrast", "Contrast", default: Contrast.highContrast)
        _ = drawer.choice("legacy", "Legacy", default: Legacy.beta)
        _ = drawer.choice("speed", "Speed", default: Speed.fast)
        _ = drawer.choice("mood", "Mood", default: Mood.busy)
        _ = drawer.choice("region", "Region", default: Region.usEast, optionLabel: { $0.code.uppercased() })
        let items = Dictionary(uniqueKeysWithValues: drawer.items.map { ($0.id, $0) })
        func options(_ id: String) -> [String] { items[id]?.options?.map(\.id) ?? [] }
        #expect(options("theme") == ["light", "dark"] && items["theme"]?.value == .string("dark"))
        #expect(options("contrast") == ["normal", "high-contrast"] && items["contrast"]?.value == .string("high-contrast"))
        #expect(options("legacy") == ["alpha", "beta"] && items["legacy"]?.value == .string("beta"))
        #expect(options("speed") == ["slow", "fast"] && items["speed"]?.value == .string("fast"))
        #expect(options("mood") == ["calm", "busy"] && items["mood"]?.value == .string("busy"))
        #expect(options("region") == ["eu-west", "us-east"] && items["region"]?.value == .string("us-east"))
        #expect(items["region"]?.options?.map(\.label) == ["EU-WEST", "US-EAST"])
        #expect(items["mood"]?.options?.map(\.label) == ["calm", "busy"])
        // The whole drawer is one parleyd takes.
        #expect(throws: Never.self) { try DrawerDeclaration(items: drawer.items) }
    }

    @Test("an action declared destructive says so on the wire; any other action says nothing of it")
    func destructiveAction() throws {
        let drawer = DebugDrawer(transceiver: Transceiver(configuration: TransceiverConfiguration(name: "actions", identity: .ephemeral, listenHost: nil, port: 0)))
        drawer.action("list.reset", "Empty the list", destructive: true) { nil }
        drawer.action("list.sort", "Sort the list") { nil }
        let wire = try drawer.items.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        #expect(wire[0].contains(#""destructive":true"#))
        #expect(!wire[1].contains("destructive"))
        #expect(throws: Never.self) { try DrawerDeclaration(items: drawer.items) }
    }

    @Test("an outbox sends one message at a time, in the order they were queued, however long each send takes")
    func outboxKeepsOrder() async {
        let sent = Mutex<[Int]>([])
        let outbox = DrawerOutbox<Int> { n in
            // Sends that take different times, as on a connection: a task per message would finish out of order.
            for _ in 0..<(n % 5) { await Task.yield() }
            sent.withLock { $0.append(n) }
        }
        for n in 1...2000 { outbox.enqueue(n) }
        outbox.finish()
        await outbox.drained()
        #expect(sent.withLock { $0 } == Array(1...2000))
    }

    @Test("a cancelled outbox finishes the send under way and drops the rest")
    func outboxCancel() async {
        let sent = Mutex<[Int]>([])
        let (started, startedContinuation) = AsyncStream.makeStream(of: Void.self)
        let release = Latch()
        let outbox = DrawerOutbox<Int> { n in
            startedContinuation.yield()
            // (Cancelled, the wait ends at once: the send under way completes all the same.)
            try? await release.wait()
            sent.withLock { $0.append(n) }
        }
        for n in 1...3 { outbox.enqueue(n) }
        var iterator = started.makeAsyncIterator()
        _ = await iterator.next()
        outbox.cancel()
        release.open()
        await outbox.drained()
        #expect(sent.withLock { $0 } == [1])
    }
}
