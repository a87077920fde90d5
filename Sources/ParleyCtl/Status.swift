import ArgumentParser

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show parleyd's name, port, advertisement, discovery state, peer count and uptime.",
        discussion: "Needs parleyd, which is not available yet: exits with status 5."
    )

    @OptionGroup var format: OutputOptions

    func run() async throws {
        throw CtlFailure.daemonUnreachable("status")
    }
}
