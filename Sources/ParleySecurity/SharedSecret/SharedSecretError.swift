/// Why a shared secret cannot be read, used or written. Each description names the file and says what to do;
/// none contains any part of a secret.
public enum SharedSecretError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The secret file does not exist.
    case missing(path: String)
    /// The secret file exists but could not be opened or read.
    case unreadable(path: String, reason: String)
    /// The path names a directory, a device or a socket, not a regular file.
    case notAFile(path: String)
    /// The file belongs to another user than the one this process runs as.
    case wrongOwner(path: String, owner: UInt32, user: UInt32)
    /// The file's group or others have permissions on it (the mode is given).
    case accessibleToOthers(path: String, mode: UInt32)
    /// The file does not hold a secret in a known form.
    case malformed(path: String, reason: String)
    /// The file holds 32 bytes, but in a pattern (``SharedSecret/pattern(in:)``), not random ones.
    case pattern(path: String, reason: String)
    /// A secret was made from a number of bytes other than 32.
    case wrongLength(Int)
    /// Writing a new secret would have replaced an existing file.
    case alreadyExists(path: String)
    /// The new secret file could not be written.
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .missing(let path):
            "shared secret file \(path) does not exist"
        case .unreadable(let path, let reason):
            "cannot read shared secret file \(path): \(reason)"
        case .notAFile(let path):
            "shared secret file \(path) is not a regular file"
        case .wrongOwner(let path, let owner, let user):
            "shared secret file \(path) belongs to uid \(owner), not to uid \(user) that this process runs as; "
                + "make that user its owner (`chown`) and the only one with access (`chmod 600 \(path)`)"
        case .accessibleToOthers(let path, let mode):
            "shared secret file \(path) has mode \(Self.octal(mode)): its group or others may access it; "
                + "run `chmod 600 \(path)` (and consider a new secret if others may have read it)"
        case .malformed(let path, let reason):
            "shared secret file \(path) does not hold a secret: \(reason); expected one line of 64 hex digits (32 bytes)"
        case .pattern(let path, let reason):
            "shared secret file \(path) does not hold 32 random bytes: \(reason), where random bytes take about 30 "
                + "(at least \(SharedSecret.minimumDistinctValues) are required); a key anyone could guess protects nothing"
        case .wrongLength(let count):
            "a shared secret is \(SharedSecret.byteCount) bytes, not \(count)"
        case .alreadyExists(let path):
            "\(path) already exists and was not replaced"
        case .cannotWrite(let path, let reason):
            "cannot write shared secret file \(path): \(reason)"
        }
    }

    init(_ failure: ProtectedFile.Failure, path: String) {
        self =
            switch failure {
            case .missing: .missing(path: path)
            case .unreadable(let reason): .unreadable(path: path, reason: reason)
            case .notAFile: .notAFile(path: path)
            case .wrongOwner(let owner, let user): .wrongOwner(path: path, owner: owner, user: user)
            case .accessibleToOthers(let mode): .accessibleToOthers(path: path, mode: mode)
            case .tooLong(let limit): .malformed(path: path, reason: "it is longer than \(limit) bytes")
            case .alreadyExists: .alreadyExists(path: path)
            case .cannotWrite(let reason): .cannotWrite(path: path, reason: reason)
            }
    }

    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
