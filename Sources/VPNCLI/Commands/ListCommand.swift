import FoundationEssentials
import VPNCore

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
        let manager = try inv.loadedManager()
        let rows = manager.profiles.map {
            Row(id: $0.id.lowercasedString, name: $0.name, enabled: $0.enabled,
                protocol: $0.protocol.kind.rawValue, revision: $0.revision)
        }
        if inv.options.json {
            inv.output.emit(Result(profiles: rows))
            return .ok
        }
        if rows.isEmpty {
            inv.output.note(inv.context.visibleProfiles == nil ? L("no profiles in \(inv.store.path); add one with: vpnctl import FILE")
                                                               : L("no profiles for you: none names you or a group of yours in its policy"))
            return .ok
        }
        inv.output.table([L("NAME"), L("PROTOCOL"), L("ENABLED"), L("REVISION"), "ID"],
                         rows.map { [$0.name, $0.protocol, $0.enabled ? L("yes") : L("no"), "\($0.revision)", $0.id] })
        return .ok
    }
}
