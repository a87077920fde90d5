import Foundation
import ParleyBlocking

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The peer id a transceiver runs with, and for a persisted one the lock that keeps another running copy of the
/// same app from taking it too: two copies with one id would keep closing each other's connections as duplicates.
struct ResolvedIdentity: Sendable {
    let id: PeerID
    /// The file the id came from; nil for an ephemeral or fixed id.
    let path: String?
    /// Held while the transceiver runs (an advisory `flock`, released by ``release()`` or when the process ends).
    private let lockDescriptor: Int32?

    /// Most copies of one app on one host that each get an id of their own.
    static let maximumCopies = 64

    init(_ identity: TransceiverConfiguration.Identity) throws {
        switch identity {
        case .fixed(let id): (self.id, path, lockDescriptor) = (id, nil, nil)
        case .ephemeral: (id, path, lockDescriptor) = (PeerID(), nil, nil)
        case .persisted(let first):
            for copy in 1...Self.maximumCopies {
                let path = copy == 1 ? first : "\(first).\(copy)"
                guard let descriptor = try Self.lock(path) else { continue }
                do {
                    (self.id, self.path, lockDescriptor) = (try Self.readOrCreate(path), path, descriptor)
                    return
                } catch {
                    close(descriptor)
                    throw error
                }
            }
            throw IdentityError.allInUse(path: first, copies: Self.maximumCopies)
        }
    }

    /// ``init(_:)`` on `BlockingPool.shared`: taking the lock and reading or writing the id file wait for the disk.
    static func resolve(_ identity: TransceiverConfiguration.Identity) async throws -> ResolvedIdentity {
        try await BlockingPool.shared.run { try ResolvedIdentity(identity) }
    }

    func release() {
        if let lockDescriptor { close(lockDescriptor) }
    }

    /// Takes `<path>.lock`; nil when another running transceiver holds it. (A lock file of its own: the id file is
    /// replaced atomically when created, which would leave a lock on the old file.)
    private static func lock(_ path: String) throws -> Int32? {
        let lockPath = path + ".lock"
        do {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch {
            throw IdentityError.cannotCreate(path: path, reason: error.localizedDescription)
        }
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw IdentityError.cannotCreate(path: lockPath, reason: String(cString: strerror(errno)))
        }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return descriptor }
        let failure = errno
        close(descriptor)
        guard failure == EWOULDBLOCK else {
            throw IdentityError.cannotCreate(path: lockPath, reason: String(cString: strerror(failure)))
        }
        return nil
    }

    private static func readOrCreate(_ path: String) throws -> PeerID {
        let url = URL(fileURLWithPath: path)
        if let text = try? String(contentsOf: url, encoding: .utf8) {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let id = PeerID(rawValue: trimmed) else {
                throw IdentityError.notAPeerID(path: path, contents: String(trimmed.prefix(60)))
            }
            return id
        }
        let id = PeerID()
        do {
            try Data((id.rawValue + "\n").utf8).write(to: url, options: .atomic)
        } catch {
            throw IdentityError.cannotCreate(path: path, reason: error.localizedDescription)
        }
        return id
    }
}
