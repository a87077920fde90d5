import ParleyTestSupport

/// parleyctl's tests run built products as children (see ``ChildProcess``).
typealias Child = ChildProcess

