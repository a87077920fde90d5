import ParleyCommandLine
import Testing

@Suite("Did-you-mean suggestions")
struct NearestNameTests {
    @Test("edit distance counts a swap of neighbours as one, ignores case, and stays within a third of the name")
    func nearest() {
        #expect(NearestName.suggestions(for: "AddItemCommnad", among: ["AddItemCommand", "ListItemsCommand"]) == ["AddItemCommand"])
        #expect(NearestName.suggestions(for: "additemcommand", among: ["AddItemCommand"]) == ["AddItemCommand"])
        #expect(NearestName.suggestions(for: "Zebra", among: ["AddItemCommand"]).isEmpty)
    }

    @Test("the closest come first, ties by name, at most the limit, each once")
    func order() {
        let candidates = ["stats", "status", "state", "start", "status"]
        #expect(NearestName.suggestions(for: "statu", among: candidates) == ["state", "stats", "status"])
        #expect(NearestName.suggestions(for: "statu", among: candidates, limit: 1) == ["state"])
        #expect(NearestName.suggestions(for: "status", among: candidates) == ["status", "stats", "state"])
    }

    @Test("a short name allows one edit; nothing typed suggests nothing")
    func shortNames() {
        #expect(NearestName.suggestions(for: "ls", among: ["l", "lsx", "cd"]) == ["l", "lsx"])
        #expect(NearestName.suggestions(for: "", among: ["sessions"]).isEmpty)
    }
}
