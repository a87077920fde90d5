import Hummingbird

/// `/api/devices…`: parleyd's fingerprint, its paired devices and the pairing requests a person decides on.
struct DeviceRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("devices") { _, _ in try APIAnswer.json(await backend.devices()) }
        for decision in [WebDeviceDecision.accept, .refuse, .unpair] {
            routes.post("devices/:device/\(decision.rawValue)") { _, context in
                try APIAnswer.json(DeviceDecided(done: try await backend.decide(decision, device: context.parameters.get("device") ?? "")))
            }
        }
        return routes
    }

    struct DeviceDecided: Encodable {
        var done: String
    }
}
