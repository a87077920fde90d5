import Foundation
import Logging
import Parley
import ParleyControl
import ParleyDrawer
import Synchronization

/// parleyd's side of the debug drawer (docs/drawer.md): keeps the drawer each connected app declares, checks a
/// value set from outside against it before the app sees it, forwards sets and invocations to the app, remembers
/// values for apps that ask, and tells the web debugger's open pages of every change.
final class DrawerService: Sendable {
    /// How long an app has to answer a set or an invocation.
    static let appTimeout = Duration.seconds(10)

    private let transceiver: Transceiver
    private let events: DaemonEvents
    private let remembered: RememberedDrawerValues
    private let logger: Logger
    /// The drawers of connected apps, with the connection that declared them.
    private let drawers = Mutex<[PeerID: Declared]>([:])

    private struct Declared {
        var peer: Peer
        var declaration: DrawerDeclaration
    }

    init(transceiver: Transceiver, dataDirectory: String, events: DaemonEvents, logger: Logger) {
        self.transceiver = transceiver
        self.events = events
        self.remembered = RememberedDrawerValues(file: dataDirectory + "/" + RememberedDrawerValues.fileName, logger: logger)
        self.logger = logger
    }

    /// Reads the values remembered by an earlier run. Call before the transceiver starts.
    func loadRemembered() async {
        await remembered.load()
    }

    /// Registers the app messages and the control requests. Call before the transceiver starts.
    func install() {
        // Raw, to measure the payload before decoding it: a Declare is at most 256 KiB (docs/drawer.md).
        transceiver.receiveRaw(typeName: DrawerMessage.Declare.messageType) { [self] message, peer in
            // Local clients (parleyctl) have no drawer; only apps on the network.
            guard !peer.isLocal else { return }
            let declaration: DrawerDeclaration
            do {
                try DrawerDeclaration.checkDeclareSize(message.payload.readableBytes)
                declaration = try DrawerDeclaration(items: message.decode(DrawerMessage.Declare.self).items)
            } catch {
                // A declaration replaces the previous one, also when it is refused: no stale drawer stays listed.
                // Thrown on, the reason is the error reply's text if the app sent the Declare as a request.
                peerDisconnected(peer)
                transceiver.logThrottle.warning("drawer declaration refused; the app has no drawer until a valid one comes", metadata: ["peer-id": "\(peer.id)", "reason": "\(error)"], to: logger)
                throw error
            }
            drawers.withLock { $0[peer.id] = Declared(peer: peer, declaration: declaration) }
            logger.info("drawer declared", metadata: ["peer-id": "\(peer.id)", "peer-name": "\(peer.name.escapedForPeople(maximumBytes: 128))", "items": "\(declaration.items.count)"])
            publish(peer.id)
        }
        // Raw too: a Changed is at most 256 KiB, like a Declare.
        transceiver.receiveRaw(typeName: DrawerMessage.Changed.messageType) { [self] message, peer in
            let changed: DrawerMessage.Changed
            do {
                try DrawerDeclaration.checkChangedSize(message.payload.readableBytes)
                changed = try message.decode(DrawerMessage.Changed.self)
            } catch let error as DrawerError {
                // Only the size: a payload that is not a Changed is the router's to report (rate-limited).
                transceiver.logThrottle.warning("drawer change refused", metadata: ["peer-id": "\(peer.id)", "reason": "\(error)"], to: logger)
                throw error
            }
            // The app is the authority on its own values: one outside its declared rules is recorded all the same
            // (parleyd and the app must not disagree), and logged.
            let problem = drawers.withLock { drawers -> String? in
                guard var declared = drawers[peer.id], declared.peer.connectionID == peer.connectionID else { return nil }
                guard declared.declaration[changed.item]?.isSettable == true else { return "no settable item \"\(changed.item)\"" }
                var problem: String?
                do { _ = try declared.declaration.validateSet(changed.item, changed.value) } catch { problem = "\(error)" }
                declared.declaration.update(changed.item, to: changed.value)
                drawers[peer.id] = declared
                return problem
            }
            if let problem {
                transceiver.logThrottle.warning("drawer value changed by the app outside its own rules", metadata: ["peer-id": "\(peer.id)", "reason": "\(problem)"], to: logger)
            }
            publish(peer.id)
        }
        transceiver.respond(to: DrawerMessage.Remembered.self) { [self] _, peer in
            DrawerMessage.Values(values: remembered.values(for: peer.name))
        }
        transceiver.respond(to: DrawerControl.Drawers.self, localOnly: true) { [self] request, _ in
            try await ControlRefusal.coding { try page(app: request.app, after: request.after) }
        }
        transceiver.respond(to: DrawerControl.SetValue.self, localOnly: true) { [self] request, _ in
            try await ControlRefusal.coding { try await set(app: request.app, item: request.item, value: request.value) }
        }
        transceiver.respond(to: DrawerControl.InvokeAction.self, localOnly: true) { [self] request, _ in
            try await ControlRefusal.coding { try await invoke(app: request.app, item: request.item) }
        }
    }

