import ParleyControl
import Testing

@Suite("The peer send waits for")
struct WantedPeerTests {
    struct Candidate {
        var id: String
        var name: String
        var accepts: [String]
    }

    let connected = [
        Candidate(id: "1f2e3d4c-0000", name: "listr", accepts: ["listr.AddItemCommand", "listr.ListItemsCommand"]),
        Candidate(id: "9a8b7c6d-0000", name: "notes", accepts: ["notes.AddNote"]),
    ]

    func mismatch(_ wanted: WantedPeer) -> String? {
        wanted.mismatch(among: connected, id: \.id, name: \.name, accepts: \.accepts)
    }

    @Test("a misspelt type is refused at once, naming the closest accepted type and who accepts it")
    func misspeltType() {
        let message = mismatch(WantedPeer(selector: nil, acceptingType: "AddItemComand"))
        #expect(message == "no connected peer accepts AddItemComand (did you mean AddItemCommand, accepted by listr?); connected: listr (1f2e3d4c), notes (9a8b7c6d)")
    }

    @Test("a misspelt peer name names the closest connected one; nothing close names none")
    func misspeltName() {
        #expect(mismatch(WantedPeer(selector: "lister"))?.contains("(did you mean listr?)") == true)
        #expect(mismatch(WantedPeer(selector: nil, acceptingType: "Zebra")) == "no connected peer accepts Zebra; connected: listr (1f2e3d4c), notes (9a8b7c6d)")
    }

    @Test("no mismatch when a connected peer matches, or when nothing is connected yet (then send waits)")
    func noMismatch() {
        #expect(mismatch(WantedPeer(selector: nil, acceptingType: "AddItemCommand")) == nil)
        #expect(mismatch(WantedPeer(selector: "notes")) == nil)
        #expect(mismatch(WantedPeer(selector: "9a8b")) == nil)
        #expect(WantedPeer(selector: "x").mismatch(among: [Candidate](), id: \.id, name: \.name, accepts: \.accepts) == nil)
    }
}
