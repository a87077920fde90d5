/// Enums an app's debug drawer offers as choices, one of each kind `DebugDrawer.choice` names its options for: the
/// drawer's unit tests and its tests against parleyd use the same ones.
public enum Theme: String, CaseIterable, Codable, Sendable {
    case light, dark
}

/// Int raw values: options named by the cases' names, not by the numbers.
public enum Speed: Int, CaseIterable, Codable, Sendable {
    case slow = 1, fast = 2
}

/// No raw values (synthesized Codable encodes a case as an object): named by the cases' names.
public enum Mood: CaseIterable, Codable, Sendable {
    case calm, busy
}
