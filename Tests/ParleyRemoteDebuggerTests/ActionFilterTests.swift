import ParleyRemoteDebugger
import Testing

@Suite("Action filters")
struct ActionFilterTests {
    static let actions: [CounterAction] = [.increment, .reset, .tick(1), .mouseMoved(x: 3, y: 4)]

    /// Which of the sample actions `filter` includes.
    func included(by filter: ActionFilter<CounterAction>) -> [CounterAction] {
        Self.actions.filter { filter($0) }
    }

    @Test("all includes every action")
    func all() {
        #expect(included(by: .all) == Self.actions)
    }

    @Test("a custom predicate decides, and callAsFunction asks it")
    func customPredicate() {
        let evenTicks = ActionFilter<CounterAction> { action in
            if case .tick(let n) = action { n.isMultiple(of: 2) } else { false }
        }
        #expect(evenTicks(.tick(2)))
        #expect(!evenTicks(.tick(3)))
        #expect(!evenTicks(.increment))
    }

    @Test("not includes exactly what its filter excludes")
    func not() {
        #expect(included(by: .not(.noisy)) == [.increment, .reset])
        #expect(included(by: .not(.not(.noisy))) == [.tick(1), .mouseMoved(x: 3, y: 4)])
        #expect(included(by: .not(.all)) == [])
    }

    @Test("anyOf includes what at least one filter includes; given none it includes nothing")
    func anyOf() {
        #expect(included(by: .anyOf(.noisy, .resets)) == [.reset, .tick(1), .mouseMoved(x: 3, y: 4)])
        #expect(included(by: .anyOf([.resets])) == [.reset])
        #expect(included(by: .anyOf([])) == [])
    }

    @Test("allExcept excludes what any filter includes; given none it includes everything")
    func allExcept() {
        #expect(included(by: .allExcept(.noisy)) == [.increment, .reset])
        #expect(included(by: .allExcept(.noisy, .resets)) == [.increment])
        #expect(included(by: .allExcept([.resets])) == [.increment, .tick(1), .mouseMoved(x: 3, y: 4)])
        #expect(included(by: .allExcept([])) == Self.actions)
    }

    @Test("a team's named filters compose with the others")
    func namedFilters() {
        // `.noisy` and `.resets` are declared once, in an `extension ActionFilter where Action == CounterAction`.
        let filter: ActionFilter<CounterAction> = .allExcept(.noisy, .not(.anyOf(.resets, .noisy)))
        #expect(included(by: filter) == [.reset])
    }
}
