import GRDB
import ParleyDebugger

/// Turns a resolved ``ActionTextFilter`` into an SQL condition, so that filtering, counting and paging happen
/// in SQLite (`LIMIT`/`OFFSET` count matching entries only).
///
/// Patterns become `GLOB` operands. SQLite's `GLOB` has the same `*` and `?` (one Unicode character) and is
/// case-sensitive too; its one extra feature, `[…]` classes, is escaped away: a literal `[`, `*` or `?` becomes
/// `[[]`, `[*]` or `[?]`.
enum ActionFilterSQL {
    static func condition(for filter: ActionTextFilter, column: String, arguments: inout StatementArguments) -> String {
        switch filter {
        case .pattern(let pattern):
            // Resolved filters hold valid patterns only.
            guard let glob = try? ActionGlob(pattern) else { return "0" }
            arguments += [globOperand(glob)]
            return "\(column) GLOB ?"
        case .all:
            return "1"
        case .not(let inner):
            return "NOT (\(condition(for: inner, column: column, arguments: &arguments)))"
        case .anyOf(let filters):
            guard !filters.isEmpty else { return "0" }
            return "(" + filters.map { condition(for: $0, column: column, arguments: &arguments) }.joined(separator: " OR ") + ")"
        case .allExcept(let filters):
            guard !filters.isEmpty else { return "1" }
            return "NOT (" + filters.map { condition(for: $0, column: column, arguments: &arguments) }.joined(separator: " OR ") + ")"
        case .named:
            // Resolved filters hold no names.
            return "0"
        }
    }

    static func globOperand(_ glob: ActionGlob) -> String {
        var operand = ""
        for element in glob.elements {
            switch element {
            case .anyRun: operand += "*"
            case .anyOne: operand += "?"
            case .literal("["): operand += "[[]"
            case .literal("*"): operand += "[*]"
            case .literal("?"): operand += "[?]"
            case .literal(let scalar): operand.unicodeScalars.append(scalar)
            }
        }
        return operand
    }
}
