import FoundationEssentials
import VPNCore
import VPNService

enum ListCommand {
    static let spec = CommandSpec(
        name: "list", abstract: L("List the saved profiles."),
        examples: [
            "vpnctl list",
            "vpnctl list --json",
        ],
        run: run)

    struct Row: Encodable {
        let id: String
        let name: String
        let enabled: Bool
        let `protocol`: String
        let revision: Int
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let profiles: [Row]
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let list = try inv.service.list()
        let rows = list.profiles.map {
            Row(id: $0.id.lowercasedString, name: $0.name, enabled: $0.enabled, protocol: $0.protocol, revision: $0.revision)
        }
        if inv.options.json {
            inv.output.emit(Result(profiles: rows))
            return .ok
        }
        if rows.isEmpty {
            inv.output.note(list.restricted ? L("no profiles for you: none names you or a group of yours in its policy")
                                            : L("no profiles in \(list.storePath ?? inv.store.path); add one with: vpnctl import FILE"))
            return .ok
        }
        inv.output.table([L("NAME"), L("PROTOCOL"), L("ENABLED"), L("REVISION"), "ID"],
                         rows.map { [$0.name, $0.protocol, $0.enabled ? L("yes") : L("no"), "\($0.revision)", $0.id] })
        return .ok
    }
}
