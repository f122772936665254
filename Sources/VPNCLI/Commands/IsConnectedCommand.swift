import VPNCore
import VPNService

enum IsConnectedCommand {
    static let spec = CommandSpec(
        name: "is-connected", abstract: L("Exit 0 if the profile is connected, 12 if not; prints nothing (with --json, {\"connected\": ...})."),
        examples: [
            "vpnctl is-connected office && echo connected",
            "vpnctl is-connected office --json",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let connected: Bool
        let status: String
    }

    /// Silent for `if vpnctl is-connected ...`; with --json it says what it found.
    static func run(_ inv: Invocation) throws -> ExitCode {
        let answer = try inv.service.isConnected(inv.args.positionals[0])
        if inv.options.json {
            inv.output.emit(Result(name: answer.name, connected: answer.connected, status: answer.status.name))
        }
        return answer.connected ? .ok : .notConnected
    }
}
