/// Decides which actions a ``RemoteDebugger`` records. A filtered-out action is neither queued nor sent, so noisy
/// actions (hover, scrolling, timers) cost no bandwidth and do not push useful entries out of the queue.
///
/// Filters compose:
///
/// ```swift
/// let filter: ActionFilter<AppAction> = .allExcept(.noisy, .windowVisibility)
/// filter(.mouseMoved)   // false
/// ```
///
/// A team keeps its named filters in one place, as static members of a constrained extension, so that the next
/// person debugging the app finds them by completion instead of writing the same predicate again:
///
/// ```swift
/// extension ActionFilter where Action == AppAction {
///     /// Actions fired continuously while the pointer moves.
///     static var noisy: Self {
///         Self { action in
///             switch action {
///             case .mouseMoved, .hoverChanged: true
///             default: false
///             }
///         }
///     }
/// }
/// ```
///
/// Note the direction: a filter answers "is this action included?". A named filter usually *describes* a group of
/// actions (`noisy` includes the noisy ones), and the debugger's filter excludes them with `.allExcept(.noisy)`.
public struct ActionFilter<Action>: Sendable {
    private let isIncluded: @Sendable (Action) -> Bool

    /// A filter from a predicate: `true` includes the action.
    public init(isIncluded: @escaping @Sendable (Action) -> Bool) {
        self.isIncluded = isIncluded
    }

    /// Whether `action` is included.
    public func callAsFunction(_ action: Action) -> Bool {
        isIncluded(action)
    }

    /// Includes every action.
    public static var all: Self {
        Self { _ in true }
    }

    /// Includes exactly the actions `filter` excludes.
    public static func not(_ filter: Self) -> Self {
        Self { !filter($0) }
    }

    /// Includes an action when at least one of `filters` includes it (none given: includes nothing).
    public static func anyOf(_ filters: [Self]) -> Self {
        Self { action in filters.contains { $0(action) } }
    }

    /// Includes an action when at least one of `filters` includes it.
    public static func anyOf(_ filters: Self...) -> Self {
        anyOf(filters)
    }

    /// Includes every action except those that one of `filters` includes (none given: includes everything).
    public static func allExcept(_ filters: [Self]) -> Self {
        Self { action in !filters.contains { $0(action) } }
    }

    /// Includes every action except those that one of `filters` includes.
    public static func allExcept(_ filters: Self...) -> Self {
        allExcept(filters)
    }
}
