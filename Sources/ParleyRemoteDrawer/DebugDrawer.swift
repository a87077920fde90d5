import Foundation
import Logging
import Parley
import ParleyDrawer
import Synchronization

/// An app's debug drawer, offered to parleyd (docs/drawer.md): typed settings and actions that a person changes
/// from `parleyctl` or the web debugger while the app runs.
///
/// ```swift
/// let drawer = DebugDrawer(transceiver: parley)          // before parley.start()
/// let slow = drawer.toggle("network.slow", "Simulate a slow network", default: false, remember: true)
/// let theme = drawer.choice("theme", "Theme", default: Theme.light)
/// drawer.action("list.reset", "Reset the list", destructive: true) { await store.clear(); return "list cleared" }
/// drawer.info("build", "Build", value: "1.4 (abc123)")
/// for await on in slow.values { network.delay = on ? .seconds(2) : .zero }
/// ```
///
/// The drawer is declared to every connected peer that hosts drawers (parleyd), again whenever an item is added,
/// and each value the app changes itself (`setting.set(_:)`) is reported, in the order it happened (one queue per
/// host): parleyd ends with the value the app set last. A value set from outside is checked
/// against the declaration here as well as in parleyd before the setting changes. Items marked `remember` get
/// the value parleyd remembered for this app's name when the app connects.
public final class DebugDrawer: Sendable {
    private let transceiver: Transceiver
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var items: [DrawerItem] = []
        /// Applies a value already checked against the declaration.
        var apply: [String: @Sendable (DrawerValue) -> Void] = [:]
        var actions: [String: @Sendable () async throws -> String?] = [:]
        /// Connected peers that host drawers, once greeted.
        var hosts: [PeerID: Host] = [:]
        var watcher: Task<Void, Never>?
    }

    /// Registers the drawer's handlers on `transceiver`; create it before the transceiver starts, so that its
    /// hello lists `parley.drawer.Set` and `parley.drawer.Invoke`.
    public init(transceiver: Transceiver, logger: Logger = Logger(label: "parley.drawer")) {
        self.transceiver = transceiver
        self.logger = logger
        transceiver.respond(to: DrawerMessage.Set.self) { [weak self] set, _ in
            guard let self else { throw DrawerError.unknownItem(set.item, known: []) }
            return try self.applyFromOutside(set.item, set.value)
        }
        transceiver.respond(to: DrawerMessage.Invoke.self) { [weak self] invoke, _ in
            guard let self else { throw DrawerError.unknownItem(invoke.item, known: []) }
            return try await self.invoke(invoke.item)
        }
        let events = transceiver.peerEvents
        let watcher = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
        }
        state.withLock { $0.watcher = watcher }
    }

    deinit {
        state.withLock { state in
            state.watcher?.cancel()
            for host in state.hosts.values { host.outbox.cancel() }
        }
    }

    // MARK: - Items

    public func toggle(_ id: String, _ label: String, default initial: Bool, section: String? = nil, remember: Bool = false) -> DrawerSetting<Bool> {
        add(
            DrawerItem(id: id, label: label, kind: .toggle, value: .bool(initial), remember: remember, section: section),
            initial: initial, encode: { .bool($0) }, decode: { if case .bool(let on) = $0 { on } else { nil } }
        )
    }

    /// One of the cases of `Value`, a `CaseIterable` enum; the options are its cases. An option's id (what
    /// `parleyctl set` takes, and what goes on the wire) is the case's JSON encoding when that is a string, else
    /// the case's name as `String(describing:)` gives it: `Speed.fast` of `enum Speed: Int` is `fast`, as is a
    /// plain `enum Speed: Codable` case. The ids must differ (parleyd refuses a choice that lists one twice).
    /// An enum with `String` raw values takes the other `choice`, which names options by their raw values.
    public func choice<Value: CaseIterable & Codable & Sendable & Equatable>(
        _ id: String, _ label: String, default initial: Value, section: String? = nil, remember: Bool = false,
        optionLabel: @escaping @Sendable (Value) -> String = { "\($0)" }
    ) -> DrawerSetting<Value> {
        choice(id, label, default: initial, optionID: Self.optionID, section: section, remember: remember, optionLabel: optionLabel)
    }

    /// One of the cases of `Value`, an enum with `String` raw values; the options are its cases, named on the wire
    /// by their raw values.
    public func choice<Value: CaseIterable & Codable & Sendable & Equatable & RawRepresentable>(
        _ id: String, _ label: String, default initial: Value, section: String? = nil, remember: Bool = false,
        optionLabel: @escaping @Sendable (Value) -> String = { "\($0)" }
    ) -> DrawerSetting<Value> where Value.RawValue == String {
        choice(id, label, default: initial, optionID: { $0.rawValue }, section: section, remember: remember, optionLabel: optionLabel)
    }

    private func choice<Value: CaseIterable & Sendable & Equatable>(
        _ id: String, _ label: String, default initial: Value, optionID: (Value) -> String, section: String?, remember: Bool,
        optionLabel: @escaping @Sendable (Value) -> String
    ) -> DrawerSetting<Value> {
        let cases = Value.allCases.map { (id: optionID($0), value: $0) }
        let options = cases.map { DrawerItem.Option(id: $0.id, label: optionLabel($0.value)) }
        let encode: @Sendable (Value) -> DrawerValue = { value in .string(cases.first { $0.value == value }?.id ?? "\(value)") }
        return add(
            DrawerItem(id: id, label: label, kind: .choice, value: encode(initial), options: options, remember: remember, section: section),
            initial: initial, encode: encode,
            decode: { value in if case .string(let option) = value { cases.first { $0.id == option }?.value } else { nil } }
        )
    }

    /// The JSON encoding of `value` if it is a string (a `String` raw value, or a custom encoding), else its name.
    static func optionID<Value: Encodable>(_ value: Value) -> String {
        if let data = try? JSONEncoder().encode(value), let text = try? JSONDecoder().decode(String.self, from: data) {
            return text
        }
        return String(describing: value)
    }

    public func text(
        _ id: String, _ label: String, default initial: String, maxLength: Int? = nil, section: String? = nil, remember: Bool = false
    ) -> DrawerSetting<String> {
        add(
            DrawerItem(id: id, label: label, kind: .text, value: .string(initial), maxLength: maxLength, remember: remember, section: section),
            initial: initial, encode: { .string($0) }, decode: { if case .string(let text) = $0 { text } else { nil } }
        )
    }

    public func number(
        _ id: String, _ label: String, default initial: Double, range: ClosedRange<Double>? = nil, step: Double? = nil,
        section: String? = nil, remember: Bool = false
    ) -> DrawerSetting<Double> {
        add(
            DrawerItem(
                id: id, label: label, kind: .number, value: .number(initial), min: range?.lowerBound, max: range?.upperBound, step: step,
                remember: remember, section: section),
            initial: initial, encode: { .number($0) }, decode: { if case .number(let number) = $0 { number } else { nil } }
        )
    }

    /// A button: `perform` runs when a person invokes it; what it returns is shown to them, what it throws too.
    /// `destructive`: it cannot be undone (it deletes, resets, sends), and the web debugger asks before it runs.
    public func action(
        _ id: String, _ label: String, section: String? = nil, destructive: Bool = false,
        perform: @escaping @Sendable () async throws -> String?
    ) {
        state.withLock { state in
            state.items.removeAll { $0.id == id }
            // Absent unless set: an action declared before the flag existed reads the same on the wire.
            state.items.append(DrawerItem(id: id, label: label, kind: .action, section: section, destructive: destructive ? true : nil))
            state.actions[id] = perform
            Self.declare(state)
        }
    }

    /// Read-only text (a version, a build, a commit).
    public func info(_ id: String, _ label: String, value: String, section: String? = nil) {
        state.withLock { state in
            state.items.removeAll { $0.id == id }
            state.items.append(DrawerItem(id: id, label: label, kind: .info, value: .string(value), section: section))
            Self.declare(state)
        }
    }

    /// The items as declared now, with their current values.
    public var items: [DrawerItem] { state.withLock { $0.items } }

    private func add<Value: Sendable>(
        _ item: DrawerItem, initial: Value, encode: @escaping @Sendable (Value) -> DrawerValue,
        decode: @escaping @Sendable (DrawerValue) -> Value?
    ) -> DrawerSetting<Value> {
        let setting = DrawerSetting(id: item.id, initial: initial, encode: encode) { [weak self] id, value in
            self?.changedByApp(id, value)
        }
        state.withLock { state in
            state.items.removeAll { $0.id == item.id }
            state.items.append(item)
            state.apply[item.id] = { value in
                if let decoded = decode(value) { setting.apply(decoded) }
            }
            Self.declare(state)
        }
        return setting
    }

    // MARK: - From outside

    private func applyFromOutside(_ id: String, _ value: DrawerValue) throws -> DrawerMessage.Result {
        let (checked, apply) = try state.withLock { state throws(DrawerError) -> (DrawerValue, (@Sendable (DrawerValue) -> Void)?) in
            let checked = try DrawerDeclaration(items: state.items).validateSet(id, value)
            if let index = state.items.firstIndex(where: { $0.id == id }) { state.items[index].value = checked }
            return (checked, state.apply[id])
        }
        apply?(checked)
        logger.debug("drawer value set from outside", metadata: ["item": "\(id)"])
        return DrawerMessage.Result(value: checked)
    }

    private func invoke(_ id: String) async throws -> DrawerMessage.Result {
        let perform = try state.withLock { state throws(DrawerError) -> @Sendable () async throws -> String? in
            try DrawerDeclaration(items: state.items).validateInvoke(id)
            guard let perform = state.actions[id] else { throw DrawerError.unknownItem(id, known: state.items.map(\.id)) }
            return perform
        }
        return DrawerMessage.Result(message: try await perform())
    }

    // MARK: - Hosts

    /// A connected peer that hosts drawers (parleyd), once greeted, with the outbox that sends it, in order, what
    /// the app declares and changes.
    struct Host: Sendable {
        var peer: Peer
        var outbox: DrawerOutbox<Outgoing>
    }

    enum Outgoing: Sendable {
        case declare(DrawerMessage.Declare)
        case changed(DrawerMessage.Changed)
    }

    private func handle(_ event: PeerEvent) async {
        switch event {
        case .connected(let peer):
            guard peer.accepts.contains(DrawerMessage.Declare.messageType) else { return }
            await greet(peer)
        case .disconnected(let peer, _):
            let gone = state.withLock { state -> Host? in
                guard state.hosts[peer.id]?.peer.connectionID == peer.connectionID else { return nil }
                return state.hosts.removeValue(forKey: peer.id)
            }
            gone?.outbox.cancel()
        }
    }

    /// Takes the values the host remembered for this app (items marked `remember`), then declares the drawer. The
    /// host gets its outbox only now, with the declaration as its first message, taken in the same critical
    /// section: changes made before are in that declaration, changes made after are queued behind it.
    private func greet(_ host: Peer) async {
        var remembered: [String: DrawerValue] = [:]
        do {
            remembered = try await transceiver.request(DrawerMessage.Remembered(), from: host, expecting: DrawerMessage.Values.self).values
        } catch {
            logger.debug("no remembered drawer values", metadata: ["peer-id": "\(host.id)", "reason": "\(error)"])
        }
        let outbox = Self.outbox(to: host, transceiver: transceiver, logger: logger)
        let (applied, replaced) = state.withLock { state -> ([(@Sendable (DrawerValue) -> Void, DrawerValue)], Host?) in
            var applied: [(@Sendable (DrawerValue) -> Void, DrawerValue)] = []
            for (id, value) in remembered.sorted(by: { $0.key < $1.key }) {
                guard let index = state.items.firstIndex(where: { $0.id == id }), state.items[index].remember == true else { continue }
                do {
                    let checked = try DrawerDeclaration(items: state.items).validateSet(id, value)
                    state.items[index].value = checked
                    if let apply = state.apply[id] { applied.append((apply, checked)) }
                } catch {
                    logger.warning("remembered drawer value no longer fits; ignored", metadata: ["item": "\(id)", "reason": "\(error)"])
                }
            }
            outbox.enqueue(.declare(DrawerMessage.Declare(items: state.items)))
            // An earlier connection of the same peer whose end has not been reported yet: its queue is stale.
            let replaced = state.hosts.updateValue(Host(peer: host, outbox: outbox), forKey: host.id)
            return (applied, replaced)
        }
        replaced?.outbox.cancel()
        for (apply, value) in applied { apply(value) }
    }

    /// Sends to `host`, on its connection, each message in turn. Captures neither the drawer nor its state.
    private static func outbox(to host: Peer, transceiver: Transceiver, logger: Logger) -> DrawerOutbox<Outgoing> {
        DrawerOutbox { message in
            do {
                switch message {
                case .declare(let declare):
                    // parleyd refuses a drawer that breaks the rules of docs/drawer.md and says why in its own log;
                    // the app's author reads this one.
                    if let problem = Self.problem(with: declare) {
                        logger.warning("this drawer breaks the rules of docs/drawer.md; parleyd will list no drawer for this app", metadata: ["reason": "\(problem)"])
                    }
                    try await transceiver.send(declare, to: host)
                case .changed(let changed):
                    try await transceiver.send(changed, to: host)
                }
            } catch {
                logger.debug("drawer message not sent", metadata: ["peer-id": "\(host.id)", "reason": "\(error)"])
            }
        }
    }

    private static func problem(with declare: DrawerMessage.Declare) -> String? {
        do {
            _ = try DrawerDeclaration(items: declare.items)
            try DrawerDeclaration.checkDeclareSize(JSONEncoder().encode(declare).count)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Queues the drawer as it is now to every host; called in the critical section that changed it.
    private static func declare(_ state: State) {
        guard !state.hosts.isEmpty else { return }
        let declare = DrawerMessage.Declare(items: state.items)
        for host in state.hosts.values { host.outbox.enqueue(.declare(declare)) }
    }

    private func changedByApp(_ id: String, _ value: DrawerValue) {
        state.withLock { state in
            guard let index = state.items.firstIndex(where: { $0.id == id }) else { return }
            state.items[index].value = value
            for host in state.hosts.values { host.outbox.enqueue(.changed(DrawerMessage.Changed(item: id, value: value))) }
        }
    }
}

/// One setting of a drawer: its current value, and every change as an `AsyncSequence`.
public final class DrawerSetting<Value: Sendable>: Sendable {
    public let id: String
    private let current: Mutex<(value: Value, observers: [Int: AsyncStream<Value>.Continuation], next: Int)>
    private let encode: @Sendable (Value) -> DrawerValue
    private let report: @Sendable (String, DrawerValue) -> Void

    init(id: String, initial: Value, encode: @escaping @Sendable (Value) -> DrawerValue, report: @escaping @Sendable (String, DrawerValue) -> Void) {
        self.id = id
        self.current = Mutex((initial, [:], 0))
        self.encode = encode
        self.report = report
    }

    public var value: Value { current.withLock { $0.value } }

    /// The current value, then each new one, whoever set it.
    public var values: AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(16))
        let key = current.withLock { state in
            continuation.yield(state.value)
            defer { state.next += 1 }
            state.observers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in _ = self?.current.withLock { $0.observers.removeValue(forKey: key) } }
        return stream
    }

    /// The app changes the value itself; parleyd and the open web pages are told.
    public func set(_ value: Value) {
        // In one critical section: of two threads setting at once, the one whose value stays is the one reported
        // last. (The report only queues a message; it never calls back into the setting.)
        store(value, reporting: true)
    }

    /// A value set from outside, already checked: the app sees it; parleyd, which sent it, is not told again.
    func apply(_ value: Value) { store(value, reporting: false) }

    private func store(_ value: Value, reporting: Bool) {
        current.withLock { state in
            state.value = value
            for observer in state.observers.values { observer.yield(value) }
            if reporting { report(id, encode(value)) }
        }
    }
}
