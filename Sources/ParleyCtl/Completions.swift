import ArgumentParser
import Foundation
import ParleyControl
import ParleyDebugger
import Synchronization

/// Shell completions that ask the running parleyd: the names of its peers, the ids of its sessions. Quick and
/// quiet: when parleyd is not there (or slow), nothing is offered and nothing is printed.
enum LiveCompletions {
    static let peerNames = CompletionKind.custom { (arguments: [String], _: Int, prefix: String) -> [String] in
        blocking { await ask(arguments) { client in
            let list = try await client.control(Control.Peers(), expecting: Control.PeerList.self)
            return list.peers.flatMap { [$0.name, String($0.id.prefix(8))] }
        } }.filter { $0.hasPrefix(prefix) }
    }

    static let sessionIDs = CompletionKind.custom { (arguments: [String], _: Int, prefix: String) -> [String] in
        blocking { await ask(arguments) { client in
            // The newest page is what a person completes against.
            let list = try await client.control(DebuggerControl.Sessions(), expecting: DebuggerControl.SessionList.self)
            return list.sessions.map { String($0.id) }
        } }.filter { $0.hasPrefix(prefix) }
    }

    /// ArgumentParser runs asynchronous completions only from its own `main()`; parleyctl parses with
    /// `parseAsRoot()` (to map errors to its exit statuses), which takes synchronous ones. The main thread waits
    /// here while the query runs on the concurrency pool's threads; it is bounded by ``ask``'s second.
    private static func blocking(_ body: @escaping @Sendable () async -> [String]) -> [String] {
        let result = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// Runs `body` against the socket named on the command line being completed (`--socket PATH`), or the
    /// default one, for at most a second.
    private static func ask(_ arguments: [String], _ body: @escaping @Sendable (DaemonClient) async throws -> [String]) async -> [String] {
        let socket = arguments.firstIndex(of: "--socket").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
            ?? ControlSocket.defaultPath(environment: ProcessInfo.processInfo.environment)
        return await withTaskGroup(of: [String]?.self) { group in
            group.addTask { try? await DaemonClient(socketPath: socket, name: "parleyctl-completion", logLevel: "critical").run(body) }
            group.addTask {
                try? await Task.sleep(for: .seconds(1))
                return nil
            }
            defer { group.cancelAll() }
            return (await group.next() ?? nil) ?? []
        }
    }
}
