import FoundationEssentials
import VPNCore

enum EnableCommand {
    static let enableSpec = CommandSpec(
        name: "enable", abstract: L("Enable a profile so it can be started."),
        examples: [
            "vpnctl enable office",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: { try run($0, enabled: true) })

    static let disableSpec = CommandSpec(
        name: "disable", abstract: L("Disable a profile; a disabled profile cannot be started."),
        examples: [
            "vpnctl disable office",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: { try run($0, enabled: false) })

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let id: String
        let enabled: Bool
        let revision: Int
        let changed: Bool
    }

    static func run(_ inv: Invocation, enabled: Bool) throws -> ExitCode {
        let manager = try inv.loadedManager()
        var profile = try manager.profile(named: inv.args.positionals[0])
        let changed = profile.enabled != enabled
        if changed {
            profile.enabled = enabled
            profile = try manager.save(profile)
        }
        // Disabling lifts a kill switch that a failed tunnel left blocking.
        if !enabled, !(try inv.controller.derive(profile)).isActive {
            for line in inv.controller.removeKillSwitch(profile, searchPath: inv.context.environment["PATH"]) { inv.output.note(line) }
        }
        if inv.options.json {
            inv.output.emit(Result(name: profile.name, id: profile.id.lowercasedString, enabled: enabled,
                                   revision: profile.revision, changed: changed))
        } else if changed {
            inv.output.line(enabled ? L("enabled '\(profile.name)'") : L("disabled '\(profile.name)'"))
        } else {
            inv.output.line(enabled ? L("'\(profile.name)' is already enabled") : L("'\(profile.name)' is already disabled"))
        }
        return .ok
    }
}
