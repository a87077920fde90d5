import Parley

/// The error codes parleyd refuses a local client's request with, beyond the protocol's own (docs/protocol.md §7):
/// a client matches these, never the text. Anything else a handler of parleyd's throws comes as `handler-failed`.
public enum ControlErrorCode: UInt16, Sendable, CaseIterable, CustomStringConvertible {
    /// No connected LAN peer (or debugger app, or app with a drawer) matches the target, or none connected within
    /// the peer gate's time (`parley.control.WaitForPeer`).
    case noMatchingPeer = 100
    /// The target matches several peers or apps where a request needs exactly one.
    case ambiguousTarget = 101
    /// A local client's message type is not routed: it needs `@<target>/<Type>`.
    case notRouted = 102
    /// The message could not be forwarded to some of its targets (they disconnected meanwhile, or were dropped as
    /// too slow).
    case forwardFailed = 103
    /// The configuration parleyd read again does not load (`parley.control.Reload`); it runs on as it was.
    case invalidConfiguration = 104
    /// The history holds no session of that id.
    case noSuchSession = 105
    /// The history holds no entry of that sequence (never, or no longer: retention dropped it).
    case noSuchEntry = 106
    /// The request asks for what parleyd will not do: a filter that does not parse, a diff too large or too
    /// slow, an import that is not a history, a session still recording.
    case invalidRequest = 107
    /// A drawer value that the item's rules refuse, or an item that does not exist.
    case invalidDrawerValue = 108
    /// A value set on a drawer item that is an action.
    case drawerItemIsAction = 109
    /// An action invoked on a drawer item that is not an action.
    case drawerItemIsNotAction = 110
    /// The app refused, or did not answer in time, what parleyd asked it on the client's behalf.
    case appFailed = 111
    /// parleyd's history database failed.
    case storageFailed = 112
    /// A diff of one entry that is the first of its session: there is nothing before it to compare it with.
    case firstOfSession = 113
    /// A replay to the app of the entry's session, which is not connected.
    case sessionAppNotConnected = 114
    /// No stored span belongs to a trace of that id or id prefix (never, or retention dropped it).
    case noSuchTrace = 115
    /// The trace id prefix starts several stored traces' ids.
    case ambiguousTrace = 116
    /// No paired device or pending pairing request has a fingerprint that begins so.
    case noSuchDevice = 117
    /// The fingerprint prefix begins several devices' fingerprints.
    case ambiguousDevice = 118

    /// The code on the wire.
    public var errorCode: ErrorCode { ErrorCode(rawValue: rawValue) }

    /// The control protocol's code that `code` is, if it is one.
    public init?(_ code: ErrorCode) {
        self.init(rawValue: code.rawValue)
    }

    /// The name docs/protocol.md gives the code.
    public var description: String {
        switch self {
        case .noMatchingPeer: "no-matching-peer"
        case .ambiguousTarget: "ambiguous-target"
        case .notRouted: "not-routed"
        case .forwardFailed: "forward-failed"
        case .invalidConfiguration: "invalid-configuration"
        case .noSuchSession: "no-such-session"
        case .noSuchEntry: "no-such-entry"
        case .invalidRequest: "invalid-request"
        case .invalidDrawerValue: "invalid-drawer-value"
        case .drawerItemIsAction: "drawer-item-is-action"
        case .drawerItemIsNotAction: "drawer-item-is-not-action"
        case .appFailed: "app-failed"
        case .storageFailed: "storage-failed"
        case .firstOfSession: "first-of-session"
        case .sessionAppNotConnected: "session-app-not-connected"
        case .noSuchTrace: "no-such-trace"
        case .ambiguousTrace: "ambiguous-trace"
        case .noSuchDevice: "no-such-device"
        case .ambiguousDevice: "ambiguous-device"
        }
    }
}
