import ArgumentParser
import Foundation
import ParleyDebugger
import ParleyTelemetry

struct Traces: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List recent traces: id, start, duration, spans, errors and name.",
        discussion: """
            Newest first: each trace apps sent spans of (through ParleyTracing, or any
            instrumentation that writes parley.telemetry.Batch), with the start of its
            id, when it started, how long it took from its first span's start to its last
            span's end, how many spans it has and how many of them ended in an error, and
            its root span's name. A trace between apps counts the spans of every app.
            `parleyctl trace ID` shows one.

            Examples:
              parleyctl traces
              parleyctl traces Listr -n 5
              parleyctl traces --session 3 --json
            """
    )

    @Argument(help: "Only traces with spans of this app: its name, or the start of its peer id.", completion: LiveCompletions.peerNames)
    var app: String?

    @Option(help: ArgumentHelp("Only traces with spans in the debugger session with this id.", valueName: "id"), completion: LiveCompletions.sessionIDs)
    var session: Int64?

    @Option(name: [.customShort("n"), .long], help: ArgumentHelp("At most this many traces (at most 200).", valueName: "N"))
    var limit = 20

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        guard (1...TelemetryControl.Traces.pageSize).contains(limit) else {
            throw ValidationError("-n/--limit must be 1 to \(TelemetryControl.Traces.pageSize)")
        }
    }

    func run() async throws {
        let request = TelemetryControl.Traces(session: session, app: app, limit: limit)
        let traces = try await daemon.ask(request, expecting: TelemetryControl.TraceList.self).traces
        if format.json {
            traces.forEach { Output.json($0) }
            return
        }
        guard !traces.isEmpty else {
            Output.line("no traces yet: apps bootstrapped with ParleyTracer send theirs as they finish (docs/observability.md)")
            return
        }
        let rows = traces.map { trace in
            [
                String(trace.traceID.hex.prefix(12)), LogPrinter.localTime(trace.start), Waterfall.duration(trace.durationNanos),
                String(trace.spanCount), trace.errorCount == 0 ? "-" : String(trace.errorCount), trace.name,
            ]
        }
        Table.print(["TRACE", "STARTED", "DURATION", "SPANS", "ERRORS", "NAME"], rows, caps: [12, 23, 10, 6, 6])
    }
}

struct Trace: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one trace as a waterfall: its spans by parent, with kind, duration and status.",
        discussion: """
            ID is the trace's id, or its start (at least 8 hexadecimal digits) when no
            other trace's id starts the same way; `parleyctl traces` lists them. Each span
            is one line, indented under its parent: its name, kind, duration, a bar that
            places it in the trace's time, and its status (ok, or error and why). With
            -v/--verbose, each span's attributes, events and links follow it.

            Examples:
              parleyctl trace 4bf92f35
              parleyctl trace 4bf92f3577b34da6a3ce929d0e0e4736 -v
              parleyctl trace 4bf92f35 --json
            """
    )

    @Argument(help: "The trace's id, or its first 8 or more hexadecimal digits.")
    var id: String

    @Flag(name: [.customShort("v"), .customLong("attributes")], help: "Also print each span's attributes, events and links.")
    var attributes = false

    @OptionGroup var daemon: DaemonOptions

    @OptionGroup var format: OutputOptions

    func validate() throws {
        guard (8...32).contains(id.count), id.allSatisfy(\.isHexDigit) else {
            throw ValidationError("\"\(id.shown)\" is not a trace id: give 8 to 32 of its hexadecimal digits (parleyctl traces lists them)")
        }
    }

    func run() async throws {
        let spans = try await daemon.ask(TelemetryControl.Trace(traceID: id), expecting: TelemetryControl.TraceDetail.self, timeout: .seconds(30)).spans
        if format.json {
            spans.forEach { Output.json($0) }
            return
        }
        Pager.start(unless: format.display.noPager)
        for line in Waterfall(spans.map(\.span)).lines(verbose: attributes) {
            if let style = line.style { Output.line(line.text, style: style) } else { Output.line(line.text) }
        }
    }
}

/// One trace as indented text: each span under its parent, with a bar placing it in the trace's time.
struct Waterfall {
    /// Spans in the order shown, with their depth.
    let rows: [(span: SpanRecord, depth: Int)]
    let start: UInt64
    let end: UInt64

    static let barWidth = 40

