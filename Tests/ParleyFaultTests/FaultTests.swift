import Testing

/// Load and fault tests against a real parleyd process on loopback: many peers, slow and stalled ones, garbage and
/// SIGKILL, and parleyd keeps serving the rest. One suite whose tests run one at a time: each loads this small machine
/// on its own, so that its figures mean something and none starves another of the CPU. Every test prints its figures
/// with the prefix `[fault]`; docs/performance.md quotes them.
@Suite("Load and fault tests", .serialized, .timeLimit(.minutes(1)))
struct FaultTests {}
