import Foundation
import ParleyTestSupport
import Testing

/// The web debugger flooded, against a real parleyd whose open-files limit is systemd's default (1 024).
@Suite(.timeLimit(.minutes(2)))
struct WebFloodTests {
    @Test("with 1 024 open files, 1 100 half-sent web requests leave the control socket and the Parley port working; the header timeout closes them and the web answers again")
    func halfSentRequests() async throws {
        let daemon = try await ParleydProcess.start(openFiles: 1_024, 1_024, arguments: ["--web-listen", "127.0.0.1:0"])
        let web = try #require(daemon.webURL)
        let webPort = try #require(URLComponents(string: web)?.port)
        let limits = try String(contentsOfFile: "/proc/\(daemon.pid)/limits", encoding: .utf8)
        #expect(limits.split(separator: "\n").contains { $0.hasPrefix("Max open files") && $0.contains(" 1024 ") }, "\(limits)")

        var held: [RawConnection] = []
        for _ in 0..<1_100 {
            guard let connection = try? await RawConnection.open(port: webPort) else { continue }
            // A request head that never ends.
            try? await connection.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
            held.append(connection)
        }
        let status = try await daemon.ctl(["status", "--json"])
        #expect(status.status == 0 && status.stdout.contains("\"testd\""), "\(status)")
        let peers = try await daemon.ctl(["peers", "--direct", "--peer", "127.0.0.1:\(daemon.port)", "--json"])
        #expect(peers.status == 0 && peers.stdout.contains("\"testd\""), "a Parley handshake failed: \(peers)")

        // Every half-sent request is closed: those past the cap at once, the rest by the header timeout (10 s).
        for connection in held {
            #expect(await connection.waitUntilClosed(timeout: .seconds(30)))
        }
        let page = try await ChildProcess.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", web + "api/sessions"])
        #expect(page.stdout == "200", "\(page)")
        #expect(!daemon.log.contains("Too many open files"), "\(daemon.log)")
        #expect(try await daemon.stop() == 0)
    }
}
