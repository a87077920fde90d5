import Foundation
import Logging
@testable import Parley
import ParleyTestSupport
import Testing

/// What a device remembers of the debuggers it paired with (`paired-debuggers.json`), without sockets.
@Suite("Paired debuggers")
struct PairedDebuggersTests {
    static func debugger(_ name: String) throws -> (Peer, DeviceFingerprint) {
        let identity = try DeviceIdentity.generate(name: name)
        return (Peer(id: PeerID(), name: name, address: "10.0.0.2:7206", protocolVersion: 1, accepts: []), identity.fingerprint)
    }

    @Test("debuggers accepted at once are all remembered, whichever save ends last; the next start trusts exactly them, in a file only its owner reads")
    func concurrentAccepts() async throws {
        let directory = try ScratchDirectory(prefix: "paired")
        let paired = try PairedDebuggers(directory: directory.path, name: "app", wanted: nil, logger: Logger(label: "test"))
        let stranger = try Self.debugger("stranger").1
        #expect(paired.isEmpty && paired.trusts(stranger), "while none is paired, the debugger dialled is asked")
        let debuggers = try (0..<8).map { try Self.debugger("debugger-\($0)") }
        await withTaskGroup(of: Void.self) { group in
            for (peer, fingerprint) in debuggers {
                group.addTask { paired.established(peer, fingerprint) }
            }
        }
        let again = try PairedDebuggers(directory: directory.path, name: "app", wanted: nil, logger: Logger(label: "test"))
        #expect(again.identity.fingerprint == paired.identity.fingerprint)
        for (peer, fingerprint) in debuggers {
            #expect(again.trusts(fingerprint), "\(peer.name) was lost")
        }
        #expect(!again.trusts(stranger))
        let mode = try FileManager.default.attributesOfItem(atPath: directory.file("paired-debuggers.json"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    static func service(_ name: String, fingerprint: DeviceFingerprint?) -> DiscoveredService {
        DiscoveredService(
            instanceName: name, type: .debug, domain: "local", hostName: "\(name).local", addresses: [], port: 7206,
            txt: .parley(peerID: PeerID().rawValue, displayName: name, requiresSecret: false, deviceFingerprint: fingerprint?.short))
    }

    @Test("which advertised debuggers are dialled: before pairing, those that take devices (the wanted name only, if one is named); after, only the paired one")
    func admits() throws {
        let directory = try ScratchDirectory(prefix: "paired")
        let (alice, bob) = (try Self.debugger("alice"), try Self.debugger("bob"))
        let named = try PairedDebuggers(directory: directory.path, name: "app", wanted: "alice", logger: Logger(label: "test"))
        #expect(named.admits(Self.service("alice", fingerprint: alice.1)))
        #expect(!named.admits(Self.service("bob", fingerprint: bob.1)), "not the one named")
        #expect(!named.admits(Self.service("alice", fingerprint: nil)), "a node that takes no devices")

        let any = try PairedDebuggers(directory: directory.path, name: "app", wanted: nil, logger: Logger(label: "test"))
        #expect(any.admits(Self.service("bob", fingerprint: bob.1)) && !any.admits(Self.service("open-app", fingerprint: nil)))
        any.established(alice.0, alice.1)
        #expect(any.admits(Self.service("renamed", fingerprint: alice.1)), "the paired one, whatever its name")
        #expect(!any.admits(Self.service("bob", fingerprint: bob.1)))
    }

    @Test("the debugger wanted before pairing: the one named in the configuration, else PARLEY_DEBUGGER, else any; an empty variable names none")
    func wantedDebugger() throws {
        #expect(PairedDebuggers.wanted(named: "alice-laptop", environment: ["PARLEY_DEBUGGER": "bob-desktop"]) == "alice-laptop")
        #expect(PairedDebuggers.wanted(named: nil, environment: ["PARLEY_DEBUGGER": "bob-desktop"]) == "bob-desktop")
        #expect(PairedDebuggers.wanted(named: nil, environment: ["PARLEY_DEBUGGER": ""]) == nil)
        #expect(PairedDebuggers.wanted(named: nil, environment: [:]) == nil)

        // The name chosen through the environment is the one dialled.
        let directory = try ScratchDirectory(prefix: "paired")
        let (bob, alice) = (try Self.debugger("bob-desktop"), try Self.debugger("alice-laptop"))
        let paired = try PairedDebuggers(
            directory: directory.path, name: "app", wanted: PairedDebuggers.wanted(named: nil, environment: ["PARLEY_DEBUGGER": "bob-desktop"]),
            logger: Logger(label: "test"))
        #expect(paired.admits(Self.service("bob-desktop", fingerprint: bob.1)))
        #expect(!paired.admits(Self.service("alice-laptop", fingerprint: alice.1)))
    }

    @Test("a damaged file is refused with its path and what to do, rather than trusting every debugger again")
    func damagedFile() throws {
        let directory = try ScratchDirectory(prefix: "paired")
        try Data("not json".utf8).write(to: URL(fileURLWithPath: directory.file("paired-debuggers.json")))
        #expect {
            _ = try PairedDebuggers(directory: directory.path, name: "app", wanted: nil, logger: Logger(label: "test"))
        } throws: { error in
            // About the list, not the key beside it: removing the list keeps the device's identity.
            "\(error)".contains("paired-debuggers.json") && "\(error)".contains("remove it to pair again") && !"\(error)".contains("key file")
        }
    }
}
