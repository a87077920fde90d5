import Foundation
import Logging
import ParleyBlocking
import ParleyDiscovery
import Synchronization

/// Keeps this node's DNS-SD records registered in a unicast DNS zone: registers them when it advertises, sends
/// them again every ``DNSUpdateSettings/refreshInterval`` and at once when the interfaces change (a new address),
/// retries failures with a doubling delay (1 s up to 60 s), and removes them when it stops advertising.
///
/// The DNS work is done by `nsupdate` (Debian's bind9-dnsutils), run as a subprocess: it speaks DNS UPDATE and
/// TSIG, and its error output (the server's answer: `REFUSED`, `NOTAUTH(BADSIG)`, a timeout) is logged as is.
public final class DNSUpdateRegistrar: Sendable {
    /// How one nsupdate run ended.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var status: Int32
        /// What nsupdate wrote to standard error: the server's answer.
        public var output: String
        public var description: String {
            let text = output.split(whereSeparator: \.isNewline).joined(separator: "; ")
            return "nsupdate exited \(status): \(text.isEmpty ? "no output" : text)"
        }
    }

    private struct State {
        var advertisement: Advertisement?
        /// Keeps the records registered; returns whether it (or a loop it replaced) ever registered them.
        var loop: Task<Bool, Never>?
        /// The removal under way, if any: the next registration, and ``finished()``, wait for it.
        var removal: Task<Void, Never>?
        /// After ``stop()`` nothing is registered again (a network change may still ask to).
        var stopped = false
    }

    private let settings: DNSUpdateSettings
    private let script: DNSUpdateScript
    private let logger: Logger
    private let network: NetworkMonitor
    private let state = Mutex(State())

    public init(settings: DNSUpdateSettings, logger: Logger) {
        self.settings = settings
        self.script = DNSUpdateScript(settings: settings)
        self.logger = logger
        self.network = NetworkMonitor(logger: logger)
    }

    /// Registers `advertisement` (replacing what was registered) and keeps it registered; nothing once stopped.
    public func register(_ advertisement: Advertisement) {
        state.withLock { state in
            guard !state.stopped else { return }
            let (previous, removal) = (state.loop, state.removal)
            previous?.cancel()
            let changes = network.changes()
            state.advertisement = advertisement
            state.loop = Task { [self] in
                // One nsupdate at a time, in the order asked for: the loop this replaces ends first (it may be
                // sending an update), and so does a removal under way. Otherwise an older update could land last.
                let registeredBefore = await previous?.value ?? false
                await removal?.value
                let registered = await keepRegistered(advertisement, changes: changes)
                return registered || registeredBefore
            }
        }
    }

    /// Stops refreshing the records and removes them. Returns at once: the removal waits for the server's answer
    /// (a few seconds at most when it is silent), and whoever must not end before it awaits ``finished()``.
    public func deregister() {
        state.withLock { state in
            guard let advertisement = state.advertisement else { return }
            let (loop, earlier) = (state.loop, state.removal)
            loop?.cancel()
            state.removal = Task { [self] in
                // After the loop's last update (it may be sending one) and any earlier removal: this one lands last.
                let registered = await loop?.value ?? false
                await earlier?.value
                await remove(advertisement, registered: registered)
            }
            state.advertisement = nil
            state.loop = nil
        }
    }

    /// Whether records are being kept registered (an advertisement, refreshed by a loop): for tests.
    var isRegistering: Bool { state.withLock { $0.advertisement != nil || $0.loop != nil } }

    /// Returns once the removal ``deregister()`` began (if any) has the server's answer, or gave up.
    public func finished() async {
        await state.withLock { $0.removal }?.value
    }

    /// Stops watching the network; deregisters first if still registered (``finished()`` says when that is done).
    /// Nothing is registered after this.
    public func stop() {
        state.withLock { $0.stopped = true }
        deregister()
        network.stop()
    }

    private func remove(_ advertisement: Advertisement, registered: Bool) async {
        switch await Self.run(settings: settings, script: script.deregister(advertisement)) {
        case .success:
            logger.info("DNS-SD records removed", metadata: ["domain": "\(settings.domain)", "instance": "\(advertisement.instanceName)"])
        case .failure(let failure):
            logger.log(
                level: registered ? .warning : .debug, "cannot remove the DNS-SD records; they stay until removed by hand or re-registered",
                metadata: ["domain": "\(settings.domain)", "error": "\(failure)"])
        }
    }

    private func addresses() -> [InterfaceAddress] {
        network.current.usable(by: settings.interfaces).flatMap(\.addresses).filter { !$0.isLinkLocal }
    }

    /// Registers and refreshes until cancelled; returns whether a registration succeeded.
    private func keepRegistered(_ advertisement: Advertisement, changes: AsyncStream<NetworkSnapshot>) async -> Bool {
        var registered = false
        var retry = Duration.seconds(1)
        var registeredAddresses: [InterfaceAddress]?
        let wakeups = WakeUps(changes)
        while !Task.isCancelled {
            let addresses = addresses()
            let wait: Duration
            switch await Self.run(settings: settings, script: script.register(advertisement, addresses: addresses)) {
            case .success:
                if registeredAddresses != addresses {
                    logger.info(
                        "registered in DNS",
                        metadata: [
                            "domain": "\(settings.domain)", "instance": "\(advertisement.instanceName)",
                            "host": "\(script.hostName)", "addresses": "\(addresses.map(\.host).joined(separator: ","))",
                        ])
                }
                registeredAddresses = addresses
                registered = true
                retry = .seconds(1)
                wait = settings.refreshInterval
            case .failure(let failure):
                logger.warning(
                    "DNS registration failed; retrying", metadata: ["domain": "\(settings.domain)", "error": "\(failure)", "retry-in": "\(retry)"])
                registeredAddresses = nil
                wait = retry
                retry = min(retry * 2, .seconds(60))
            }
            // Until the refresh or the retry is due, or the addresses differ from those just sent (after a failure: a
            // link back or a new address, when the server may be reachable again).
            await wakeups.next(within: wait) { [self] in self.addresses() != addresses }
        }
        return registered
    }

    /// Runs nsupdate on a thread of its own (it blocks for up to its timeouts, a few seconds): neither the
    /// cooperative pool nor the shared blocking pool is held up.
    static func run(settings: DNSUpdateSettings, script: String) async -> Result<Void, Failure> {
        if let server = settings.server, DNSUpdateSettings.parseServer(server) == nil {
            return .failure(Failure(
                status: -1, output: "the DNS server \(server.debugDescription) is not HOST, HOST:PORT or [IPv6]:PORT; nsupdate was not run"))
        }
        do {
            return try await nsupdateRuns.run { runBlocking(settings: settings, script: script) }
        } catch {
            return .failure(Failure(status: -1, output: "cannot run \(settings.nsupdatePath): \(error)"))
        }
    }

    /// One thread for every registrar of the process: each registrar runs nsupdate one at a time already, and
    /// parleyd has one registrar.
    private static let nsupdateRuns = BlockingPool.serial()

    /// Feeds `script` to nsupdate and waits for its answer. -t 5: overall timeout; -u 1 -r 2: UDP retries bounded
    /// to about 3 s when the server is silent.
    static func runBlocking(settings: DNSUpdateSettings, script: String) -> Result<Void, Failure> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: settings.nsupdatePath)
        process.arguments = ["-k", settings.keyFile, "-t", "5", "-u", "1", "-r", "2"]
        let input = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return .failure(Failure(status: -1, output: "cannot run \(settings.nsupdatePath): \(error)"))
        }
        input.fileHandleForWriting.write(Data(script.utf8))
        try? input.fileHandleForWriting.close()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? .success(()) : .failure(Failure(status: process.terminationStatus, output: output))
    }
}

