import Foundation
import ParleyTestSupport
import Testing

@Suite("A child process that hangs in a test")
struct HungChildTests {
    /// What made the CI failure "parleyd … timed out waiting to exit" readable: the failure names what each of the
    /// child's threads was doing when it was killed.
    @Test("is killed after its time, and the failure names the functions its threads were in")
    func hungChildIsKilledWithItsStacks() async throws {
        let child = try ChildProcess("/bin/sleep", ["60"])
        do {
            // SIGCONT does not end `sleep`: it stands for a SIGTERM that a hung daemon does not act on.
            _ = try await child.stop(SIGCONT, within: .milliseconds(300))
            Issue.record("sleep exited on SIGCONT")
        } catch let error as PeerProcessError {
            let text = "\(error)"
            #expect(text.contains("timed out"), "\(text)")
            let threads = text.components(separatedBy: "its threads:").last ?? ""
            // Its one thread waits in the C library's sleep.
            #expect(threads.hasPrefix("\n[1] ") && threads.contains("nanosleep"), "\(text)")
        }
        #expect(try await child.exitStatus(within: .seconds(10)) == 128 + SIGKILL)
    }
}
