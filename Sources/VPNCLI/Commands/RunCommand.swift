#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl run PROFILE -- COMMAND`: COMMAND in a cgroup the profile's app
/// rules cover, from its first socket on (children inherit the cgroup).
enum RunCommand {
    static let spec = CommandSpec(
        name: "run", abstract: L("Run a command in the tunnel's app rules: only it uses the tunnel (include), or only it goes around (exclude)."),
        discussion: L("""
        For a profile with appRules, connected. The command runs in a cgroup
        the rules cover before it makes its first socket, and its children
        inherit it. Where systemd manages the cgroup tree, the cgroup is a
        scope in the slice vpnctl-KEY.slice (systemd-run --scope); elsewhere
        it is the cgroup vpnctl made for the profile (/vpnctl/KEY). Under sudo
        the command runs as the user who ran sudo. Exit status: the command's.
        """),
        examples: ["vpnctl run office -- curl https://intranet.example/", "vpnctl run home -- firefox"],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID.")),
                      PositionalSpec("command", variadic: true, help: L("The command and its arguments (after --)."))],
        run: run)

    /// Set in the command's environment inside a systemd scope: the second
    /// `vpnctl run` waits for the rules to cover the scope, then runs the command.
    static let inScope = "VPNCTL_RUN_IN_SCOPE"

    static func run(_ inv: Invocation) throws -> ExitCode {
        let words = inv.args.positionals
        guard words.count >= 2 else {
            throw VPNError.usage(L("no command to run"), hint: L("vpnctl run PROFILE -- COMMAND [ARGS]"))
        }
        let report = try inv.service.apps(words[0])
        let command = Array(words.dropFirst())
        let env = inv.context.environment
        guard let program = command[0].contains("/") ? command[0] : Processes.which(command[0], path: env["PATH"]) else {
            throw VPNError(.usage, L("'\(command[0])' is not a program in PATH"), hint: L("give its full path"))
        }
        var environment = env
        environment[inScope] = nil
        if report.ownedCgroup != nil {
            _ = try inv.service.placeApp(report.id.lowercasedString, pid: getpid())
        } else if env[inScope] == nil {
            // The scope is covered only for a user the policy lets use the rules: say so now, not after 5 s.
            let may = try inv.service.can(.start, report.id.lowercasedString)
            guard may.allowed else { throw VPNError(.permissionDenied, may.reason) }
            // systemd makes the scope (the user's own manager for a user); vpnctl run, inside it, waits for the rules to cover it.
            guard let systemdRun = Processes.which("systemd-run", path: env["PATH"]) else {
                throw VPNError(.providerUnavailable, L("systemd-run is not installed (vpnctl run asks systemd for a scope)"))
            }
            environment[inScope] = "1"
            let argv = [systemdRun] + (geteuid() == 0 ? [] : ["--user"]) + ["--scope", "--quiet", "--collect", "--slice=\(report.slice)", "--",
                        Processes.currentExecutable(), "run", report.id.lowercasedString, "--"] + command
            let e = Processes.replace(with: systemdRun, argv, environment: environment)
            throw VPNError(.failure, L("cannot run systemd-run: \(e)"))
        } else {
            try waitCovered(inv, report)
        }
        var argv = command
        var path = program
        if geteuid() == 0, let user = env["SUDO_USER"], !user.isEmpty, user != "root" {
            // The command is the user's, never root's by accident.
            guard let runuser = Processes.which("runuser", path: env["PATH"]) else {
                throw VPNError(.providerUnavailable, L("runuser is not installed: the command would run as root, not as \(user)"),
                               hint: L("install util-linux, or run vpnctl run as \(user) (the agent places the command)"))
            }
            argv = [runuser, "-u", user, "--"] + command
            path = runuser
        }
        let e = Processes.replace(with: path, argv, environment: environment)
        throw VPNError(.failure, L("cannot run \(command[0]): \(e)"))
    }

    /// Inside a new scope: until the rules cover it (the supervisor looks
    /// every second), at most 5 s.
    static func waitCovered(_ inv: Invocation, _ report: AppsReport) throws {
        guard let mine = CgroupTree.cgroup(of: getpid()) else { throw VPNError(.failure, L("cannot read this process's cgroup")) }
        var covered = report.cgroups
        for _ in 0..<50 {
            if covered.contains(where: { CgroupTree.isWithin(mine, $0) }) { return }
            usleep(100_000)
            covered = (try? inv.service.apps(report.id.lowercasedString))?.cgroups ?? []
        }
        throw VPNError(.timedOut, L("the app rules of '\(report.name)' did not cover \(mine) within 5 s"), hint: L("see 'vpnctl logs \(report.name)'"))
    }
}