    init(_ spans: [SpanRecord]) {
        let ordered = spans.sorted { ($0.start, $0.spanID.hex) < ($1.start, $1.spanID.hex) }
        let present = Set(ordered.map(\.spanID))
        var children: [SpanID: [SpanRecord]] = [:]
        var roots: [SpanRecord] = []
        for span in ordered {
            // A parent that is not here (another app's, not sent) makes the span a root of what is shown.
            if let parent = span.parentSpanID, parent != span.spanID, present.contains(parent) {
                children[parent, default: []].append(span)
            } else {
                roots.append(span)
            }
        }
        var rows: [(SpanRecord, Int)] = []
        var shown = Set<SpanID>()
        func visit(_ span: SpanRecord, _ depth: Int) {
            // Ids repeat in hostile or duplicated data (an imported copy beside its original): each span once.
            guard shown.insert(span.spanID).inserted else { return }
            rows.append((span, depth))
            for child in children[span.spanID] ?? [] { visit(child, depth + 1) }
        }
        for root in roots { visit(root, 0) }
        // Spans whose parents form a loop have no root: shown at the top level, not lost.
        for span in ordered where !shown.contains(span.spanID) { visit(span, 0) }
        self.rows = rows
        start = ordered.map(\.start.value).min() ?? 0
        end = max(ordered.map(\.end.value).max() ?? 0, start)
    }

    func lines(verbose: Bool) -> [(text: String, style: Output.Style?)] {
        guard let first = rows.first else { return [] }
        let errors = rows.filter { $0.span.status.code == .error }.count
        var lines: [(String, Output.Style?)] = [(
            "trace \(first.span.traceID.hex)  \(rows.count) span\(rows.count == 1 ? "" : "s")  \(Self.duration(end - start))"
                + (errors == 0 ? "" : "  \(errors) error\(errors == 1 ? "" : "s")") + "  started \(LogPrinter.localTime(UnixNanos(start)))",
            .heading
        )]
        let names = rows.map { String(repeating: "  ", count: $0.depth) + LogPrinter.escaped($0.span.name) }
        let nameWidth = min(max(names.map(\.count).max() ?? 0, 4), 60)
        for (row, name) in zip(rows, names) {
            let span = row.span
            let cells = [
                Table.cut(name, to: nameWidth).padding(toLength: nameWidth, withPad: " ", startingAt: 0),
                span.kind.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0),
                String(repeating: " ", count: max(0, 9 - Self.duration(span.durationNanos).count)) + Self.duration(span.durationNanos),
                bar(span),
            ]
            var text = cells.joined(separator: "  ")
            switch span.status.code {
            case .ok: text += "  ok"
            case .error: text += "  error" + (span.status.message.map { ": " + LogPrinter.escaped($0) } ?? "")
            case .unset: break
            }
            lines.append((text, span.status.code == .error ? .red : nil))
            if verbose { lines += details(span, depth: row.depth).map { ($0, nil) } }
        }
        return lines
    }

    /// `|   ======     |`: where the span starts and how long it lasts, in the trace's time.
    func bar(_ span: SpanRecord) -> String {
        let total = Double(max(end - start, 1))
        let width = Double(Self.barWidth)
        let offset = min(Self.barWidth - 1, Int((Double(span.start.value - min(span.start.value, start)) / total * width).rounded(.down)))
        let length = min(Self.barWidth - offset, max(1, Int((Double(span.durationNanos) / total * width).rounded())))
        return "|" + String(repeating: " ", count: offset) + String(repeating: "=", count: length)
            + String(repeating: " ", count: Self.barWidth - offset - length) + "|"
    }

    /// Attributes, events and links, under the span.
    private func details(_ span: SpanRecord, depth: Int) -> [String] {
        let indent = String(repeating: "  ", count: depth + 2)
        var lines = span.attributes.keys.sorted().map { indent + LogPrinter.escaped($0) + " = " + LogPrinter.value(span.attributes[$0]!) }
        for event in span.events {
            let at = event.time.value >= span.start.value ? "+" + Self.duration(event.time.value - span.start.value) : "before start"
            let attributes = event.attributes.keys.sorted().map { " " + LogPrinter.escaped($0) + "=" + LogPrinter.value(event.attributes[$0]!) }
            lines.append(indent + "event " + LogPrinter.escaped(event.name) + " at " + at + attributes.joined())
        }
        for link in span.links { lines.append(indent + "link to trace \(link.traceID.hex) span \(link.spanID.hex)") }
        let dropped = [(span.droppedAttributes, "attributes"), (span.droppedEvents, "events"), (span.droppedLinks, "links")].filter { $0.0 > 0 }
        if !dropped.isEmpty { lines.append(indent + "dropped past the limits: " + dropped.map { "\($0.0) \($0.1)" }.joined(separator: ", ")) }
        return lines
    }

    /// `850 µs`, `12.3 ms`, `1.25 s`.
    static func duration(_ nanos: UInt64) -> String {
        switch nanos {
        case ..<1_000: "\(nanos) ns"
        case ..<1_000_000: "\(nanos / 1_000) µs"
        case ..<1_000_000_000: String(format: "%.1f ms", Double(nanos) / 1e6)
        default: String(format: "%.2f s", Double(nanos) / 1e9)
        }
    }
}
