import ParleyTestSupport

/// parleyctl's tests run built products as children (see ``ChildProcess``).
typealias Child = ChildProcess

/// The first number after `prefix` in `text`.
func number(after prefix: String, in text: String) -> Int? {
    guard let range = text.range(of: prefix) else { return nil }
    let digits = text[range.upperBound...].prefix { $0.isNumber }
    return Int(digits)
}
