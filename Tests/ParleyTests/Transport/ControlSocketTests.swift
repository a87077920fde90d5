import Foundation
import NIOCore
@testable import Parley
import ParleyTestSupport
import ParleyWire
import Synchronization
import Testing

@Suite("Control socket", .timeLimit(.minutes(1)))
struct ControlSocketTests {
    static func scratch() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("parley-ctl-\(UUID().uuidString.prefix(8))")
    }

    @Test("the socket's directory is created 0700; a symlink, a directory of another user or one others may write to is refused, saying why")
    func unsafeDirectories() throws {
        let root = Self.scratch()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }

        let fresh = root.appendingPathComponent("fresh/sockets").path
        try ControlSocketGuard.prepare(socketPath: fresh + "/node.sock")
        let freshMode = try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int
        #expect(freshMode == 0o700)

        let target = root.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let link = root.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(throws: ControlSocketProblem.directoryIsSymlink(link)) { try ControlSocketGuard.prepare(socketPath: link + "/node.sock") }

        let open = root.appendingPathComponent("open").path
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        #expect(throws: ControlSocketProblem.directoryWritableByOthers(open, mode: UInt32(S_IFDIR) | 0o777)) {
            try ControlSocketGuard.prepare(socketPath: open + "/node.sock")
        }
        chmod(open, 0o1777)  // sticky, like /tmp: others still may put a socket of their own at the path
        #expect(throws: ControlSocketProblem.directoryWritableByOthers(open, mode: UInt32(S_IFDIR) | 0o1777)) {
            try ControlSocketGuard.prepare(socketPath: open + "/node.sock")
        }
        chmod(open, 0o755)  // others may look, not write
        try ControlSocketGuard.prepare(socketPath: open + "/node.sock")

        let foreign = root.appendingPathComponent("foreign").path
        try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
        let other: uid_t = geteuid() == 65534 ? 65533 : 65534
        if chown(foreign, other, gid_t(other)) == 0 {  // only root can give a directory away; as a user, skip this case
            #expect(throws: ControlSocketProblem.directoryOwnedByOther(foreign, owner: other)) {
                try ControlSocketGuard.prepare(socketPath: foreign + "/node.sock")
            }
        }
        #expect(ControlSocketProblem.directoryWritableByOthers(open, mode: 0o40777).description.contains("chmod go-w \(open)"))
    }

    @Test("a second node on a live control socket is refused, naming the pid that serves it, and the first keeps serving; a dead socket file is taken over")
    func socketInUse() async throws {
        let directory = Self.scratch()
        let path = directory.appendingPathComponent("node.sock").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = makeTransceiver("first") { $0.controlSocketPath = path }
        let second = makeTransceiver("second") { $0.controlSocketPath = path }
        let client = makeTransceiver("tool", listen: nil)
        try await withRunning([first, client]) {
            do {
                try await second.start()
                Issue.record("a second node took over a live control socket")
                await second.stop()
            } catch TransceiverError.controlSocket(let problem) {
                // The refusal names the process serving the socket: here this test process, which runs `first`.
                let command = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(problem == .inUse(path, pid: getpid(), command: command), "\(problem)")
                #expect(problem.description.contains("pid \(getpid())) is serving the control socket \(path)"), "\(problem)")
            }
            let peer = try await client.connect(toUnixSocket: path)
            #expect(peer.name == "first")
        }
        // A socket file left behind by a process that was killed: bound once, nobody answers on it any more.
        let dead = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(dead, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(dead)
        #expect(bound == 0 && FileManager.default.fileExists(atPath: path))
        let third = makeTransceiver("third") { $0.controlSocketPath = path }
        let tool = makeTransceiver("tool", listen: nil)
        try await withRunning([third, tool]) {
            let peer = try await tool.connect(toUnixSocket: path)
            #expect(peer.name == "third")
        }
    }

    @Test("a Unix control socket speaks the same protocol, with mode 0660, and its clients are local peers")
    func controlSocket() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-ctl-\(UUID().uuidString.prefix(8))")
        let path = directory.appendingPathComponent("node.sock").path
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = makeTransceiver("server") { $0.controlSocketPath = path }
        let client = makeTransceiver("tool", listen: nil)
        let seen = Inbox<Peer>()
        server.respond(to: Echo.self) { echo, peer in
            seen.put(peer)
            return echo
        }
        try await withRunning([server, client]) {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o660)
            let peer = try await client.connect(toUnixSocket: path)
            #expect(peer.name == "server" && peer.isLocal)
            #expect(try await client.request(Echo(text: "local"), from: peer, expecting: Echo.self).text == "local")
            let asSeen = try #require(try await seen.take().first)
            #expect(asSeen.isLocal && asSeen.name == "tool")
        }
    }

    @Test("routeUnhandled answers requests with what the router returns, and no-responder when it returns nothing")
    func routing() async throws {
        let server = makeTransceiver("router")
        let client = makeTransceiver("client", listen: nil)
        server.routeUnhandled { message, _ in
            message.typeName == "forward.me" ? (typeName: "forwarded", payload: message.payload) : nil
        }
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let reply = try await client.requestRaw(typeName: "forward.me", payload: ByteBuffer(string: #"{"a":1}"#), from: peer.id)
            #expect(reply.typeName == "forwarded" && reply.payload == ByteBuffer(string: #"{"a":1}"#))
            do {
                _ = try await client.requestRaw(typeName: "drop.me", payload: ByteBuffer(string: "{}"), from: peer.id)
                Issue.record("an unrouted request was answered")
            } catch TransceiverError.remoteError(let code, _) {
                #expect(code == .noResponder)
            }
        }
    }

    @Test("routeUnhandled with an immediate part: it is offered runs of one-way messages of one type, what it takes never reaches the async handler, the rest does, and one connection's messages are handled in the order sent")
    func immediateRouting() async throws {
        let server = makeTransceiver("router")
        let client = makeTransceiver("client", listen: nil)
        let handled = Mutex<[(index: Int, immediately: Bool)]>([])
        let offered = Mutex<[[Int]]>([])
        @Sendable func index(of message: InboundMessage) -> Int { Int(String(buffer: message.payload))! }
        server.routeUnhandled(
            immediately: { run, _ in
                offered.withLock { $0.append(run.map(index(of:))) }
                // Takes at most two of a run of "quick": the third goes to the async handler, the rest comes back.
                guard run.first?.typeName == "quick" else { return 0 }
                let taken = run.prefix(2)
                handled.withLock { $0 += taken.map { (index(of: $0), true) } }
                return taken.count
            },
            otherwise: { message, _ in
                // Suspends (no timer): were the immediate part offered later messages while this one is
                // suspended, they would overtake it, and the order check below would fail.
                for _ in 0..<10 { await Task.yield() }
                handled.withLock { $0.append((index(of: message), false)) }
                return message.expectsReply ? (typeName: "answered", payload: message.payload) : nil
            }
        )
        try await withRunning([server, client]) {
            let peer = try await client.connect(to: server.loopbackEndpoint)
            let total = 300
            func isSlow(_ index: Int) -> Bool { index % 7 == 0 }
            for index in 0..<total {
                try await client.sendRaw(typeName: isSlow(index) ? "slow" : "quick", payload: ByteBuffer(string: "\(index)"), to: peer.id)
            }
            // A request of the quick type is never offered to the immediate part: only the async handler answers.
            let reply = try await client.requestRaw(typeName: "quick", payload: ByteBuffer(string: "\(total)"), from: peer.id)
            #expect(reply.typeName == "answered" && String(buffer: reply.payload) == "\(total)")
            let seen = handled.withLock { $0 }
            #expect(seen.map(\.index) == Array(0...total), "every message once, in the order sent")
            #expect(!seen.contains { $0.immediately && (isSlow($0.index) || $0.index == total) })
            #expect(seen.contains { $0.immediately })
            for run in offered.withLock({ $0 }) {
                #expect(!run.isEmpty && run == Array(run[0]..<run[0] + run.count), "a run is consecutive messages")
                #expect(Set(run.map(isSlow)).count == 1, "a run is of one type")
            }
        }
    }
}

extension ControlSocketProblem {
    /// The command name an `inUse` refusal reported.
    fileprivate var command: String? {
        if case .inUse(_, _, let command) = self { command } else { nil }
    }
}
