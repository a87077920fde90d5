import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ParleyRemoteDebugger

/// Serves `GET /hello` on loopback with Hummingbird's TracingMiddleware until SIGTERM or SIGINT; prints
/// `listening on PORT` once it listens.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve GET /hello, traced, until SIGTERM.")

    @OptionGroup var telemetry: TelemetryOptions

    @Option(help: "The TCP port on 127.0.0.1 (0: any free one).")
    var port = 0

    func run() async throws {
        telemetry.bootstrap(defaultName: "traced-server", level: .info)
        let logger = Logger(label: "traced.server")
        let router = Router()
        router.middlewares.add(TracingMiddleware())
        router.get("hello") { request, context -> String in
            // Written inside the route's span: parleyd ties the line to it.
            context.logger.info("hello requested", metadata: ["user-agent": "\(request.headers[.userAgent] ?? "")"])
            return "hello"
        }
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                // Unbuffered: the test waiting for this line reads a pipe.
                FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? 0)\n".utf8))
            },
            logger: logger
        )
        try await app.runService()
        logger.notice("server stopped")
        await TelemetryExporter.stopShared()
    }
}
