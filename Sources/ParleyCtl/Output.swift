import Foundation
import ParleyJSON
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import UnixSignals

/// Writes whole lines to standard output and standard error, unbuffered (stdout is often a pipe, where `print`
/// would hold lines back) and one line at a time (handlers of several peers may print at once).
///
/// When the reader of standard output goes away (`parleyctl history | head`), there is nobody left to tell
/// anything: parleyctl stops quietly with status 0, as a tool at the head of a pipeline should. Any other failure
/// to write standard output (a full disk) is an error, exit status 1. A standard error that cannot be written is
/// ignored.
enum Output {
    private static let lock = Mutex(())

    /// Text for people: whatever a peer put in it (names, actions, payloads, error messages) may hold escape
    /// sequences that would drive the reader's terminal (colours, the title, OSC 52 writing the clipboard); each
    /// line is shown with those characters escaped (`\x1b`, `\u2028`). `--json` output does not pass here.
    static func line(_ text: String) { write(Data((forPeople(text) + "\n").utf8), to: .standardOutput) }
    static func error(_ text: String) { write(Data((forPeople(text) + "\n").utf8), to: .standardError) }

    /// A line in `style` when standard output is a terminal that wants colour (escaped first: only our own
    /// sequences reach the terminal).
    static func line(_ text: String, style: Style) { write(Data((style.apply(forPeople(text), on: .standardOutput) + "\n").utf8), to: .standardOutput) }

    /// A failure: `parleyctl: error:` in red on a terminal that wants colour, then the message.
    static func failure(_ message: String) {
        write(Data((Style.error.apply("parleyctl: error:", on: .standardError) + " " + forPeople(message) + "\n").utf8), to: .standardError)
    }

    /// Colour where people expect it: on a terminal, unless `NO_COLOR` is set (no-color.org) or `--no-color` given.
    enum Style {
        case heading
        case error
        /// Log lines by level (`parleyctl logs`): trace and debug faint, notice bold, warning yellow, error red,
        /// critical as ``error``.
        case faint, bold, yellow, red

        private var code: String {
            switch self {
            case .heading, .bold: "1"
            case .error: "1;31"
            case .faint: "2"
            case .yellow: "33"
            case .red: "31"
            }
        }

        func apply(_ text: String, on handle: FileHandle) -> String {
            Self.enabled(for: handle) ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
        }

        static func enabled(for handle: FileHandle) -> Bool {
            let environment = ProcessInfo.processInfo.environment
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            if environment["TERM"] == "dumb" || CommandLine.arguments.dropFirst().contains("--no-color") { return false }
            return isatty(handle.fileDescriptor) == 1 || (handle === FileHandle.standardOutput && Pager.pagesToTerminal)
        }
    }

    static func forPeople(_ text: String) -> String {
        guard text.needsEscapingForPeople else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { String($0).escapedForPeople(maximumBytes: .max) }.joined(separator: "\n")
    }
    static func bytes(_ data: Data) { write(data, to: .standardOutput) }

    private static func write(_ data: Data, to handle: FileHandle) {
        let failure: Int32? = lock.withLock { _ in
            data.withUnsafeBytes { bytes -> Int32? in
                guard let base = bytes.baseAddress else { return nil }
                var offset = 0
                while offset < bytes.count {
                    let count = Glibc.write(handle.fileDescriptor, base + offset, bytes.count - offset)
                    if count < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += count
                }
                return nil
            }
        }
        guard let failure, handle === FileHandle.standardOutput else { return }
        // The reader went away: what it did not read, nobody wants.
        if failure == EPIPE { exit(0) }
        // Anything else (a full disk, a closed descriptor) loses output someone expects: say so, fail.
        let message = "parleyctl: error: cannot write to standard output: \(String(cString: strerror(failure)))\n"
        _ = message.withCString { Glibc.write(FileHandle.standardError.fileDescriptor, $0, strlen($0)) }
        exit(1)
    }

    /// One JSON object per line: sorted keys, no slashes escaped.
    static func json<T: Encodable>(_ value: T) {
        guard let data = try? ReadableJSON.encoder.encode(value) else { return }
        jsonLine(data)
    }

