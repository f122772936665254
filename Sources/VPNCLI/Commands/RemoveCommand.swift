import FoundationEssentials
import VPNCore

enum RemoveCommand {
    static let spec = CommandSpec(
        name: "remove", aliases: ["delete", "rm"], abstract: L("Remove a profile and its secrets."),
        discussion: L("""
        A running profile is stopped first (and vpnctl says so), so that nothing is
        left that no command could stop any more.
        """),
        examples: [
            "vpnctl remove office",
            "vpnctl rm office --json",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let removed: String
        let id: String
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let controller = inv.controller
        let current = try controller.derive(profile)
        if current.supervisorAlive {
            let (_, stopped) = try TunnelActions.stop(inv, profile, wait: true, timeout: 10)
            if stopped.supervisorAlive {
                throw VPNError(.failure, L("'\(profile.name)' is still running; it was not removed"), hint: L("stop it with: vpnctl stop \(profile.name)"))
            }
            inv.output.note(L("stopped '\(profile.name)' before removing it"))
        } else {
            var cleaned = controller.cleanUpAfterDeadSupervisor(current)
            cleaned += controller.removeKillSwitch(profile, searchPath: inv.context.environment["PATH"])
            if !cleaned.isEmpty { inv.output.note(L("cleaned up after '\(profile.name)': \(cleaned.joined(separator: ", "))")) }
            // A kill switch that could not be removed would be left with nothing to name it.
            if let ks = try controller.runtime.read(profile.id)?.killSwitch {
                throw VPNError(.failure, L("'\(profile.name)' still has its kill switch (nftables table inet \(ks.table)); it was not removed"),
                               hint: L("stop it with 'vpnctl stop \(profile.name)' in the network namespace it runs in"))
            }
        }
        try manager.remove(profile)
        try controller.runtime.remove(profile.id)
        if inv.options.json {
            inv.output.emit(Result(removed: profile.name, id: profile.id.lowercasedString))
        } else {
            inv.output.line(L("removed '\(profile.name)'"))
        }
        return .ok
    }
}
