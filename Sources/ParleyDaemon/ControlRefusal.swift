import Parley
import ParleyControl
import ParleyDrawer
import ParleyHistory

/// A refusal of parleyd's answered to a local client with its control protocol code (``ControlErrorCode``), for
/// the errors of modules that know nothing of the control protocol (the history, the drawer's rules, the peer gate).
struct ControlRefusal: CodedRefusal {
    let code: ControlErrorCode
    let description: String

    var errorReplyCode: ErrorCode { code.errorCode }

    /// Runs a control handler's `body`, turning the errors of those modules into refusals with their codes.
    static func coding<Value>(_ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch let error as HistoryStoreError {
            throw ControlRefusal(code: Self.code(for: error), description: error.description)
        } catch let error as DrawerError {
            throw ControlRefusal(code: Self.code(for: error), description: error.description)
        } catch let error as TransceiverError {
            guard case .noPeer = error else { throw error }
            throw ControlRefusal(code: .noMatchingPeer, description: error.description)
        }
    }

    private static func code(for error: HistoryStoreError) -> ControlErrorCode {
        switch error {
        case .noSuchSession: .noSuchSession
        // A log record or a span is an entry of the history as a state is; no request names one by number yet.
        case .noSuchEntry, .noSuchLogRecord, .noSuchSpan: .noSuchEntry
        case .noSuchTrace: .noSuchTrace
        case .ambiguousTrace: .ambiguousTrace
        case .cannotOpen, .database, .exportIncomplete: .storageFailed
        case .invalidLimits, .sessionEnded, .sessionLive, .actionTooLong, .invalidState, .invalidFilter, .invalidImport,
            .alreadyInHistory, .invalidTraceID, .invalidLabelPattern:
            .invalidRequest
        }
    }

    private static func code(for error: DrawerError) -> ControlErrorCode {
        switch error {
        case .notSettable(_, kind: .action): .drawerItemIsAction
        case .notAnAction: .drawerItemIsNotAction
        default: .invalidDrawerValue
        }
    }
}

extension RoutingError: CodedRefusal {
    var errorReplyCode: ErrorCode {
        switch self {
        case .notRouted: ControlErrorCode.notRouted.errorCode
        case .noMatchingPeer: ControlErrorCode.noMatchingPeer.errorCode
        case .severalTargets: ControlErrorCode.ambiguousTarget.errorCode
        case .sendFailed: ControlErrorCode.forwardFailed.errorCode
        }
    }
}

extension DebuggerError: CodedRefusal {
    var errorReplyCode: ErrorCode {
        switch self {
        case .noSuchApp, .noApps: ControlErrorCode.noMatchingPeer.errorCode
        // Codes of their own: each client names what to do next in its own terms (parleyctl its arguments).
        case .sessionAppGone: ControlErrorCode.sessionAppNotConnected.errorCode
        case .firstOfSession: ControlErrorCode.firstOfSession.errorCode
        case .diffTooLarge, .diffTooSlow: ControlErrorCode.invalidRequest.errorCode
        }
    }
}

extension DrawerServiceError: CodedRefusal {
    var errorReplyCode: ErrorCode {
        switch self {
        case .noSuchApp: ControlErrorCode.noMatchingPeer.errorCode
        case .ambiguous: ControlErrorCode.ambiguousTarget.errorCode
        case .appRefused, .appSilent: ControlErrorCode.appFailed.errorCode
        }
    }
}

extension ConfigurationError: CodedRefusal {
    public var errorReplyCode: ErrorCode { ControlErrorCode.invalidConfiguration.errorCode }
}
