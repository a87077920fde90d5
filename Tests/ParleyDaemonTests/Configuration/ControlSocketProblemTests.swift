import Parley
@testable import ParleyDaemon
import Testing

@Suite("parleyd's words for the control socket's refusals")
struct ControlSocketProblemTests {
    @Test("the control socket's refusals name no program's options; parleyd's message adds its own, by case")
    func controlSocketHints() {
        let problems: [ControlSocketProblem] = [
            .directoryIsSymlink("/run/p"), .notADirectory("/run/p"), .directoryOwnedByOther("/run/p", owner: 7),
            .directoryWritableByOthers("/run/p", mode: 0o40777), .cannotPrepare("/run/p", reason: "EIO"),
            .inUse("/run/p/parleyd.sock", pid: 42, command: "parleyd"),
        ]
        for problem in problems {
            #expect(!problem.description.contains("--") && !problem.description.contains("XDG_RUNTIME_DIR"), "\(problem)")
            #expect(problem.descriptionNamingOptions.hasPrefix(problem.description))
        }
        #expect(problems[0].descriptionNamingOptions.hasSuffix("choose another path for the socket (--control-socket)"))
        #expect(problems[2].descriptionNamingOptions.contains("(--control-socket, or XDG_RUNTIME_DIR for the default path)"))
        #expect(problems[4].descriptionNamingOptions == problems[4].description)
        #expect(
            problems[5].descriptionNamingOptions
                == "another parleyd (pid 42) is serving the control socket /run/p/parleyd.sock; stop it first, or give this one a socket of its own (--control-socket) and a data directory of its own (--data-directory)"
        )
    }
}
