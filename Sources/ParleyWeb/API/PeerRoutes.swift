import Hummingbird

/// `/api/peers`: the peers parleyd knows, connected or only discovered.
struct PeerRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("peers") { _, _ in try APIAnswer.json(PeerList(peers: await backend.peers())) }
        return routes
    }
}
