import Foundation
import Parley

// Two Parley peers in one process, talking over loopback: a to-do list ("kitchen-tablet") and a
// client ("phone") that adds items, broadcasts, and asks for the list with a request/reply.
//
//   parley-example                                 the two peers run open
//   parley-example --secret-file /etc/parley/secret   both prove the secret (parleyd's secretFile) and encrypt
//   parley-example --devices DIRECTORY             each keeps a device identity in DIRECTORY (made on first run) and
//                                                  lets in only the other's certificate, over TLS 1.3

struct AddItemCommand: Codable, Sendable, NamedMessage {
    static let messageType = "listr.AddItemCommand"
    var title: String
}

struct ListItemsCommand: Codable, Sendable, NamedMessage {
    static let messageType = "listr.ListItemsCommand"
}

struct ItemList: Codable, Sendable, NamedMessage {
    static let messageType = "listr.ItemList"
    var items: [String]
}

/// The to-do list's storage. An actor, because handlers run concurrently with everything else.
actor ItemStore {
    private(set) var items: [String] = []
    func add(_ title: String) { items.append(title) }
}

func fail(_ text: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("parley-example: \(text)\n".utf8))
    exit(status)
}

var secret: SharedSecret?
var identities: (tablet: DeviceIdentity, phone: DeviceIdentity)?
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count == 2, arguments[0] == "--secret-file" {
    do {
        secret = try SharedSecret(contentsOfFile: arguments[1])
    } catch {
        fail("--secret-file: \(error)")
    }
} else if arguments.count == 2, arguments[0] == "--devices" {
    // Long-term identities, as an app keeps in its state directory: the second run finds the same fingerprints.
    do {
        identities = (
            try DeviceIdentity.loadOrCreate(in: arguments[1] + "/kitchen-tablet", name: "kitchen-tablet"),
            try DeviceIdentity.loadOrCreate(in: arguments[1] + "/phone", name: "phone")
        )
    } catch {
        fail("--devices: \(error)")
    }
} else if !arguments.isEmpty {
    fail("usage: parley-example [--secret-file PATH | --devices DIRECTORY]", status: 2)
}

let store = ItemStore()
var tabletConfiguration = TransceiverConfiguration(name: "kitchen-tablet", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, sharedSecret: secret)
// With --devices: each side's identity, trusting only the other's fingerprint (both known here; two machines
// would pair instead: docs/security.md).
tabletConfiguration.devices = identities.map { DeviceAuthentication(identity: $0.tablet, trusting: [$0.phone.fingerprint]) }
let tablet = Transceiver(configuration: tabletConfiguration)
tablet.receive(AddItemCommand.self) { command, peer in
    await store.add(command.title)
    print("tablet: \(peer.name) added \"\(command.title)\"")
}
tablet.respond(to: ListItemsCommand.self) { _, _ in ItemList(items: await store.items) }

var phoneConfiguration = TransceiverConfiguration(name: "phone", identity: .ephemeral, listenHost: nil, sharedSecret: secret)
phoneConfiguration.devices = identities.map { DeviceAuthentication(identity: $0.phone, trusting: [$0.tablet.fingerprint]) }
let phone = Transceiver(configuration: phoneConfiguration)

try await tablet.start()
try await phone.start()
let port = tablet.listeningPort!
print("tablet listening on 127.0.0.1:\(port)")

let peer = try await phone.connect(to: Endpoint(host: "127.0.0.1", port: port))
let mode = if let identities {
    " (devices over TLS 1.3: tablet \(identities.tablet.fingerprint.short), phone \(identities.phone.fingerprint.short))"
} else if secret != nil {
    " (secret proven, encrypted)"
} else {
    " (open)"
}
print("phone: connected to \(peer.name)\(mode)")

try await phone.send(AddItemCommand(title: "milk"), to: peer)
try await phone.broadcast(AddItemCommand(title: "eggs"))
let list = try await phone.request(ListItemsCommand(), from: peer, expecting: ItemList.self, timeout: .seconds(5))
print("phone: the list is \(list.items)")

await phone.stop()
await tablet.stop()
