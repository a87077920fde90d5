import Foundation
@testable import ParleyDaemon
import Testing

/// docs/operations.md's table of configuration keys is what parleyd accepts: every key, no other, each with its
/// environment variable.
@Suite("The configuration keys in docs/operations.md")
struct ConfigurationTableTests {
    /// The rows of the table headed `| File key | Environment | …`: each row's cells, without their backquotes.
    func documentedRows() throws -> [[String]] {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../docs/operations.md")
        let lines = try String(contentsOf: docs, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| File key | Environment |") }, "no key table in docs/operations.md")
        return lines[(header + 2)...].prefix { $0.hasPrefix("|") }.map { line in
            line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    @Test("every key parleyd accepts has one row, and the table names no other key")
    func everyKeyHasARow() throws {
        let documented = try documentedRows().map { $0[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
        #expect(documented.count == Set(documented).count, "a key has two rows")
        let accepted = Set(ConfigurationKey.allCases.map(\.rawValue))
        #expect(accepted.subtracting(documented).sorted() == [], "keys parleyd accepts that the table leaves out")
        #expect(Set(documented).subtracting(accepted).sorted() == [], "keys in the table that parleyd does not know")
    }

    @Test("each row's environment variable is the one parleyd reads")
    func environmentVariables() throws {
        for row in try documentedRows() {
            let key = try #require(ConfigurationKey(rawValue: row[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))))
            #expect(row[1].hasPrefix("`\(key.environmentVariable)`"), "\(key): \(row[1])")
        }
    }
}