/// Waits for a deadline or for a network change that matters, whichever comes first.
///
/// One task reads the network's changes for as long as the registration loop runs, not one per wait: cancelling a
/// task that waits on an AsyncStream ends the stream, so after the first wait that ran to its deadline every later
/// wait would end at once (failed registrations were retried back to back, without a delay).
private final class WakeUps: Sendable {
    private struct Waiting {
        var sleep: Task<Void, Never>
        var matters: @Sendable () -> Bool
    }

    private let waiting = Mutex<Waiting?>(nil)
    private let reader = Mutex<Task<Void, Never>?>(nil)

    init(_ changes: AsyncStream<NetworkSnapshot>) {
        let task = Task { [weak self] in
            for await _ in changes { self?.changed() }
        }
        reader.withLock { $0 = task }
    }

    deinit { reader.withLock { $0?.cancel() } }

    private func changed() {
        guard let waiting = waiting.withLock({ $0 }), waiting.matters() else { return }
        waiting.sleep.cancel()
    }

    func next(within delay: Duration, until matters: @escaping @Sendable () -> Bool) async {
        let sleep = Task { _ = try? await Task.sleep(for: delay) }
        waiting.withLock { $0 = Waiting(sleep: sleep, matters: matters) }
        // A change while nothing waited (during the nsupdate run) woke nobody: it counts now.
        if matters() { sleep.cancel() }
        await withTaskCancellationHandler { await sleep.value } onCancel: { sleep.cancel() }
        waiting.withLock { $0 = nil }
    }
}
