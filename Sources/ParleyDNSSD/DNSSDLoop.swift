import Dispatch
import Foundation
import Logging
import ParleyDiscovery
internal import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The thread that owns every `DNSServiceRef`: it waits (`poll`) on their sockets and on a pipe that wakes it for
/// commands, calls `DNSServiceProcessResult` for each readable socket, and runs the session. One thread for all of
/// them, because Avahi's compatibility library is not thread-safe and gives each reference a connection (and a
/// thread) of its own; a thread of its own, not a pool's, because it waits for as long as discovery runs.
final class DNSSDLoop: Sendable {
    private enum Message: Sendable {
        case command(DNSSDSession.Command)
        case stop
    }

    private let inbox: Mutex<[Message]>
    private let wakeReader: Int32
    private let wakeWriter: Int32
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread, which first carries out `wishes`.
    static func start(
        _ wishes: DiscoveryWishes, logger: Logger, emit: @escaping @Sendable (DiscoveryEvent) -> Void
    ) throws(DNSSDStartError) -> DNSSDLoop {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw DNSSDStartError(call: "pipe", errorNumber: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        var initial: [Message] = wishes.browsed.map { .command(.browse($0)) }
        if let advertisement = wishes.advertisement {
            initial.append(.command(.advertise(advertisement, subtypes: wishes.subtypes)))
        }
        let loop = DNSSDLoop(initial, wakeReader: ends[0], wakeWriter: ends[1])
        let thread = Thread { loop.run(logger: logger, emit: emit) }
        thread.name = "parley.dnssd"
        thread.start()
        return loop
    }

    private init(_ initial: [Message], wakeReader: Int32, wakeWriter: Int32) {
        inbox = Mutex(initial)
        self.wakeReader = wakeReader
        self.wakeWriter = wakeWriter
    }

    func send(_ command: DNSSDSession.Command) {
        inbox.withLock { $0.append(.command(command)) }
        wake()
    }

    /// Ends every operation and the thread, and returns once it has ended.
    func stop() {
        inbox.withLock { $0.append(.stop) }
        wake()
        finished.wait()
        close(wakeReader)
        close(wakeWriter)
    }

    private func wake() {
        var byte: UInt8 = 1
        // A full pipe already holds a wake-up: nothing is lost when this write fails.
        _ = write(wakeWriter, &byte, 1)
    }

    private func run(logger: Logger, emit: @escaping @Sendable (DiscoveryEvent) -> Void) {
        defer { finished.signal() }
        let library = DNSSDLibrary()
        let session = DNSSDSession(driver: library, logger: logger, emit: emit)
        defer { library.cancelAll() }
        while true {
            for message in inbox.withLock({ messages in defer { messages = [] }; return messages }) {
                switch message {
                case .command(let command): session.apply(command)
                case .stop:
                    session.shutdown()
                    return
                }
            }
            let watched = library.descriptors
            var polled = [pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
            polled += watched.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            let timeout = library.retryDeadline.map { Self.milliseconds(until: $0) } ?? -1
            let ready = poll(&polled, nfds_t(polled.count), timeout)
            if ready < 0 {
                guard errno == EINTR else {
                    logger.error("waiting on the DNS-SD daemon's sockets failed; discovery stops", metadata: ["errno": "\(errno)"])
                    session.shutdown()
                    return
                }
                continue
            }
            if polled[0].revents != 0 { drainWakeUps() }
            for (index, entry) in watched.enumerated() where polled[index + 1].revents != 0 {
                // An operation ended by an earlier reply of this turn is skipped: `process` knows it no more, and a
                // new operation that got its descriptor number has another id.
                if polled[index + 1].revents & Int16(POLLNVAL) != 0 {
                    session.handle(.failed(.defunctConnection), from: entry.operation)
                    continue
                }
                for reply in library.process(entry.operation) { session.handle(reply, from: entry.operation) }
            }
            if let deadline = library.retryDeadline, deadline <= .now {
                library.retryDeadline = nil
                session.retryDue()
            }
        }
    }

    private func drainWakeUps() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeReader, &buffer, buffer.count) > 0 {}
    }

    /// `poll`'s timeout for `deadline`: at least 0, rounded up so that the loop does not wake just before it.
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
    }
}
