import Foundation
import ParleyTestSupport
import Testing

/// `parleyctl otel-env` against a real parleyd on this host (its control socket). Finding a parleyd on another host
/// by its TXT record is tested in the discovery lab (DaemonLabTests).
@Suite("parleyctl otel-env", .timeLimit(.minutes(2)))
struct OtelEnvCommandTests {
    @Test("this host's parleyd: its receiver's endpoint, the headers unset (no token is needed), by its name too; --json says the same")
    func localParleyd() async throws {
        let daemon = try await ParleydProcess.start(name: "kitchen")
        let endpoint = try #require(daemon.ready.otlp)
        let printed = try await daemon.ctl(["otel-env"])
        #expect(printed.status == 0, "\(printed)")
        #expect(printed.stdout == "export OTEL_EXPORTER_OTLP_ENDPOINT=\(endpoint)\nunset OTEL_EXPORTER_OTLP_HEADERS\n", "\(printed)")
        let named = try await daemon.ctl(["otel-env", "kitchen"])
        #expect(named.status == 0 && named.stdout == printed.stdout, "\(named)")

        let json = try await daemon.ctl(["otel-env", "--json"])
        #expect(json.status == 0, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: String])
        #expect(object == ["endpoint": endpoint, "name": "kitchen"])
    }

    @Test("with webTokenFile the headers carry its token: a shell that evals the output exports and is answered 200, without them 401")
    func tokenHeader() async throws {
        let directory = try ScratchDirectory(prefix: "otel-env")
        let tokenFile = directory.file("web-token")
        let generated = try await ChildProcess.run("parleyctl", ["secret", "generate", "--output", tokenFile])
        #expect(generated.status == 0, "\(generated)")
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let daemon = try await ParleydProcess.start(environment: ["PARLEY_WEB_TOKEN_FILE": tokenFile], in: directory)

        let printed = try await daemon.ctl(["otel-env"])
        #expect(printed.status == 0, "\(printed)")
        #expect(printed.stdout.hasSuffix("\nexport OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20\(token)\n"), "\(printed)")

        // What an SDK does with the two variables: POST to ENDPOINT/v1/traces with the header decoded.
        let parleyctl = PeerProcess.productsDirectory.appendingPathComponent("parleyctl").path
        let script = #"""
            eval "$("$0" otel-env --socket "$1")" || exit 9
            header=$(printf %s "$OTEL_EXPORTER_OTLP_HEADERS" | sed 's/=/: /; s/%20/ /')
            body='{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shell"}}]},"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"eval","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}'
            with=$(curl -s -o /dev/null -w '%{http_code}' -H "$header" -H 'Content-Type: application/json' --data-binary "$body" "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces")
            without=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces")
            echo "$with $without"
            """#
        let exported = try await ChildProcess.run("/bin/sh", ["-c", script, parleyctl, daemon.controlSocket])
        #expect(exported.status == 0 && exported.stdout == "200 401\n", "\(exported)")
    }

    @Test("a parleyd whose receiver is off: status 1, saying what to set")
    func receiverOff() async throws {
        let daemon = try await ParleydProcess.start(environment: ["PARLEY_OTLP_LISTEN": "off"])
        let printed = try await daemon.ctl(["otel-env"])
        #expect(printed.status == 1, "\(printed)")
        #expect(printed.stdout.isEmpty)
        #expect(printed.stderr.contains("has no OTLP receiver") && printed.stderr.contains("set otlpListen"), "\(printed)")
    }

    @Test("no parleyd on this host and none found on the LAN: status 1 and nothing on standard output for eval to run")
    func nothingFound() async throws {
        let directory = try ScratchDirectory(prefix: "otel-env")
        let printed = try await ChildProcess.run("parleyctl", ["otel-env", "--timeout", "0.5", "--socket", directory.file("none.sock")])
        #expect(printed.status == 1, "\(printed)")
        #expect(printed.stdout.isEmpty, "\(printed)")
        #expect(printed.stderr.contains("parleyctl: error:"), "\(printed)")
    }

    @Test("a --timeout that is not a positive number is a usage error")
    func badTimeout() async throws {
        let printed = try await ChildProcess.run("parleyctl", ["otel-env", "--timeout", "0"])
        #expect(printed.status == 2 && printed.stderr.contains("--timeout"), "\(printed)")
    }
}
