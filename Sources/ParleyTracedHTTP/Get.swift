import ArgumentParser
import AsyncHTTPClient
import Logging
import ParleyRemoteDebugger

/// One GET with AsyncHTTPClient, whose request is a client span through the bootstrapped tracer; prints the
/// status and the body, and exits 0 for a 2xx answer.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "GET a URL, traced.")

    @OptionGroup var telemetry: TelemetryOptions

    @Argument(help: "The URL.")
    var url: String

    func run() async throws {
        telemetry.bootstrap(defaultName: "traced-client", level: .info)
        let logger = Logger(label: "traced.client")
        // Made after the bootstrap: a client takes InstrumentationSystem's tracer when it is made.
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let status: UInt
        do {
            let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            status = response.status.code
            print("\(status) \(String(buffer: body))")
            logger.notice("fetched", metadata: ["url": "\(url)", "status": "\(status)"])
        } catch {
            logger.error("request failed", metadata: ["url": "\(url)", "error": "\(error)"])
            try await client.shutdown()
            await TelemetryExporter.stopShared()
            throw ExitCode(2)
        }
        try await client.shutdown()
        await TelemetryExporter.stopShared()
        if !(200..<300).contains(status) { throw ExitCode(1) }
    }
}
