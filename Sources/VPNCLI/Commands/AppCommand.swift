#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl app add PROFILE --pid N`: a running process into the rules.
enum AppCommand {
    static let spec = CommandSpec(
        name: "app", abstract: L("Put a running program under a profile's app rules."),
        subcommands: [CommandSpec(
            name: "add", abstract: L("Move a running process into the cgroup the app rules cover (its open connections keep their path)."),
            examples: ["vpnctl app add office --pid 4242"],
            options: [OptionSpec("pid", value: "pid", help: L("The process to move."))],
            positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
            run: add)])

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let pid: Int32
        let cgroup: String
    }

    static func add(_ inv: Invocation) throws -> ExitCode {
        guard let text = inv.args.value("pid"), let pid = Int32(text), pid > 0 else {
            throw VPNError.usage(L("--pid needs a process id"), hint: L("vpnctl app add PROFILE --pid N"))
        }
        guard geteuid() == 0 else {
            throw VPNError(.permissionDenied, L("only root can move a process into a profile's cgroup"), hint: L("run it as root"))
        }
        let (profile, apps) = try AppsCommand.coveredProfile(inv, inv.args.positionals[0])
        guard Processes.startTime(of: pid) != nil else {
            throw VPNError(.usage, L("there is no process \(pid)"))
        }
        guard let owned = apps.ownedCgroup else {
            throw VPNError(.failure, L("systemd manages the cgroups here: start the program with 'vpnctl run \(profile.name) -- PROGRAM' instead"))
        }
        try CgroupTree(mountPoint: apps.cgroupMount).move(pid, to: owned)
        if inv.options.json {
            inv.output.emit(Result(name: profile.name, pid: pid, cgroup: owned))
        } else {
            inv.output.line(L("process \(pid) is in \(owned): its new connections follow the app rules of '\(profile.name)'"))
            inv.output.note(L("connections it had open keep the path they had"))
        }
        return .ok
    }
}
