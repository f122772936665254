import FoundationEssentials
import VPNCore
import VPNSystem

enum ProvidersCommand {
    static let spec = CommandSpec(
        name: "providers", abstract: L("List the providers: built-in ones and installed plugins, with whether each may run."),
        discussion: L("""
        Plugins are found by the manifests in /usr/lib/vpnctl/providers (packages;
        VPNCTL_PROVIDERS_DIR replaces it) and <config dir>/providers (the
        administrator's, /etc/vpnctl/providers by default, which wins for an
        identifier both have). A plugin may run when its manifest and executable are
        regular files owned by root and writable only by root, it declares
        'packet-tunnel', and it names an unprivileged user. See vpnctl-provider(7).
        """),
        examples: [
            "vpnctl providers",
            "vpnctl providers --json",
        ],
        run: run)

    struct Row: Encodable {
        let identifier: String
        let kind: String
        let `protocol`: String
        let version: String?
        let executable: String?
        let user: String?
        let manifest: String?
        /// nil for a built-in: its program is looked for at start.
        let usable: Bool?
        let problem: String?
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let providers: [Row]
    }

    static func rows(_ catalog: PluginCatalog) -> [Row] {
        let builtIn = ProviderRegistry.builtIn.filter { $0.isBuiltInTransport }.map {
            Row(identifier: $0.implementation, kind: "built-in", protocol: $0.kind.rawValue, version: nil, executable: nil,
                user: nil, manifest: nil, usable: nil, problem: nil)
        }
        let plugins = catalog.entries().map { e in
            Row(identifier: e.manifest?.identifier ?? "?", kind: "plugin", protocol: "provider",
                version: e.manifest.flatMap { $0.version.isEmpty ? nil : $0.version },
                executable: e.manifest?.executable, user: e.manifest?.user, manifest: e.path,
                usable: e.problem == nil && e.shadowedBy == nil,
                problem: e.problem ?? e.shadowedBy.map { "shadowed by \($0)" })
        }
        return builtIn + plugins
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let catalog = PluginCatalog.standard(configDirectory: inv.store.directory, environment: inv.context.environment)
        let rows = rows(catalog)
        if inv.options.json {
            inv.output.emit(Result(providers: rows))
            return .ok
        }
        inv.output.table([L("IDENTIFIER"), L("KIND"), L("PROTOCOL"), L("VERSION"), L("USER"), L("STATE")],
                         rows.map { r in
                             let state = r.usable.map { $0 ? "ok" : "refused: \(r.problem ?? "")" } ?? "-"
                             return [r.identifier, r.kind, r.protocol, r.version ?? "-", r.user ?? "-", state]
                         })
        if !rows.contains(where: { $0.kind == "plugin" }) {
            inv.output.note(L("no plugins installed (manifests in \(catalog.directories.joined(separator: ", ")))"))
        }
        return .ok
    }
}