    /// A JSON line, exact: only characters JSONEncoder leaves raw inside strings and that a terminal would act on
    /// (C1 controls, U+2028/U+2029, bidi controls) are written as `\uXXXX`, which is the same JSON value.
    private static func jsonLine(_ data: Data) {
        var text = String(decoding: data, as: UTF8.self)
        if text.needsEscapingForPeople {
            var escaped = ""
            for scalar in text.unicodeScalars {
                // JSONEncoder already escapes the C0 controls; these it leaves raw.
                if scalar.value >= 0x80, scalar.isUnsafeForPeople {
                    escaped += scalar.unicodeEscaped
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
            text = escaped
        }
        write(Data((text + "\n").utf8), to: .standardOutput)
    }

    /// A JSON object line with an already-encoded JSON value spliced in under `key`. `raw` is inserted as is if
    /// it is valid JSON (line breaks, which valid JSON only has between tokens, are removed so that the line
    /// stays one line); otherwise it goes in as a string.
    static func json<T: Encodable>(_ value: T, splicing raw: Data, as key: String) {
        let encoder = ReadableJSON.encoder
        guard var object = try? encoder.encode(value), object.last == UInt8(ascii: "}") else { return }
        let spliced: Data
        if JSONText.isValid(raw) {
            spliced = Data(raw.filter { $0 != 0x0A && $0 != 0x0D })
        } else {
            spliced = (try? encoder.encode(String(decoding: raw, as: UTF8.self))) ?? Data("null".utf8)
        }
        object.removeLast()
        if object.count > 1 { object.append(UInt8(ascii: ",")) }
        object.append(contentsOf: Data("\"\(key)\":".utf8))
        object.append(spliced)
        object.append(UInt8(ascii: "}"))
        jsonLine(object)
    }
}

extension String {
    /// A name or other short remote text inside a line: escaped, and cut (with `…`) past 128 bytes.
    var shown: String { escapedForPeople(maximumBytes: 128) }
}

enum JSONText {
    /// Whether `data` is one JSON value (an object, array, string, number, true, false or null).
    static func isValid(_ data: Data) -> Bool {
        (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
    }
}

/// Files parleyctl writes for the user (`export FILE`, `show --image FILE`, `send --output FILE`): an existing file
/// is kept unless the user said `--force`, as `cp -n` and `curl -o` users expect; a lost export is not something to
/// find out later. The new content goes to a temporary file beside FILE and takes FILE's place only once it is
/// complete (see ``PendingFile``): a failure half-way (parleyd gone, a full disk, no such session) leaves the old
/// file as it was, or no file at all.
enum OutputFile {
    static func refuseToOverwrite(_ path: String, force: Bool) throws {
        guard !force, exists(path) else { return }
        throw alreadyExists(path)
    }

    /// The refusal: the same words for every command that writes a file.
    static func alreadyExists(_ path: String) -> CtlFailure {
        CtlFailure(.error, "\(path) exists; give --force to overwrite it, or another file name")
    }

    static func write(_ data: Data, to path: String, force: Bool) throws {
        let file = try PendingFile(replacing: path, force: force)
        try file.write(data)
        try file.commit()
    }

    /// Whether anything is at `path`, a dangling symbolic link included (replacing it would still lose something).
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}

/// A file written in full under a temporary name in FILE's directory (so that the rename cannot cross file
/// systems), then renamed over FILE: readers see the old content or the new, never part of it. Not committed, it
/// is removed (``discard()``, and when it goes out of scope).
final class PendingFile {
    let path: String
    private let temporaryPath: String
    private let force: Bool
    private var fd: Int32

    /// Refuses an existing `path` unless `force`; creates the temporary file with the mode a new file gets (0666
    /// less the umask) or, when replacing, the replaced file's permissions.
    init(replacing path: String, force: Bool) throws {
        try OutputFile.refuseToOverwrite(path, force: force)
        let created = try Self.createTemporaryFile(besides: path)
        temporaryPath = created.path
        fd = created.fd
        self.path = path
        self.force = force
        PendingFiles.add(temporaryPath, for: path)
        var replaced = stat()
        if stat(path, &replaced) == 0 { _ = fchmod(fd, replaced.st_mode & 0o7777) }
    }

    deinit { discard() }

    /// A new file in `path`'s directory: hidden, named after it (cut, so that the name stays within NAME_MAX), unique.
    private static func createTemporaryFile(besides path: String) throws -> (path: String, fd: Int32) {
        let url = URL(fileURLWithPath: path)
        let prefix = url.deletingLastPathComponent().path + "/." + String(url.lastPathComponent.prefix(40)) + ".parleyctl-"
        while true {
            let candidate = prefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            let fd = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            if fd >= 0 { return (candidate, fd) }
            guard errno == EEXIST else { throw CtlFailure(.error, "cannot write \(path): \(String(cString: strerror(errno)))") }
        }
    }

    func write(_ data: Data) throws {
        let failure: Int32? = data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return nil }
            var offset = 0
            while offset < bytes.count {
                let count = Glibc.write(fd, base + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += count
            }
            return nil
        }
        if let failure { throw CtlFailure(.error, "cannot write \(path): \(String(cString: strerror(failure)))") }
    }

    /// Puts the file in place: on the disk first (a crash right after must not leave an empty FILE), then in
    /// FILE's place. With `force`, renamed over it. Without, linked to FILE's name, which fails if a FILE
    /// appeared since ``init(replacing:force:)`` looked: what is there is still not replaced.
    func commit() throws {
        guard fd >= 0, !finished else { return }
        let synced = fsync(fd) == 0 ? nil : errno
        let closed = close(fd) == 0 ? nil : errno
        fd = -1
        // Placed (or failed) as one step with leaving ``PendingFiles``: a signal cannot fall between the two.
        try PendingFiles.settle(temporaryPath) {
            if let failure = synced ?? closed { throw failed(failure) }
            try place()
        }
    }

    private func place() throws {
        if force {
            guard rename(temporaryPath, path) == 0 else { throw failed(errno) }
            finished = true
            return
        }
        if link(temporaryPath, path) == 0 {
            removeTemporaryFile()  // FILE is the other name of the same file now
            return
        }
        if errno == EEXIST { throw cleanedUp(OutputFile.alreadyExists(path)) }
        // A file system without hard links: check again, as close to the rename as can be.
        guard errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP || errno == EXDEV else { throw failed(errno) }
        if OutputFile.exists(path) { throw cleanedUp(OutputFile.alreadyExists(path)) }
        guard rename(temporaryPath, path) == 0 else { throw failed(errno) }
        finished = true
    }

    /// A failure to write FILE, after removing the temporary file.
    private func failed(_ code: Int32) -> CtlFailure {
        cleanedUp(CtlFailure(.error, "cannot write \(path): \(String(cString: strerror(code)))"))
    }

    private func cleanedUp<Failure: Error>(_ error: Failure) -> Failure {
        removeTemporaryFile()
        return error
    }

    /// Committed or discarded: the temporary file is gone either way.
    private var finished = false

    /// Removes the temporary file (unless it already became FILE).
    func discard() {
        removeTemporaryFile()
        PendingFiles.remove(temporaryPath)
    }

    private func removeTemporaryFile() {
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        if !finished {
            unlink(temporaryPath)
            finished = true
        }
    }
}

/// The temporary files of the ``PendingFile``s not yet committed or discarded. SIGINT or SIGTERM would end
/// parleyctl without running their `deinit`, leaving a hidden `.FILE.parleyctl-…` beside FILE; a command that
/// writes a file over a long time (`export`) asks for ``removeOnInterrupt()`` first.
enum PendingFiles {
    /// Temporary path → the FILE it is to become.
    private static let pending = Mutex<[String: String]>([:])

    static func add(_ temporaryPath: String, for path: String) { pending.withLock { $0[temporaryPath] = path } }

    static func remove(_ temporaryPath: String) { _ = pending.withLock { $0.removeValue(forKey: temporaryPath) } }

    /// Runs `placing` (which puts the file in place, or removes it on failure) and forgets the file, under the lock
    /// the signal handler takes: an interruption comes before both or after both, so a FILE put in place is never
    /// reported as not written.
    static func settle(_ temporaryPath: String, _ placing: () throws -> Void) throws {
        try pending.withLock { files in
            defer { files.removeValue(forKey: temporaryPath) }
            try placing()
        }
    }

    /// From now on SIGINT or SIGTERM removes every pending temporary file, says which FILE was not written, and
    /// ends parleyctl with status 128 + the signal, what a shell shows when the signal ends a process. Returns once
    /// the signals are trapped.
    static func removeOnInterrupt() async {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        Task {
            for await signal in signals {
                // Under the lock, held to the end: no file is placed (``settle(_:_:)``) after it is reported.
                pending.withLock { files in
                    for (temporaryPath, path) in files {
                        unlink(temporaryPath)
                        Output.error("interrupted (\(signal)): \(path) was not written; a file already there keeps its content")
                    }
                    // _exit: main may be exiting normally at the same moment, and output here is unbuffered write(2).
                    _exit(128 + signal.rawValue)
                }
            }
        }
    }
}
