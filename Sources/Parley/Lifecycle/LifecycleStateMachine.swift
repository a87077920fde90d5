/// A transceiver's life, in one place: what may happen in which state, and what the transceiver must do about it.
///
/// ```
/// idle ──run──▶ starting ──listening──▶ running ──stop──▶ draining ──drained──▶ stopped
///                  │  └──stop (remembered)──▶ draining as soon as it is listening   ▲
///                  └──failed────────────────────────────────────────────────────────┘
/// ```
///
/// A plain value: it decides and returns actions, the transceiver performs them (outside its lock), and the
/// transitions are tested without sockets. `Resources` are what a running transceiver owns and a draining one
/// must close (its listeners, its job stream); `Waiter` is whatever a caller of `start()` or `stop()` waits on.
struct LifecycleStateMachine<Resources, Waiter> {
    enum State {
        case idle
        /// `run()` is binding its listeners. `stopRequested`: `stop()` came meanwhile.
        case starting(stopRequested: Bool)
        case running(Resources)
        /// Closing: listeners closed, peers told, in-flight replies finishing.
        case draining
        case stopped
    }

    private(set) var state = State.idle {
        didSet {
            if case .running = state { isRunning = true } else { isRunning = false }
        }
    }
    /// Kept beside the state rather than read from it: every send asks, and matching the generic state enum
    /// copied it (its resources included) each time.
    private(set) var isRunning = false
    /// Callers of `start()`, answered once the transceiver listens (or fails to).
    private var startWaiters: [Waiter] = []
    /// Callers of `stop()` on a transceiver they did not start, answered once it has stopped.
    private var stopWaiters: [Waiter] = []
    /// `start()` launched a task running `run()`.
    private(set) var launched = false

    enum StartAction {
        /// Launch the task that runs `run()`; `waiter` is answered when it listens.
        case launch
        case fail(TransceiverError)
    }

    /// `start()`: the convenience form, which runs `run()` in a task of its own.
    mutating func start(_ waiter: Waiter) -> StartAction {
        guard case .idle = state, !launched else { return .fail(.alreadyStarted) }
        launched = true
        startWaiters.append(waiter)
        return .launch
    }

    enum ListeningWait {
        /// Already listening: go on.
        case now
        /// Wait: the waiter is answered when it listens or fails.
        case wait
        case fail(TransceiverError)
    }

    /// A caller (parleyd, a test) waiting for a transceiver that another task runs to be listening.
    mutating func waitUntilListening(_ waiter: Waiter) -> ListeningWait {
        switch state {
        case .running: return .now
        case .idle, .starting:
            startWaiters.append(waiter)
            return .wait
        case .draining, .stopped: return .fail(.notRunning)
        }
    }

    /// `run()` begins. A transceiver runs once.
    mutating func runBegins() throws(TransceiverError) {
        guard case .idle = state else { throw .alreadyStarted }
        state = .starting(stopRequested: false)
    }

    enum ListeningAction {
        /// Serve; answer the `start()` waiters.
        case serve(startWaiters: [Waiter])
        /// `stop()` came while starting: answer the waiters, then drain at once.
        case serveThenDrain(startWaiters: [Waiter], Resources)
    }

    /// The listeners are bound: the transceiver is running.
    mutating func listening(_ resources: Resources) -> ListeningAction {
        guard case .starting(let stopRequested) = state else {
            preconditionFailure("listening while \(state)")
        }
        let waiters = startWaiters
        startWaiters.removeAll()
        if stopRequested {
            state = .draining
            return .serveThenDrain(startWaiters: waiters, resources)
        }
        state = .running(resources)
        return .serve(startWaiters: waiters)
    }

    enum StopAction {
        case none
        /// Close the resources and drain the connections.
        case drain(Resources)
    }

    /// `stop()`, cancellation or graceful shutdown.
    mutating func stop() -> StopAction {
        switch state {
        case .idle, .draining, .stopped:
            return .none
        case .starting:
            state = .starting(stopRequested: true)
            return .none
        case .running(let resources):
            state = .draining
            return .drain(resources)
        }
    }

    /// `run()` failed while starting (binding a listener, reading the identity): it is over.
    /// Returns the waiters to fail.
    mutating func failed() -> [Waiter] {
        state = .stopped
        defer {
            startWaiters.removeAll()
            stopWaiters.removeAll()
        }
        return startWaiters + stopWaiters
    }

    /// Every connection has ended: stopped. Returns the `stop()` waiters to answer.
    mutating func drained() -> [Waiter] {
        state = .stopped
        defer { stopWaiters.removeAll() }
        return stopWaiters
    }

    /// A `stop()` that must wait for `run()` to end. Returns false when there is nothing to wait for.
    mutating func waitUntilStopped(_ waiter: Waiter) -> Bool {
        switch state {
        case .idle, .stopped: return false
        case .starting, .running, .draining:
            stopWaiters.append(waiter)
            return true
        }
    }
}
