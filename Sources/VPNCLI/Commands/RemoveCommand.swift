import FoundationEssentials
import VPNCore

enum RemoveCommand {
    static let spec = CommandSpec(
        name: "remove", abstract: "Remove a profile and its secrets.",
        positionals: [PositionalSpec("profile", help: "The profile's name or UUID.")],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let removed: String
        let id: String
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        try manager.remove(profile)
        if inv.options.json {
            inv.output.emit(Result(removed: profile.name, id: profile.id.uuidString.lowercased()))
        } else {
            inv.output.line("removed '\(profile.name)'")
        }
        return .ok
    }
}
