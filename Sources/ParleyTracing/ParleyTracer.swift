import Instrumentation
import ParleyRemoteDebugger
import ParleyTelemetry
import Tracing

/// A swift-distributed-tracing `Tracer` that sends every finished span to parleyd, where it appears on the app's
/// timeline and in its trace's waterfall.
///
/// ```swift
/// import ParleyAvahi
/// InstrumentationSystem.bootstrap(ParleyTracer(appName: "Listr", debugger: .discover(backend: .avahi)))
/// ```
///
/// AsyncHTTPClient's requests and Hummingbird's routes (with its `TracingMiddleware`) are spans already. A span
/// gets random ids; its parent is the span current in the `ServiceContext` it starts from (one this tracer
/// started, or one it extracted from a request), whose trace it joins. The tracer writes and reads the W3C
/// `traceparent` header (and passes `tracestate` on), so that a request from one instrumented app to another is
/// one trace. When a span ends, its attributes, events and links are converted and the ``SpanRecord`` goes to a
/// ``TelemetryExporter``, which hides secret-looking attributes (``SecretRedaction``) off the app's path, before
/// the span leaves the app.
/// Every span is recorded (trace flags 01); a caller's flags and `tracestate` are passed on unchanged.
public struct ParleyTracer: Tracer {
    public typealias Span = ParleySpan

    /// Where finished spans go.
    public let exporter: TelemetryExporter
    public let redaction: SecretRedaction

    /// A tracer sending through the process's exporter for `appName` and `debugger`
    /// (``TelemetryExporter/shared(appName:debugger:trust:)``), shared with `ParleyLogHandler`s made the same way.
    public init(appName: String, debugger: DebuggerLocation, trust: DebuggerTrust = .paired, redaction: SecretRedaction = SecretRedaction()) {
        self.init(exporter: TelemetryExporter.shared(appName: appName, debugger: debugger, trust: trust), redaction: redaction)
    }

    /// A tracer sending through `exporter` (one shared with a `RemoteDebugger`, or configured by the app).
    public init(exporter: TelemetryExporter, redaction: SecretRedaction = SecretRedaction()) {
        self.exporter = exporter
        self.redaction = redaction
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String,
        context: @autoclosure () -> ServiceContext,
        ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant,
        function: String,
        file fileID: String,
        line: UInt
    ) -> ParleySpan {
        let parentContext = context()
        let parent = parentContext.parleyTraceContext
        let own = TraceContext(
            traceID: parent?.traceID ?? .random(), spanID: .random(), flags: parent?.flags ?? TraceContext.sampled, traceState: parent?.traceState
        )
        var spanContext = parentContext
        spanContext.parleyTraceContext = own
        return ParleySpan(
            operationName: operationName, kind: SpanRecord.Kind(kind), start: instant().nanosecondsSinceEpoch, context: spanContext,
            traceContext: own, parentSpanID: parent?.spanID, tracer: self
        )
    }

    /// Asks the exporter to send what it holds now; returns at once (sending never blocks the caller).
    public func forceFlush() {
        exporter.flushSoon()
    }

    // MARK: - W3C Trace Context

    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let trace = context.parleyTraceContext else { return }
        injector.inject(trace.traceparent, forKey: TraceContext.traceparentHeader, into: &carrier)
        if let state = trace.traceState {
            injector.inject(state, forKey: TraceContext.tracestateHeader, into: &carrier)
        }
    }

    /// Reads `traceparent` (and `tracestate`) into `context` as the remote parent of the next span; a missing or
    /// malformed header leaves `context` as it was, and the next span starts a trace of its own.
    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: TraceContext.traceparentHeader, from: carrier),
            let trace = TraceContext(traceparent: header, tracestate: extractor.extract(key: TraceContext.tracestateHeader, from: carrier))
        else { return }
        context.parleyTraceContext = trace
    }

    // MARK: - Ending

    /// Called once per span, by ``ParleySpan/end(at:)``. The exporter's task redacts it before it leaves.
    func finished(_ record: SpanRecord) {
        exporter.enqueue(record, redacting: redaction)
    }
}

extension SpanRecord.Kind {
    /// The OpenTelemetry kind of a swift-distributed-tracing kind: the same five.
    public init(_ kind: SpanKind) {
        switch kind {
        case .server: self = .server
        case .client: self = .client
        case .producer: self = .producer
        case .consumer: self = .consumer
        case .internal: self = .internal
        }
    }
}
