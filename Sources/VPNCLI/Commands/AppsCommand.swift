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

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let mode: String
        let cgroups: [String]
        let processes: [Process]
    }

    struct Process: Encodable {
        let pid: Int32
        let command: String
        let cgroup: String
    }

    /// The profile, with its app rules in place (connecting or connected).
    static func coveredProfile(_ inv: Invocation, _ reference: String) throws -> (Profile, AppRoutingRecord) {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: reference)
        guard profile.appRules != nil else {
            throw VPNError(.configurationInvalid, L("'\(profile.name)' has no appRules: every program uses it as its routes say"),
                           hint: L("add appRules with 'vpnctl edit \(profile.name)' (see vpnctl-profile(5))"))
        }
        let status = try inv.controller.derive(profile)
        guard status.isActive, let apps = status.record?.apps else {
            throw VPNError(.notConnected, L("'\(profile.name)' is not running: its app rules are not in place"),
                           hint: L("vpnctl start \(profile.name)"))
        }
        return (profile, apps)
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let (profile, apps) = try coveredProfile(inv, inv.args.positionals[0])
        let tree = CgroupTree(mountPoint: apps.cgroupMount)
        var processes: [Process] = []
        for c in apps.covered {
            for pid in tree.processes(under: c) {
                let argv = Processes.commandLine(of: pid) ?? []
                processes.append(Process(pid: pid, command: argv.joined(separator: " ").escapingControls(keepLineBreaks: false),
                                         cgroup: CgroupTree.cgroup(of: pid) ?? c))
            }
        }
        if inv.options.json {
            inv.output.emit(Result(name: profile.name, mode: apps.mode.rawValue, cgroups: apps.covered, processes: processes))
            return .ok
        }
        inv.output.line(apps.mode == .include
            ? L("'\(profile.name)' (include): these programs use the tunnel, and no others")
            : L("'\(profile.name)' (exclude): these programs go around the tunnel"))
        if processes.isEmpty {
            inv.output.line(L("no program is in the covered cgroups now (\(apps.covered.joined(separator: ", ")))"))
        } else {
            inv.output.table([L("PID"), L("COMMAND"), L("CGROUP")], processes.map { [String($0.pid), $0.command.abbreviated(60), $0.cgroup] })
        }
        return .ok
    }
}
