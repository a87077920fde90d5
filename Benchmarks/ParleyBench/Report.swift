import Foundation

/// One figure of a run, as `--json` writes it. `name` is stable (scripts/bench-compare reads rows by it); a latency
/// row's `value` is its p50, with both percentiles beside it.
struct BenchRow: Encodable {
    let name: String
    let unit: String
    let value: Double
    var p50: Double?
    var p99: Double?
}

/// Where parley-bench's figures go. By default its human lines, on stdout. With `--json` the same lines go to stderr
/// (the progress of a run that takes minutes) and stdout gets one JSON object with every row, once the run is over:
///
///     {"benchmark":"parley-bench","scale":"full","encrypted":false,"nioExecutor":false,"cores":2,
///      "rows":[{"name":"encode","unit":"msgs/s","value":…}, {"name":"raw_rtt","unit":"µs","value":…,"p50":…,"p99":…}, …]}
struct Report {
    let json: Bool
    private(set) var rows: [BenchRow] = []

    init(json: Bool) { self.json = json }

    /// A line of the human output.
    func say(_ line: String) {
        if json {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            print(line)
        }
    }

    /// Records a figure and prints its line (a figure that shares another's line has none).
    mutating func record(_ name: String, _ value: Double, unit: String, line: String? = nil) {
        rows.append(BenchRow(name: name, unit: unit, value: value))
        if let line { say(line) }
    }

    /// Records a latency row from its round trips (sorted, in µs) and prints `label` with its percentiles.
    mutating func recordLatency(_ name: String, _ sorted: [Double], label: String) {
        let p50 = sorted[sorted.count / 2]
        let p99 = sorted[sorted.count * 99 / 100]
        rows.append(BenchRow(name: name, unit: "µs", value: p50, p50: p50, p99: p99))
        say(label + "p50 \(format(p50)) µs, p99 \(format(p99)) µs")
    }

    /// With `--json`: the object with every row, on stdout.
    func writeJSON(scale: Scale, encrypted: Bool, nioExecutor: Bool) throws {
        guard json else { return }
        struct Document: Encodable {
            let benchmark = "parley-bench"
            let scale: String
            let encrypted: Bool
            let nioExecutor: Bool
            let cores: Int
            let rows: [BenchRow]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let document = Document(
            scale: "\(scale)", encrypted: encrypted, nioExecutor: nioExecutor,
            cores: ProcessInfo.processInfo.activeProcessorCount, rows: rows)
        FileHandle.standardOutput.write(try encoder.encode(document) + Data("\n".utf8))
    }
}
