import Foundation
@testable import Parley
import ParleyTestSupport
import Testing

@Suite("Persisted peer ids")
struct IdentityFileTests {
    @Test("a second running copy of an app gets an id of its own, kept across launches; the first copy's id is free again once it stops")
    func copiesGetIdsOfTheirOwn() async throws {
        let directory = try ScratchDirectory(prefix: "parley-identity")
        let path = directory.file("app.peer-id")
        func copy() -> Transceiver { makeTransceiver("app", listen: nil) { $0.identity = .persisted(path: path) } }

        let first = copy()
        let second = copy()
        let (firstID, secondID) = try await withRunning([first, second]) { (first.localPeerID, second.localPeerID) }
        #expect(firstID != nil && secondID != nil && firstID != secondID)
        let files = Set([try String(contentsOfFile: path, encoding: .utf8), try String(contentsOfFile: path + ".2", encoding: .utf8)])
        #expect(files == Set([firstID, secondID].compactMap { $0.map { $0.rawValue + "\n" } }))

        // Both stopped: the next launch takes the first file's id again, and a second copy the second's.
        let again = copy()
        let alsoAgain = copy()
        try await withRunning([again]) {
            #expect(again.localPeerID?.rawValue == (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .newlines))
            try await withRunning([alsoAgain]) {
                #expect(alsoAgain.localPeerID?.rawValue == (try? String(contentsOfFile: path + ".2", encoding: .utf8))?.trimmingCharacters(in: .newlines))
            }
        }
    }

    @Test("a peer id file that holds something else is an error naming the file and the fix")
    func damagedFile() async throws {
        let directory = try ScratchDirectory(prefix: "parley-identity")
        let path = try directory.write("app.peer-id", "not a uuid\n")
        #expect(throws: IdentityError.notAPeerID(path: path, contents: "not a uuid")) { try ResolvedIdentity(.persisted(path: path)) }
        #expect(IdentityError.notAPeerID(path: path, contents: "x").description.contains("delete it to get a new id"))
    }
}
