import Hummingbird

/// `/api/drawers…`: connected apps' debug drawers; setting an item's value and invoking an action in the app.
struct DrawerRoutes<Context: RequestContext>: Sendable {
    let backend: any WebDebuggerBackend

    var routes: RouteCollection<Context> {
        let routes = RouteCollection(context: Context.self)
        routes.get("drawers") { _, _ in try APIAnswer.json(DrawerList(drawers: await backend.drawers())) }
        routes.post("drawers/:peer/items/:item") { request, context in
            let set = try await RequestValues.body(
                request, as: SetBody.self, problem: .badRequest("the body must be {\"value\": …} with a boolean, a number or a string"))
            return try APIAnswer.json(try await backend.setDrawerValue(
                app: context.parameters.get("peer") ?? "", item: context.parameters.get("item") ?? "", value: set.value))
        }
        routes.post("drawers/:peer/items/:item/invoke") { _, context in
            try APIAnswer.json(try await backend.invokeDrawerAction(app: context.parameters.get("peer") ?? "", item: context.parameters.get("item") ?? ""))
        }
        return routes
    }
}
