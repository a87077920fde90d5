import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A diagnostic for tests that miss a deadline only when the whole suite runs: with `PARLEYTEST_STALL_WATCH=DIR`
/// set, a thread of its own checks every 100 ms that each of NIO's shared event loops and Swift's cooperative
/// pool still run new work. When one has not for a second, every thread's stack (gdb) is written to DIR, which
/// names the code holding the thread. Off unless asked for: attaching gdb stops the process for a moment.
public enum StallWatch {
    /// Starts the watch once per process when the environment asks for it; cheap to call from every helper.
    public static func startIfRequested() { _ = started }

    private static let started: Bool = {
        guard let directory = ProcessInfo.processInfo.environment["PARLEYTEST_STALL_WATCH"], !directory.isEmpty else {
            return false
        }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let thread = Thread { watch(writingTo: directory) }
        thread.name = "parley-stall-watch"
        thread.start()
        return true
    }()

    private static func watch(writingTo directory: String) {
        var loops: [any EventLoop] = []
        for loop in MultiThreadedEventLoopGroup.singleton.makeIterator() { loops.append(loop) }
        let names = loops.indices.map { "event loop \($0)" } + ["cooperative pool"]
        let lastRun = LastRun(count: names.count)
        var lastDump = ContinuousClock.now - .seconds(60)
        var dumps = 0
        while dumps < 5 {
            for (index, loop) in loops.enumerated() {
                loop.execute { lastRun.mark(index) }
            }
            let poolIndex = loops.count
            Task.detached { lastRun.mark(poolIndex) }
            Thread.sleep(forTimeInterval: 0.1)
            let now = ContinuousClock.now
            let stalled = lastRun.times.withLock { seen in
                names.indices.filter { now - seen[$0] > .seconds(1) }.map { "\(names[$0]) for \(now - seen[$0])" }
            }
            guard !stalled.isEmpty, now - lastDump > .seconds(10) else { continue }
            lastDump = now
            dumps += 1
            let stacks = Process()
            stacks.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
            stacks.arguments = ["-p", String(getpid()), "-batch", "-ex", "thread apply all bt 40"]
            let path = "\(directory)/stall-\(getpid())-\(dumps).txt"
            _ = FileManager.default.createFile(atPath: path, contents: Data("stalled: \(stalled)\n".utf8))
            guard let output = FileHandle(forWritingAtPath: path) else { continue }
            output.seekToEndOfFile()
            stacks.standardOutput = output
            stacks.standardError = output
            try? stacks.run()
            stacks.waitUntilExit()
            try? output.close()
        }
    }
}

/// When each watched executor last ran the watch's probe.
private final class LastRun: Sendable {
    let times: Mutex<[ContinuousClock.Instant]>
    init(count: Int) { times = Mutex(Array(repeating: .now, count: count)) }
    func mark(_ index: Int) { times.withLock { $0[index] = .now } }
}
