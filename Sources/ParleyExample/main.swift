import Foundation
import Parley

// Two Parley peers in one process, talking over loopback: a to-do list ("kitchen-tablet") and a
// client ("phone") that adds items, broadcasts, and asks for the list with a request/reply.
//
//   parley-example                                 the two peers run open
//   parley-example --secret-file /etc/parley/secret   both prove the secret (parleyd's secretFile) and encrypt

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

var secret: SharedSecret?
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.count == 2, arguments[0] == "--secret-file" {
    do {
        secret = try SharedSecret(contentsOfFile: arguments[1])
    } catch {
        FileHandle.standardError.write(Data("parley-example: --secret-file: \(error)\n".utf8))
        exit(1)
    }
} else if !arguments.isEmpty {
    FileHandle.standardError.write(Data("usage: parley-example [--secret-file PATH]\n".utf8))
    exit(2)
}

let store = ItemStore()
let tablet = Transceiver(
    configuration: .init(name: "kitchen-tablet", identity: .ephemeral, listenHost: "127.0.0.1", port: 0, sharedSecret: secret))
tablet.receive(AddItemCommand.self) { command, peer in
    await store.add(command.title)
    print("tablet: \(peer.name) added \"\(command.title)\"")
}
tablet.respond(to: ListItemsCommand.self) { _, _ in ItemList(items: await store.items) }

let phone = Transceiver(configuration: .init(name: "phone", identity: .ephemeral, listenHost: nil, sharedSecret: secret))

try await tablet.start()
try await phone.start()
let port = tablet.listeningPort!
print("tablet listening on 127.0.0.1:\(port)")

let peer = try await phone.connect(to: Endpoint(host: "127.0.0.1", port: port))
print("phone: connected to \(peer.name)\(secret == nil ? " (open)" : " (secret proven, encrypted)")")

try await phone.send(AddItemCommand(title: "milk"), to: peer)
try await phone.broadcast(AddItemCommand(title: "eggs"))
let list = try await phone.request(ListItemsCommand(), from: peer, expecting: ItemList.self, timeout: .seconds(5))
print("phone: the list is \(list.items)")

await phone.stop()
await tablet.stop()
