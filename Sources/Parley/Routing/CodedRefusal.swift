import ParleyWire

/// An error a handler throws to answer a request with an error code of its own instead of `handler-failed`: the
/// requester receives ``errorReplyCode`` with the error's description as the text, and can match the code
/// (``TransceiverError/remoteError(code:message:)``) instead of reading the text. A service that answers local
/// tools documents its codes (parleyd's are in docs/protocol.md §7).
public protocol CodedRefusal: Error, CustomStringConvertible {
    /// The code of the error-reply; one of the protocol's request codes or a service's own (100 and up).
    var errorReplyCode: ErrorCode { get }
}
