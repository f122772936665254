import VPNCore
import VPNService

enum CanCommand {
    static let spec = CommandSpec(
        name: "can", abstract: L("Exit 0 if you may take an action on a profile, 11 if not; prints the reason."),
        discussion: L("""
        The guard question for scripts and UIs. Actions: start, stop, toggle, status,
        stats, verify (granted by a profile's policy) and import, edit, remove, enable,
        disable, secret, trust (root and the admin group only). A user other than root
        is answered by the agent, with the policy it enforces.
        """),
        examples: [
            "vpnctl can start office && vpnctl start office",
            "vpnctl can edit office --json",
        ],
        positionals: [PositionalSpec("action", help: L("The action: start, stop, toggle, status, stats, verify, ...")),
                      PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let action: String
        let profile: String
        let id: String
        let user: String
        let allowed: Bool
        let reason: String
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let word = inv.args.positionals[0]
        guard let action = PolicyAction(rawValue: word) else {
            throw VPNError.usage(L("unknown action \(word.quotedForMessage); expected one of \(PolicyAction.allCases.map(\.rawValue).joined(separator: ", "))"),
                                 hint: L("See 'vpnctl help can'."))
        }
        let d = try inv.service.can(action, inv.args.positionals[1])
        if inv.options.json {
            inv.output.emit(Result(action: action.rawValue, profile: d.profile, id: d.id.lowercasedString,
                                   user: d.user, allowed: d.allowed, reason: d.reason))
        } else {
            inv.output.line(d.allowed ? L("allowed: \(d.reason)") : L("denied: \(d.reason)"))
        }
        return d.allowed ? .ok : .permissionDenied
    }
}