    /// The app's drawer goes with its connection.
    func peerDisconnected(_ peer: Peer) {
        let removed = drawers.withLock { drawers -> Bool in
            guard drawers[peer.id]?.peer.connectionID == peer.connectionID else { return false }
            drawers[peer.id] = nil
            return true
        }
        if removed {
            events.publish(.drawer(AppDrawer(peer: .init(id: peer.id.rawValue, name: peer.name), items: [])))
        }
    }

    /// Every connected app's drawer by name, or those `app` selects (name, id or id prefix).
    func list(app: String? = nil) throws(DrawerServiceError) -> [AppDrawer] {
        let all = drawers.withLock { Array($0.values) }.sorted { ($0.peer.name, $0.peer.id.rawValue) < ($1.peer.name, $1.peer.id.rawValue) }
        let chosen = try app.map { selector throws(DrawerServiceError) in [try select(selector, among: all)] } ?? all
        return chosen.map { AppDrawer(peer: .init(id: $0.peer.id.rawValue, name: $0.peer.name), items: $0.declaration.items) }
    }

    /// Bytes of drawers in one page of the control socket's list: a quarter of the frame limit leaves room for JSON
    /// escaping (a drawer is at most 256 KiB as the app declared it).
    var pageBytes: Int { transceiver.configuration.maximumFrameSize / 4 }

    /// One page of ``list(app:)``: the drawers after `after`, as many as fit in ``pageBytes`` (at least one).
    func page(app: String?, after: DrawerControl.Position?) throws(DrawerServiceError) -> DrawerControl.List {
        let rest = try list(app: app).filter { drawer in
            after.map { DrawerControl.Position(name: drawer.peer.name, id: drawer.peer.id) > $0 } ?? true
        }
        var page: [AppDrawer] = []
        var bytes = 0
        let encoder = JSONEncoder()
        for drawer in rest {
            let size = (try? encoder.encode(drawer).count) ?? 0
            if !page.isEmpty, bytes + size > pageBytes {
                let last = page[page.count - 1].peer
                return DrawerControl.List(drawers: page, next: DrawerControl.Position(name: last.name, id: last.id))
            }
            page.append(drawer)
            bytes += size
        }
        return DrawerControl.List(drawers: page)
    }

    /// Checks `value` against the app's drawer, then asks the app; the app's answer is the value in effect.
    func set(app: String, item: String, value: DrawerValue) async throws -> DrawerMessage.Result {
        let target = try select(app, among: drawers.withLock { Array($0.values) })
        let checked = try target.declaration.validateSet(item, value)
        let answer = try await ask(DrawerMessage.Set(item: item, value: checked), of: target.peer, what: "set \(item)")
        // The app's answer is the value in effect, even outside its declared rules (logged): parleyd must show what
        // the app does.
        let now = answer.value ?? checked
        if (try? target.declaration.validateSet(item, now)) == nil {
            transceiver.logThrottle.warning("the app confirmed a drawer value outside its own rules", metadata: ["peer-id": "\(target.peer.id)", "item": "\(item.escapedForPeople(maximumBytes: 128))", "value": "\(now)"], to: logger)
        }
        drawers.withLock { drawers in
            guard drawers[target.peer.id]?.peer.connectionID == target.peer.connectionID else { return }
            drawers[target.peer.id]?.declaration.update(item, to: now)
        }
        if target.declaration[item]?.remember == true { await remembered.store(now, app: target.peer.name, item: item) }
        logger.info("drawer value set", metadata: ["peer-id": "\(target.peer.id)", "item": "\(item.escapedForPeople(maximumBytes: 128))"])
        publish(target.peer.id)
        return DrawerMessage.Result(value: now, message: answer.message)
    }

    func invoke(app: String, item: String) async throws -> DrawerMessage.Result {
        let target = try select(app, among: drawers.withLock { Array($0.values) })
        try target.declaration.validateInvoke(item)
        let answer = try await ask(DrawerMessage.Invoke(item: item), of: target.peer, what: "invoke \(item)")
        logger.info("drawer action invoked", metadata: ["peer-id": "\(target.peer.id)", "item": "\(item.escapedForPeople(maximumBytes: 128))"])
        return DrawerMessage.Result(message: answer.message)
    }

