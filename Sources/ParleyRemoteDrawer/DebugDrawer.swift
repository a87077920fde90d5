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
/// drawer.action("list.reset", "Reset the list") { await store.clear(); return "list cleared" }
/// drawer.info("build", "Build", value: "1.4 (abc123)")
/// for await on in slow.values { network.delay = on ? .seconds(2) : .zero }
/// ```
///
/// The drawer is declared to every connected peer that hosts drawers (parleyd), again whenever an item is added,
/// and each value the app changes itself (`setting.set(_:)`) is reported. A value set from outside is checked
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
        /// Connected peers that host drawers.
        var hosts: [PeerID: Peer] = [:]
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

    deinit { state.withLock { $0.watcher?.cancel() } }

    // MARK: - Items

    public func toggle(_ id: String, _ label: String, default initial: Bool, section: String? = nil, remember: Bool = false) -> DrawerSetting<Bool> {
        add(
            DrawerItem(id: id, label: label, kind: .toggle, value: .bool(initial), remember: remember, section: section),
            initial: initial, encode: { .bool($0) }, decode: { if case .bool(let on) = $0 { on } else { nil } }
        )
    }

    /// One of the cases of `Value`; the options are its cases, named on the wire by their raw values.
    public func choice<Value: CaseIterable & Codable & RawRepresentable & Sendable>(
        _ id: String, _ label: String, default initial: Value, section: String? = nil, remember: Bool = false,
        optionLabel: @escaping @Sendable (Value) -> String = { "\($0)" }
    ) -> DrawerSetting<Value> where Value.RawValue == String {
        let options = Value.allCases.map { DrawerItem.Option(id: $0.rawValue, label: optionLabel($0)) }
        return add(
            DrawerItem(id: id, label: label, kind: .choice, value: .string(initial.rawValue), options: options, remember: remember, section: section),
            initial: initial, encode: { .string($0.rawValue) }, decode: { if case .string(let raw) = $0 { Value(rawValue: raw) } else { nil } }
        )
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
    public func action(_ id: String, _ label: String, section: String? = nil, perform: @escaping @Sendable () async throws -> String?) {
        state.withLock { state in
            state.items.removeAll { $0.id == id }
            state.items.append(DrawerItem(id: id, label: label, kind: .action, section: section))
            state.actions[id] = perform
        }
        declareToHosts()
    }

    /// Read-only text (a version, a build, a commit).
    public func info(_ id: String, _ label: String, value: String, section: String? = nil) {
        state.withLock { state in
            state.items.removeAll { $0.id == id }
            state.items.append(DrawerItem(id: id, label: label, kind: .info, value: .string(value), section: section))
        }
        declareToHosts()
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
        }
        declareToHosts()
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

    private func handle(_ event: PeerEvent) async {
        switch event {
        case .connected(let peer):
            guard peer.accepts.contains(DrawerMessage.Declare.messageType) else { return }
            state.withLock { $0.hosts[peer.id] = peer }
            await greet(peer)
        case .disconnected(let peer, _):
            _ = state.withLock { $0.hosts.removeValue(forKey: peer.id) }
        }
    }

    /// Takes the values the host remembered for this app (items marked `remember`), then declares the drawer.
    private func greet(_ host: Peer) async {
        do {
            let remembered = try await transceiver.request(DrawerMessage.Remembered(), from: host, expecting: DrawerMessage.Values.self)
            for (id, value) in remembered.values.sorted(by: { $0.key < $1.key }) {
                guard state.withLock({ state in state.items.first { $0.id == id }?.remember == true }) else { continue }
                do {
                    _ = try applyFromOutside(id, value)
                } catch {
                    logger.warning("remembered drawer value no longer fits; ignored", metadata: ["item": "\(id)", "reason": "\(error)"])
                }
            }
        } catch {
            logger.debug("no remembered drawer values", metadata: ["peer-id": "\(host.id)", "reason": "\(error)"])
        }
        await declare(to: host)
    }

    private func declare(to host: Peer) async {
        let items = state.withLock { $0.items }
        do {
            try await transceiver.send(DrawerMessage.Declare(items: items), to: host)
        } catch {
            logger.debug("drawer not declared", metadata: ["peer-id": "\(host.id)", "reason": "\(error)"])
        }
    }

    private func declareToHosts() {
        let hosts = state.withLock { Array($0.hosts.values) }
        guard !hosts.isEmpty else { return }
        Task { for host in hosts { await self.declare(to: host) } }
    }

    private func changedByApp(_ id: String, _ value: DrawerValue) {
        let hosts = state.withLock { state -> [Peer] in
            if let index = state.items.firstIndex(where: { $0.id == id }) { state.items[index].value = value }
            return Array(state.hosts.values)
        }
        guard !hosts.isEmpty else { return }
        let transceiver = self.transceiver
        Task {
            for host in hosts { try? await transceiver.send(DrawerMessage.Changed(item: id, value: value), to: host) }
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
        apply(value)
        report(id, encode(value))
    }

    func apply(_ value: Value) {
        let observers = current.withLock { state in
            state.value = value
            return Array(state.observers.values)
        }
        for observer in observers { observer.yield(value) }
    }
}
