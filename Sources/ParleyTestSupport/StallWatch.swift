import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A diagnostic for tests that miss a deadline only when the whole suite runs. With `PARLEYTEST_STALL_WATCH=DIR`
/// set, a thread of its own submits a probe every 100 ms to each of NIO's shared event loops and to Swift's
/// cooperative pool, and writes to `DIR/latency-PID.txt`, every half second, the longest any probe waited on
/// each (and how late the watch's own 100 ms sleep woke, which shows the whole process being starved). With
/// `PARLEYTEST_STALL_STACKS=1` as well, a probe left waiting for a second has every thread's stack written
/// (gdb, which stops the process for a moment) to name the code holding the thread.
public enum StallWatch {
    /// Starts the watch once per process when the environment asks for it; cheap to call from every helper.
    public static func startIfRequested() { _ = started }

    private static let started: Bool = {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = environment["PARLEYTEST_STALL_WATCH"], !directory.isEmpty else { return false }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let thread = Thread { watch(writingTo: directory, stacks: environment["PARLEYTEST_STALL_STACKS"] == "1") }
        thread.name = "parley-stall-watch"
        thread.start()
        return true
    }()

    private static func watch(writingTo directory: String, stacks: Bool) {
        var loops: [any EventLoop] = []
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() { loops.append(loop) }
        let names = loops.indices.map { "loop\($0)" } + ["pool"]
        let probes = Probes(count: names.count)
        let log = "\(directory)/latency-\(getpid()).txt"
        _ = FileManager.default.createFile(atPath: log, contents: Data("time \(names.joined(separator: " ")) sleep (ms)\n".utf8))
        let output = FileHandle(forWritingAtPath: log)
        output?.seekToEndOfFile()
        var windowStart = ContinuousClock.now
        var worstSleep = Duration.zero
        var dumps = 0
        while true {
            let sent = ContinuousClock.now
            for (index, loop) in loops.enumerated() {
                if probes.send(index, at: sent) { loop.execute { probes.arrived(index) } }
            }
            let pool = loops.count
            if probes.send(pool, at: sent) { Task.detached { probes.arrived(pool) } }
            Thread.sleep(forTimeInterval: 0.1)
            let now = ContinuousClock.now
            worstSleep = max(worstSleep, now - sent - .milliseconds(100))
            if stacks, dumps < 5, let stalled = probes.waitingLongest(now: now), stalled.waited > .seconds(1) {
                dumps += 1
                dumpStacks(of: getpid(), to: "\(directory)/stacks-\(getpid())-\(dumps).txt", header: "\(names[stalled.index]) waited \(stalled.waited)")
            }
            guard now - windowStart >= .milliseconds(500) else { continue }
            let worst = probes.takeWorst(now: now)
            let stamp = String(format: "%.1f", Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 3600))
            let line = ([stamp] + worst.map { "\($0.milliseconds)" } + ["\(worstSleep.milliseconds)"]).joined(separator: " ") + "\n"
            output?.write(Data(line.utf8))
            windowStart = now
            worstSleep = .zero
        }
    }

    private static let gdbPath = "/usr/bin/gdb"

    /// Every thread's stack of process `pid`, written to `path` after `header` (gdb stops the process meanwhile).
    static func dumpStacks(of pid: Int32, to path: String, header: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data("\(header)\n".utf8))
        guard let file = FileHandle(forWritingAtPath: path) else { return }
        file.seekToEndOfFile()
        runGDB(on: pid, output: file)
        try? file.close()
    }

    /// The stacks of process `pid`, one line per thread: the functions of its frames, innermost first (without
    /// arguments, addresses or libraries), for a test's failure message. Says so if gdb is missing.
    public static func stackSummary(of pid: Int32) -> String {
        guard FileManager.default.isExecutableFile(atPath: gdbPath) else { return "(gdb is not installed)" }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-stacks-\(pid).txt").path
        dumpStacks(of: pid, to: path, header: "")
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "(no stacks)" }
        var threads: [[String]] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("Thread ") {
                threads.append([])
            } else if line.hasPrefix("#"), !threads.isEmpty {
                // "#3  0x… in function (arguments) at file" or "#0  function (arguments)": keep the function.
                let afterIn = line.range(of: " in ").map { line[$0.upperBound...] } ?? line.drop { $0 != " " }.drop { $0 == " " }
                let function = afterIn.prefix { $0 != "(" }.trimmingCharacters(in: .whitespaces)
                threads[threads.count - 1].append(String(function.prefix(90)))
            }
        }
        return threads.enumerated().map { "\n[\($0.offset + 1)] " + $0.element.joined(separator: " < ") }.joined()
    }

    private static func runGDB(on pid: Int32, output: FileHandle) {
        let gdb = Process()
        gdb.executableURL = URL(fileURLWithPath: gdbPath)
        gdb.arguments = ["-p", String(pid), "-batch", "-ex", "thread apply all bt 40"]
        gdb.standardOutput = output
        gdb.standardError = output
        try? gdb.run()
        gdb.waitUntilExit()
    }
}

/// One outstanding probe per executor at most: when it was sent, and the longest wait seen in the window.
private final class Probes: Sendable {
    private struct State {
        var pending: [ContinuousClock.Instant?]
        var worst: [Duration]
    }
    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(pending: Array(repeating: nil, count: count), worst: Array(repeating: .zero, count: count))) }

    /// Whether a new probe should go out (none is still waiting on that executor).
    func send(_ index: Int, at time: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard state.pending[index] == nil else { return false }
            state.pending[index] = time
            return true
        }
    }

    func arrived(_ index: Int) {
        let now = ContinuousClock.now
        state.withLock { state in
            if let sent = state.pending[index] { state.worst[index] = max(state.worst[index], now - sent) }
            state.pending[index] = nil
        }
    }

    /// The probe waiting longest now, if any.
    func waitingLongest(now: ContinuousClock.Instant) -> (index: Int, waited: Duration)? {
        state.withLock { state in
            state.pending.enumerated().compactMap { index, sent in sent.map { (index, now - $0) } }.max { $0.1 < $1.1 }
        }
    }

    /// The worst wait of the window per executor (counting probes still waiting), then a new window.
    func takeWorst(now: ContinuousClock.Instant) -> [Duration] {
        state.withLock { state in
            defer { state.worst = Array(repeating: .zero, count: state.worst.count) }
            return state.worst.indices.map { index in max(state.worst[index], state.pending[index].map { now - $0 } ?? .zero) }
        }
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
