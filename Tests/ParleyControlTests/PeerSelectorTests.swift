import ParleyControl
import Testing

@Suite("How a target selects peers")
struct PeerSelectorTests {
    struct Candidate: Equatable {
        var id: String
        var name: String
    }

    static let kitchen = Candidate(id: "1f2e3d4c-aaaa", name: "kitchen")
    static let hall = Candidate(id: "1f9a8b7c-bbbb", name: "hall")
    static let kitchenToo = Candidate(id: "9a8b7c6d-cccc", name: "kitchen")
    /// A peer named like another's id prefix: the name wins over the prefix.
    static let named9a = Candidate(id: "5e5e5e5e-dddd", name: "9a8b")
    static let all = [kitchen, hall, kitchenToo, named9a]

    func select(_ target: String, among candidates: [Candidate] = Self.all) -> [Candidate] {
        PeerSelector.select(target, among: candidates, id: \.id, name: \.name)
    }

    @Test("* selects every peer")
    func everyPeer() {
        #expect(select(RoutedType.everyPeer) == Self.all)
        #expect(select("*", among: []) == [])
    }

    @Test("an exact id selects that peer alone, whatever its case")
    func exactID() {
        #expect(select("1f2e3d4c-aaaa") == [Self.kitchen])
        #expect(select("1F2E3D4C-AAAA") == [Self.kitchen])
    }

    @Test("a name selects every peer of that name, as written, before any id prefix")
    func name() {
        #expect(select("kitchen") == [Self.kitchen, Self.kitchenToo])
        #expect(select("9a8b") == [Self.named9a])
        #expect(select("Kitchen") == [])
    }

    @Test("otherwise an id prefix selects the peers whose ids start with it, case-insensitive; an empty target none")
    func idPrefix() {
        #expect(select("1f") == [Self.kitchen, Self.hall])
        #expect(select("1F9") == [Self.hall])
        #expect(select("9a8b", among: [Self.kitchen, Self.kitchenToo]) == [Self.kitchenToo])
        #expect(select("") == [])
        #expect(select("zz") == [])
    }

    @Test("one peer matches a target by its name or an id prefix, never by *")
    func matches() {
        #expect(PeerSelector.matches("kitchen", id: Self.kitchen.id, name: "kitchen"))
        #expect(PeerSelector.matches("1F2E", id: Self.kitchen.id, name: "kitchen"))
        #expect(!PeerSelector.matches("hall", id: Self.kitchen.id, name: "kitchen"))
        #expect(!PeerSelector.matches("", id: Self.kitchen.id, name: "kitchen"))
        #expect(!PeerSelector.matches("*", id: Self.kitchen.id, name: "kitchen"))
    }
}
