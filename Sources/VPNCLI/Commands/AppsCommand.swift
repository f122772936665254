#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl apps PROFILE`: the processes the app rules cover now.
enum AppsCommand {
    static let spec = CommandSpec(
        name: "apps", abstract: L("List the programs a profile's app rules cover now, and the cgroups they are in."),
        examples: ["vpnctl apps office", "vpnctl apps office --json"],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let report = try inv.service.apps(inv.args.positionals[0])
        if inv.options.json {
            inv.output.emit(Result(report))
            return .ok
        }
        inv.output.line(report.mode == .include
            ? L("'\(report.name)' (include): these programs use the tunnel, and no others")
            : L("'\(report.name)' (exclude): these programs go around the tunnel"))
        if report.processes.isEmpty {
            inv.output.line(L("no program is in the covered cgroups now (\(report.cgroups.joined(separator: ", ")))"))
        } else {
            inv.output.table([L("PID"), L("COMMAND"), L("CGROUP")],
                             report.processes.map { [String($0.pid), $0.command.abbreviated(60), $0.cgroup] })
        }
        return .ok
    }

    /// The report as `--json` prints it (schemaVersion first).
    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let id: String
        let mode: String
        let slice: String
        let ownedCgroup: String?
        let cgroups: [String]
        let processes: [AppsReport.Process]

        init(_ r: AppsReport) {
            name = r.name
            id = r.id.lowercasedString
            mode = r.mode.rawValue
            slice = r.slice
            ownedCgroup = r.ownedCgroup
            cgroups = r.cgroups
            processes = r.processes
        }
    }
}