    private func ask<Request: Encodable & Sendable>(_ request: Request, of peer: Peer, what: String) async throws -> DrawerMessage.Result {
        do {
            return try await transceiver.request(request, from: peer, expecting: DrawerMessage.Result.self, timeout: Self.appTimeout)
        } catch TransceiverError.remoteError(_, let message) {
            throw DrawerServiceError.appRefused(app: peer.name, message)
        } catch TransceiverError.replyTimedOut {
            throw DrawerServiceError.appSilent(app: peer.name, what: what, timeout: Self.appTimeout)
        }
    }

    private func select(_ selector: String, among declared: [Declared]) throws(DrawerServiceError) -> Declared {
        let found = PeerSelector.select(selector, among: declared, id: \.peer.id.rawValue, name: \.peer.name)
        guard let first = found.first else { throw .noSuchApp(selector, connected: declared.map(\.peer.name).sorted()) }
        guard found.count == 1 else {
            throw .ambiguous(selector, matches: found.map(\.peer.label).sorted())
        }
        return first
    }

    private func publish(_ peer: PeerID) {
        guard let declared = drawers.withLock({ $0[peer] }) else { return }
        events.publish(.drawer(AppDrawer(peer: .init(id: peer.rawValue, name: declared.peer.name), items: declared.declaration.items)))
    }
}

/// Why parleyd cannot do what was asked of a drawer; the text is what parleyctl and the web show.
enum DrawerServiceError: Error, CustomStringConvertible {
    case noSuchApp(String, connected: [String])
    case ambiguous(String, matches: [String])
    case appRefused(app: String, String)
    case appSilent(app: String, what: String, timeout: Duration)

    var description: String {
        switch self {
        case .noSuchApp(let selector, let connected):
            "no connected app with a drawer matches \"\(selector)\"" + (connected.isEmpty ? " (none is connected)" : "; apps with a drawer: \(connected.joined(separator: ", "))")
        case .ambiguous(let selector, let matches):
            "\"\(selector)\" matches \(matches.count) apps (\(matches.joined(separator: ", "))); give the id or a longer id prefix"
        case .appRefused(let app, let message):
            "\(app) refused: \(message)"
        case .appSilent(let app, let what, let timeout):
            "\(app) did not answer (\(what)) within \(timeout.components.seconds) s"
        }
    }
}

/// The last value set from outside, per app name and item, for items declared with `remember` (docs/drawer.md):
/// a small JSON file in the data directory, rewritten whole (atomically) on each change, on the blocking pool: a
/// `set` is handled on its connection's event loop.
final class RememberedDrawerValues: Sendable {
    static let fileName = "drawer-values.json"
    private let file: String
    private let logger: Logger
    private let values: Mutex<(values: [String: [String: DrawerValue]], version: UInt64)>
    /// The version of `values` the file holds: two writes may run at once, and an older one must not come last.
    private let written = Mutex<UInt64>(0)

    /// Starts with no values: ``load()`` reads the file's.
    init(file: String, logger: Logger) {
        self.file = file
        self.logger = logger
        values = Mutex(([:], 0))
    }

    /// Reads the values the file holds (on the blocking pool); an unreadable file is logged, and ignored.
    func load() async {
        let file = self.file
        do {
            let data = try await BlockingPool.shared.run { FileManager.default.contents(atPath: file) }
            guard let data else { return }
            let loaded = try JSONDecoder().decode([String: [String: DrawerValue]].self, from: data)
            values.withLock { $0.values = loaded }
        } catch {
            logger.warning("remembered drawer values unreadable; starting without them", metadata: ["file": "\(file)", "reason": "\(error)"])
        }
    }

    func values(for app: String) -> [String: DrawerValue] { values.withLock { $0.values[app] ?? [:] } }

    /// Remembers `value` and returns once the file holds it (or a later change).
    func store(_ value: DrawerValue, app: String, item: String) async {
        let (snapshot, version) = values.withLock { state in
            state.values[app, default: [:]][item] = value
            state.version += 1
            return (state.values, state.version)
        }
        do {
            try await BlockingPool.shared.run { [self] in
                try written.withLock { writtenVersion in
                    guard version > writtenVersion else { return }
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    try encoder.encode(snapshot).write(to: URL(fileURLWithPath: file), options: .atomic)
                    writtenVersion = version
                }
            }
        } catch {
            logger.warning("cannot save the remembered drawer values", metadata: ["file": "\(file)", "reason": "\(error)"])
        }
    }
}
