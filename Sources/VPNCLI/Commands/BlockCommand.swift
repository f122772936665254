#if canImport(Glibc)
import Glibc
#endif
import VPNCore

/// `vpnctl block PROFILE`: the profile's kill switch in place before its
/// tunnel exists (always-on from boot: vpnctl-block@.service).
enum BlockCommand {
    static let spec = CommandSpec(
        name: "block", abstract: L("Put a profile's kill switch in place without its tunnel: nothing leaves but to its servers until it connects."),
        discussion: L("""
        For a profile with includeAllNetworks (or enforceRoutes). The table is the one \
        'vpnctl start' puts in place, so starting the tunnel replaces it without a moment \
        open; 'vpnctl stop' or 'vpnctl disable' lifts it. At boot, vpnctl-block@PROFILE.service \
        runs it before the network comes up (vpnctl@PROFILE.service pulls it in). Root only.
        """),
        examples: ["vpnctl block office", "vpnctl stop office   # lifts the block"],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: { try run($0) })

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let id: String
        let blocked: Bool
        let table: String?
        let reason: String
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        guard geteuid() == 0 else {
            throw VPNError(.permissionDenied, L("only root can put a kill switch in place"), hint: L("run it as root, or enable vpnctl@PROFILE.service"))
        }
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let outcome = try inv.controller.block(profile, searchPath: inv.context.environment["PATH"]) { line in
            if inv.options.verbose { inv.output.note(line) }
        }
        let text: String
        switch outcome {
        case .blocked:
            text = L("blocked: traffic goes nowhere but to the servers of '\(profile.name)' until 'vpnctl start \(profile.name)' connects it ('vpnctl stop \(profile.name)' lifts the block)")
        case .noKillSwitch:
            text = L("'\(profile.name)' has no kill switch (includeAllNetworks and enforceRoutes are off): nothing blocked")
        case .running:
            text = L("'\(profile.name)' is running: its kill switch is in place already")
        }
        if inv.options.json {
            var table: String?
            if case .blocked(let t) = outcome { table = t }
            inv.output.emit(Result(name: profile.name, id: profile.id.lowercasedString, blocked: outcome != .noKillSwitch, table: table, reason: text))
        } else {
            inv.output.line(text)
        }
        return .ok
    }
}
