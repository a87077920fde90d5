import Foundation
import NIOCore
import ParleyDebugger
import ParleyHistory
import ParleyJSON

// parley-debugger-bench: the debugger's diff and history store. Every figure is printed; nothing is asserted.
//
//   swift build -c release --product parley-debugger-bench && .build/release/parley-debugger-bench [--quick]
//
// --quick uses 100 instead of 1 000 entries of 5 MB for the listing figures (0.5 GB instead of 5 GB of disk);
// --telemetry prints only the log records' figures.

let quick = CommandLine.arguments.contains("--quick")
let clock = ContinuousClock()

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

/// The median time of `runs` runs of `body`, in milliseconds.
func median(runs: Int, _ body: () async throws -> Void) async rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<runs {
        let start = clock.now
        try await body()
        times.append(milliseconds(clock.now - start))
    }
    return times.sorted()[runs / 2]
}

func format(_ value: Double, _ digits: Int = 1) -> String {
    String(format: "%.\(digits)f", value)
}

if CommandLine.arguments.contains("--telemetry") {
    try await telemetryFigures(batches: quick ? 100 : 400)
    exit(0)
}

// MARK: - A realistic app state

struct Item: Codable {
    var id: String
    var title: String
    var done: Bool
    var tags: [String]
    var created: Double
    var notes: String?
    var priority: Int
}

struct ItemList: Codable {
    var id: String
    var title: String
    var items: [Item]
    var collapsed: Bool
}

struct Frame: Codable {
    var x: Double, y: Double, width: Double, height: Double
}

struct Window: Codable {
    var frame: Frame
    var collapsedListIDs: [String]
    var visible: Bool
    var selection: String?
    var zoom: Double
}

struct AppState: Codable {
    var user: [String: String]
    var settings: [String: Double]
    var windows: [String: Window]
    var lists: [ItemList]
    var undoStack: [String]
    var revision: Int
}

/// A deterministic UUID-like string.
func identifier(_ seed: Int) -> String {
    var hasher = UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15
    var text = ""
    for index in 0..<32 {
        hasher = hasher &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        text += String((hasher >> 59) & 0xF, radix: 16, uppercase: true)
        if [7, 11, 15, 19].contains(index) { text += "-" }
    }
    return text
}

/// About `megabytes` MB of nested state: windows keyed by id, lists of to-do items with Unicode text.
func makeState(megabytes: Double) -> AppState {
    let words = ["milk", "oat milk", "Brötchen", "café", "寿司", "tea", "apples", "bread", "eggs", "chocolate ✓", "rice", "olive oil"]
    var lists: [ItemList] = []
    var windows: [String: Window] = [:]
    for index in 0..<40 {
        windows[identifier(1_000_000 + index)] = Window(
            frame: Frame(x: Double(index * 10), y: 20.5, width: 1280, height: 800),
            collapsedListIDs: (0..<(index % 5)).map { identifier($0) },
            visible: index % 3 != 0,
            selection: index % 2 == 0 ? identifier(index) : nil,
            zoom: 1.25
        )
    }
    var itemSeed = 0
    let target = Int(megabytes * 1_000_000)
    var estimated = 0
    while estimated < target {
        var items: [Item] = []
        for _ in 0..<40 {
            itemSeed += 1
            let title = words[itemSeed % words.count] + " \(itemSeed)"
            items.append(
                Item(
                    id: identifier(itemSeed), title: title, done: itemSeed % 7 == 0, tags: ["home", "weekly", words[itemSeed % 5]],
                    created: 1_718_000_000.125 + Double(itemSeed), notes: itemSeed % 4 == 0 ? "Remember: \(title), not the other one — ü ö ä" : nil,
                    priority: itemSeed % 3
                )
            )
            estimated += 172
        }
        lists.append(ItemList(id: identifier(-lists.count - 1), title: "List \(lists.count)", items: items, collapsed: false))
    }
    return AppState(
        user: ["name": "Ann", "email": "ann@example.com", "locale": "de_DE"],
        settings: ["fontSize": 14, "sidebarWidth": 240.5, "autosave": 1],
        windows: windows,
        lists: lists,
        undoStack: (0..<200).map { "action \($0)" },
        revision: 1
    )
}

/// Foundation's JSONEncoder writes the members of each object in an order that can differ from one encoding to
/// the next (it goes through dictionaries), so two encodings of nearly the same state differ in almost every
/// object's bytes: the diff's hard case, and a common one. `.sortedKeys` gives stable bytes.
func encode(_ state: AppState, sorted: Bool = false) throws -> ByteBuffer {
    let encoder = JSONEncoder()
    if sorted { encoder.outputFormatting = .sortedKeys }
    return ByteBuffer(bytes: try encoder.encode(state))
}

// MARK: - Diff

