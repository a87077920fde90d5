/// The value of `key` in a log line's `key=value` metadata (values without spaces).
func logField(_ key: String, in line: String) -> String? {
    for pair in line.split(separator: " ") where pair.hasPrefix("\(key)=") {
        return String(pair.dropFirst(key.count + 1))
    }
    return nil
}
