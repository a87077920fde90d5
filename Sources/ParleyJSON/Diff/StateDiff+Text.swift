extension StateDiff {
    /// The changes as indented, path-labelled lines, one level of indentation (two spaces) per path step:
    ///
    /// ```
    /// items: count 3 → 2
    ///   [1]:
    ///     title: "milk" → "oat milk"
    ///   - [2]: {"title":"bread"}
    /// settings:
    ///   + fontSize: 14
    ///   theme: null → "dark"
    ///   zoom: "1" → 1 (string → number)
    /// ```
    ///
    /// `+` marks an added value, `-` a removed one; a type change names both types unless one side is `null`.
    /// Values are compact JSON, cut after `maxValueLength` characters (`…` marks the cut). Equal states give
    /// `(no changes)`.
    public func text(maxValueLength: Int = 120) -> String {
        guard !changes.isEmpty else { return "(no changes)" }
        var lines: [String] = []
        var open: [StatePath.Component] = []
        for change in changes {
            let components = change.path.components
            let parent = Array(components.dropLast())
            let shared = zip(open, parent).prefix(while: { $0 == $1 }).count
            for depth in shared..<parent.count {
                lines.append(indentation(depth) + parent[depth].description + ":")
            }
            open = parent
            let label = components.last?.description ?? "(root)"
            let prefix = indentation(parent.count)
            func shown(_ fragment: JSONFragment?) -> String { Self.cut(fragment?.text ?? "", to: maxValueLength) }
            switch change.kind {
            case .changed:
                lines.append("\(prefix)\(label): \(shown(change.old)) → \(shown(change.new))")
            case .typeChanged:
                let oldKind = change.old?.kind ?? .null
                let newKind = change.new?.kind ?? .null
                let types = oldKind == .null || newKind == .null ? "" : " (\(oldKind) → \(newKind))"
                lines.append("\(prefix)\(label): \(shown(change.old)) → \(shown(change.new))\(types)")
            case .added:
                lines.append("\(prefix)+ \(label): \(shown(change.new))")
            case .removed:
                lines.append("\(prefix)- \(label): \(shown(change.old))")
            case .countChanged:
                lines.append("\(prefix)\(label): count \(change.oldCount ?? 0) → \(change.newCount ?? 0)")
                // The count line heads the array's element changes that follow.
                open = components
            }
        }
        return lines.joined(separator: "\n")
    }

    private func indentation(_ depth: Int) -> String {
        String(repeating: "  ", count: depth)
    }

    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let kept = text.prefix(limit)
        return kept.endIndex == text.endIndex ? text : kept + "…"
    }
}
