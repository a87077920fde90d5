@testable import Parley
import Testing

@Suite("Lifecycle state machine")
struct LifecycleStateMachineTests {
    typealias Machine = LifecycleStateMachine<String, Int>

    @Test("idle → starting → running → draining → stopped, answering start and stop waiters on the way")
    func happyPath() throws {
        var machine = Machine()
        guard case .launch = machine.start(1) else { Issue.record("start did not launch"); return }
        try machine.runBegins()
        guard case .starting(stopRequested: false) = machine.state else { Issue.record("\(machine.state)"); return }
        let waits2 = machine.waitUntilStopped(2)
        #expect(waits2)
        guard case .serve(let started) = machine.listening("listeners") else { Issue.record("not serving"); return }
        #expect(started == [1])
        #expect(machine.isRunning)
        guard case .now = machine.waitUntilListening(3) else { Issue.record("a running machine made a waiter wait"); return }
        guard case .drain(let resources) = machine.stop() else { Issue.record("stop did not drain"); return }
        #expect(resources == "listeners")
        guard case .draining = machine.state else { Issue.record("\(machine.state)"); return }
        guard case .none = machine.stop() else { Issue.record("a second stop drained again"); return }
        #expect(machine.drained() == [2])
        guard case .stopped = machine.state else { Issue.record("\(machine.state)"); return }
    }

    @Test("a stop that comes while starting is remembered and drains as soon as the transceiver listens")
    func stopWhileStarting() throws {
        var machine = Machine()
        try machine.runBegins()
        guard case .wait = machine.waitUntilListening(7) else { Issue.record("did not wait"); return }
        guard case .none = machine.stop() else { Issue.record("drained before listening"); return }
        guard case .serveThenDrain(let waiters, let resources) = machine.listening("listeners") else {
            Issue.record("the remembered stop was lost")
            return
        }
        #expect(waiters == [7] && resources == "listeners")
        #expect(!machine.isRunning)
    }

    @Test("a transceiver runs once: a second run or start is refused; a failure to start answers every waiter")
    func runsOnce() throws {
        var machine = Machine()
        _ = machine.start(1)
        guard case .fail(.alreadyStarted) = machine.start(2) else { Issue.record("second start accepted"); return }
        try machine.runBegins()
        var again = machine
        #expect(throws: TransceiverError.self) { try again.runBegins() }
        let waits3 = machine.waitUntilStopped(3)
        #expect(waits3)
        #expect(machine.failed().sorted() == [1, 3])
        guard case .fail(.notRunning) = machine.waitUntilListening(4) else { Issue.record("waits on a stopped machine"); return }
        let waits5 = machine.waitUntilStopped(5)
        #expect(!waits5)
    }

    @Test("stop on an idle transceiver does nothing: it can still be started")
    func stopWhenIdle() throws {
        var machine = Machine()
        guard case .none = machine.stop() else { Issue.record("stop drained an idle machine"); return }
        let waits1 = machine.waitUntilStopped(1)
        #expect(!waits1)
        try machine.runBegins()
    }
}
