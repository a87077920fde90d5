import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Long output on a terminal goes through a pager, as git and journalctl do: `$PAGER` (default `less`, with
/// `LESS=FRX` unless set: it quits at once when everything fits on one screen, keeps colours, leaves the text on
/// the screen). Never when standard output is not a terminal, when `PAGER` is empty or `cat`, or with
/// `--no-pager`. The pager is started before the first line is written and read until it is done, so the shell's
/// prompt comes back after it.
enum Pager {
    private static let pid = Atomic<Int32>(0)

    /// Whether standard output was a terminal before a pager took it over (colour is decided by that).
    static var pagesToTerminal: Bool { pid.load(ordering: .relaxed) != 0 }

    static func start(unless disabled: Bool) {
        guard !disabled, !pagesToTerminal, isatty(STDOUT_FILENO) == 1 else { return }
        let environment = ProcessInfo.processInfo.environment
        let command: String
        if let chosen = environment["PAGER"] {
            let trimmed = chosen.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, trimmed != "cat" else { return }
            command = trimmed
        } else {
            // No pager named and none installed: plain output rather than an error where the output should be.
            guard access("/usr/bin/less", X_OK) == 0 || access("/bin/less", X_OK) == 0 else { return }
            command = "less"
        }
        setenv("LESS", "FRX", 0)

        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], STDIN_FILENO)
        posix_spawn_file_actions_addclose(&actions, ends[0])
        posix_spawn_file_actions_addclose(&actions, ends[1])
        var child: pid_t = 0
        let arguments = ["/bin/sh", "-c", command]
        let spawned = withArrayOfCStrings(arguments) { argv in posix_spawn(&child, "/bin/sh", &actions, nil, argv, environ) }
        close(ends[0])
        guard spawned == 0 else {
            close(ends[1])
            return
        }
        dup2(ends[1], STDOUT_FILENO)
        close(ends[1])
        pid.store(child, ordering: .relaxed)
        // Every way out of parleyctl (the end of a command, exit(0) when the pager quits early) waits for it.
        atexit {
            let child = Pager.pid.load(ordering: .relaxed)
            guard child != 0 else { return }
            close(STDOUT_FILENO)  // end of input: the pager shows the rest and waits for the person
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
    }

    private static func withArrayOfCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
