/// The names closest to one a person typed, for "did you mean …?": by edit distance (insertions, deletions,
/// substitutions, and two neighbours swapped), case-insensitive, within a third of the typed name's length.
public enum NearestName {
    /// Up to `limit` of `candidates` close enough to `typed`, closest first; none when nothing is close.
    public static func suggestions(for typed: String, among candidates: [String], limit: Int = 3) -> [String] {
        let wanted = Array(typed.lowercased())
        let allowed = max(1, wanted.count / 3)
        let scored = Set(candidates).compactMap { candidate -> (String, Int)? in
            let distance = self.distance(wanted, Array(candidate.lowercased()))
            return distance <= allowed ? (candidate, distance) : nil
        }
        return scored.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(limit).map(\.0)
    }

    /// Optimal string alignment distance.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
