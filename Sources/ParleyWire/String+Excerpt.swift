extension String {
    /// At most `maximumBytes` of UTF-8 (cut at a character boundary, then `…`). For text a peer chose that ends
    /// up in our log lines or close reasons: its length is bounded only by the frame size (64 MiB by default),
    /// and echoing or logging it whole would let a peer flood the log, or have its bytes reflected back at it.
    public func excerpt(maximumBytes: Int = 512) -> String {
        guard utf8.count > maximumBytes else { return self }
        var result = ""
        var bytes = 0
        for character in self {
            let size = character.utf8.count
            guard bytes + size <= maximumBytes else { break }
            result.append(character)
            bytes += size
        }
        return result + "…"
    }
}
