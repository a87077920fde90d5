import Foundation
import ParleyAvahi
import ParleyDNSSD
import ParleyDiscovery
import ParleyRemoteDebugger

/// `debugger-app NAME COUNT [--original] [--dnssd] [--paired DIR]`: an app that reports its states through ``RemoteDebugger`` with
/// discovery, as apps do (through dns_sd.h with `--dnssd`, as apps on Apple platforms do), and prints what the
/// debugger sends back. Runs until killed.
func runDebuggerApp(_ arguments: [String]) async throws {
    struct AppState: Codable, Sendable {
        var step: Int
    }
    let name = arguments.first ?? "debugger-app"
    let count = arguments.dropFirst().first.flatMap(Int.init) ?? 3
    let original = arguments.contains("--original")
    let backend: DiscoveryBackendFactory = arguments.contains("--dnssd") ? .dnssd : .avahi
    // `--paired DIR`: only debuggers this app paired with, its device identity in DIR.
    let pairedDirectory = arguments.firstIndex(of: "--paired").flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    @Sendable func emit(_ fields: [String: any Sendable]) {
        let data = try! JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
    // Without --paired, every open debugger, as apps did before pairing: most lab tests find parleyd, not pair with it.
    var configuration = RemoteDebuggerConfiguration<String>(
        appName: name, debugger: .discover(backend: backend), wireProtocol: original ? .originalFraming : .parley,
        trust: pairedDirectory == nil ? .anyOpen : .paired)
    configuration.deviceDirectory = pairedDirectory
    let debugger = RemoteDebugger<AppState, String>(configuration: configuration)
    debugger.onRestore { state in emit(["event": "restored", "step": state.step]) }
    try debugger.start()
    emit(["event": "ready", "name": name])
    let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3])
    for step in 0..<count {
        debugger.write(action: "step.\(step)", state: AppState(step: step), snapshot: png)
    }
    var reported = -1
    while true {
        try await Task.sleep(for: .milliseconds(100))
        let statistics = debugger.statistics
        if statistics.sent != reported {
            reported = statistics.sent
            emit(["event": "sent", "sent": statistics.sent, "dropped": statistics.dropped])
        }
    }
}
