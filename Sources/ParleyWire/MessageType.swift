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
    return String(reflecting: type)
}
