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
        let placed = try inv.service.placeApp(inv.args.positionals[0], pid: pid)
        if inv.options.json {
            inv.output.emit(Result(name: placed.name, pid: placed.pid, cgroup: placed.cgroup))
        } else {
            inv.output.line(L("process \(pid) is in \(placed.cgroup): its new connections follow the app rules of '\(placed.name)'"))
            inv.output.note(L("connections it had open keep the path they had"))
        }
        return .ok
    }
}