print("== diff (parsing included) ==")
var state = makeState(megabytes: 5)
let oldState = try encode(state)
let oldSorted = try encode(state, sorted: true)
// A typical action's effect: one item renamed, one toggled, one added, one list collapsed, the revision bumped.
state.lists[17].items[3].title = "oat milk (organic)"
state.lists[120].items[0].done.toggle()
state.lists[200].items.append(Item(id: identifier(-7), title: "new item", done: false, tags: [], created: 1_718_100_000, notes: nil, priority: 1))
state.lists[5].collapsed = true
state.windows[identifier(1_000_003)]?.collapsedListIDs.append(identifier(5))
state.revision += 1
let newState = try encode(state)
let newSorted = try encode(state, sorted: true)
var diff = try StateDiff(old: oldSorted, new: newSorted)
print("states: \(format(Double(oldState.readableBytes) / 1e6, 2)) MB and \(format(Double(newState.readableBytes) / 1e6, 2)) MB, \(diff.changes.count) changes:")
print(diff.text().split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
let stable = try await median(runs: 9) { diff = try StateDiff(old: oldSorted, new: newSorted) }
print("diff, small change, sorted keys:             \(format(stable)) ms (median of 9)")
let reordered = try await median(runs: 9) { diff = try StateDiff(old: oldState, new: newState) }
print("diff, small change, keys in encoder order:   \(format(reordered)) ms (median of 9; \(diff.changes.count) changes)")

// The worst case: every item differs, so both documents are walked completely and every change is recorded.
var rewritten = makeState(megabytes: 5)
for list in rewritten.lists.indices {
    for item in rewritten.lists[list].items.indices { rewritten.lists[list].items[item].priority += 1 }
}
let everywhere = try encode(rewritten)
var wideDiff = try StateDiff(old: oldState, new: everywhere)
let wide = try await median(runs: 5) { wideDiff = try StateDiff(old: oldState, new: everywhere) }
print("diff, \(wideDiff.changes.count) changes everywhere:            \(format(wide)) ms (median of 5)")

let validate = try await median(runs: 9) { try JSONSkimmer.validate(oldState) }
print("validate one state:               \(format(validate)) ms = \(format(Double(oldState.readableBytes) / 1e6 / (validate / 1000), 0)) MB/s")
let tree = try await median(runs: 5) { _ = try JSONValue(parsing: oldState) }
print("read one state into a JSONValue:  \(format(tree)) ms")

// MARK: - History store

func withDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-debugger-bench-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Appends `count` entries of `state` and reports append throughput, then times listing them and paging.
func storeFigures(label: String, count: Int, state: ByteBuffer, screenshot: ByteBuffer) async throws -> Double {
    try await withDirectory { directory in
        let limits = RetentionLimits(maxEntries: 100_000, maxBytes: 1 << 40)
        let store = try await HistoryStore.open(directory: directory, limits: limits)
        let session = try await store.beginSession(peerID: "bench", appName: "Bench", kind: .parley)
        let start = clock.now
        for index in 0..<count {
            _ = try await store.append(StateRecord(action: "action \(index)", state: state, screenshot: screenshot), to: session.id)
        }
        let elapsed = milliseconds(clock.now - start) / 1000
        let megabytes = Double(count * (state.readableBytes + screenshot.readableBytes)) / 1e6
        print("append \(label): \(count) entries in \(format(elapsed, 2)) s = \(format(Double(count) / elapsed, 0)) entries/s, \(format(megabytes / elapsed, megabytes / elapsed < 10 ? 2 : 0)) MB/s")
        var listed = 0
        let firstList = try await median(runs: 1) {
            listed = try await store.entries(EntryQuery(session: session.id, limit: count)).items.count
        }
        let list = try await median(runs: 25) {
            listed = try await store.entries(EntryQuery(session: session.id, limit: count)).items.count
        }
        precondition(listed == count)
        let page = try await median(runs: 9) {
            _ = try await store.entries(EntryQuery(session: session.id, offset: count / 2, limit: 50))
        }
        let filtered = try await median(runs: 9) {
            _ = try await store.entries(EntryQuery(session: session.id, filter: .pattern("action 1*"), limit: 50))
        }
        let sessions = try await median(runs: 9) { _ = try await store.sessions() }
        print("  list all \(count): \(format(firstList, 2)) ms the first time, \(format(list, 2)) ms (median of 25); page of 50 at offset \(count / 2): \(format(page, 2)) ms; filtered page: \(format(filtered, 2)) ms; sessions: \(format(sessions, 2)) ms")
        let show = try await median(runs: 5) { _ = try await store.entry(Int64(count / 2)) }
        print("  show one entry (state + screenshot): \(format(show, 2)) ms")
        try await store.close()
        return list
    }
}

print("\n== history store (release build, warm page cache) ==")
let bigCount = quick ? 100 : 1000
let screenshot = ByteBuffer(bytes: (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
let small = ByteBuffer(string: #"{"count":1,"title":"milk"}"#)
let bigList = try await storeFigures(label: "5 MB states + 200 kB screenshots", count: bigCount, state: oldState, screenshot: screenshot)
let smallList = try await storeFigures(label: "small states, no screenshots", count: bigCount, state: small, screenshot: ByteBuffer())
print("listing \(bigCount) entries: \(format(bigList, 2)) ms with 5 MB states vs \(format(smallList, 2)) ms with small ones")

print("\n== log records into the history (release build) ==")
try await telemetryFigures(batches: quick ? 100 : 400)
