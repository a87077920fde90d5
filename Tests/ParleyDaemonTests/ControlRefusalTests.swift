import Foundation
import Parley
import ParleyControl
@testable import ParleyDaemon
import ParleyDebugger
import ParleyDrawer
import ParleyHistory
import Testing

@Suite("parleyd's refusals reach a local client as the control protocol's codes")
struct ControlRefusalTests {
    /// The code and words `error`, thrown by a control handler, is answered with.
    private func answer(to error: any Error) async -> (code: ErrorCode, text: String)? {
        do {
            try await ControlRefusal.coding { () async throws -> Void in throw error }
        } catch let refusal as any CodedRefusal {
            return (refusal.errorReplyCode, refusal.description)
        } catch {
            return nil
        }
        return nil
    }

    @Test("the history's, the drawer's and the peer gate's errors get their codes, with their words unchanged")
    func wrappedErrors() async {
        let cases: [(any Error & CustomStringConvertible, ControlErrorCode)] = [
            (HistoryStoreError.noSuchSession(4), .noSuchSession),
            (HistoryStoreError.noSuchEntry(99), .noSuchEntry),
            (HistoryStoreError.sessionLive(4), .invalidRequest),
            (DrawerError.notSettable(item: "reset", kind: .action), .drawerItemIsAction),
            (DrawerError.notAnAction(item: "dark", kind: .toggle), .drawerItemIsNotAction),
            (DrawerError.unknownItem("nope", known: []), .invalidDrawerValue),
            (TransceiverError.noPeer(waitedFor: "peer \"kitchen\"", timeout: .seconds(1)), .noMatchingPeer),
        ]
        for (error, expected) in cases {
            let answer = await answer(to: error)
            #expect(answer?.code == expected.errorCode, "\(error)")
            #expect(answer?.text == error.description)
        }
    }

    @Test("an error that is not parleyd's refusal stays handler-failed")
    func otherErrors() async {
        #expect(await answer(to: TransceiverError.notRunning) == nil)
    }

    @Test("parleyd's own refusals carry their codes")
    func ownErrors() {
        #expect(RoutingError.notRouted("Echo").errorReplyCode == ControlErrorCode.notRouted.errorCode)
        #expect(RoutingError.noMatchingPeer("kitchen", connected: []).errorReplyCode == ControlErrorCode.noMatchingPeer.errorCode)
        #expect(DebuggerError.noApps.errorReplyCode == ControlErrorCode.noMatchingPeer.errorCode)
        #expect(DebuggerError.diffTooLarge(bytes: 2, limit: 1).errorReplyCode == ControlErrorCode.invalidRequest.errorCode)
        #expect(DebuggerError.firstOfSession(7, session: 2).errorReplyCode == ControlErrorCode.firstOfSession.errorCode)
        #expect(DrawerServiceError.ambiguous("L", matches: ["Listr", "Lister"]).errorReplyCode == ControlErrorCode.ambiguousTarget.errorCode)
        #expect(ConfigurationError.conflict("x").errorReplyCode == ControlErrorCode.invalidConfiguration.errorCode)
    }

    @Test("the debugger's words name no command: each front end adds its own way on, by the code")
    func neutralWords() {
        let session = SessionSummary(id: 3, peerID: "p", appName: "Listr", kind: .parley, started: .now)
        let texts = [
            DebuggerError.firstOfSession(7, session: 2), .sessionAppGone(session, connected: []), .noApps,
            .noSuchApp("kitchen", connected: []),
        ].map(\.description)
        #expect(texts[0] == "entry 7 is the first of session 2: there is nothing before it to compare with")
        #expect(texts[1] == "the app of session 3 (Listr) is not connected (no debugger app is connected)")
        for text in texts { #expect(!text.contains("parleyctl") && !text.contains("--"), "\(text)") }
        #expect(DebuggerError.sessionAppGone(session, connected: []).errorReplyCode == ControlErrorCode.sessionAppNotConnected.errorCode)
    }

    @Test("the library names no command; parleyd's message adds the one that writes a secret")
    func secretHint() {
        let missing = SharedSecretError.missing(path: "/etc/parley/secret")
        #expect(!missing.description.contains("parleyctl"))
        #expect(missing.descriptionNamingCommand == "shared secret file /etc/parley/secret does not exist; create one with `parleyctl secret generate --output /etc/parley/secret`")
    }
}
