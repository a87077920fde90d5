import Synchronization

/// A message type that chooses its own wire name. Give one to every type that crosses a process boundary
/// you do not control: the name then survives renaming or moving the Swift type.
///
/// ```swift
/// struct AddItemCommand: Codable, Sendable, NamedMessage {
///     static let messageType = "listr.AddItemCommand"
///     var title: String
/// }
/// ```
public protocol NamedMessage {
    static var messageType: String { get }
}

/// The wire name of a Swift type: its ``NamedMessage/messageType`` if it has one, otherwise its fully
/// qualified Swift name (`Module.Outer.Type`), which cannot collide with a same-named type in another module.
public func messageTypeName<T>(of type: T.Type) -> String {
    if let named = type as? any NamedMessage.Type { return named.messageType }
    return ReflectedTypeNames.shared.name(of: type)
}

/// `String(reflecting:)` of each type asked for, kept: it runs the runtime's type-name machinery (the demangler),
/// which cost more than the rest of sending a small typed message. A type's name never changes while it exists.
private final class ReflectedTypeNames: Sendable {
    static let shared = ReflectedTypeNames()
    private let names = Mutex<[ObjectIdentifier: String]>([:])

    func name<T>(of type: T.Type) -> String {
        let key = ObjectIdentifier(type)
        if let known = names.withLock({ $0[key] }) { return known }
        let name = String(reflecting: type)
        names.withLock { $0[key] = name }
        return name
    }
}
