#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

enum AgentCommand {
    static let spec = CommandSpec(
        name: "agent", abstract: L("Serve non-root users: run their tunnel commands as their profiles' policy allows (root; systemd runs it)."),
        discussion: L("""
        Runs in the foreground and listens on <run-dir>/agent.sock (mode 0666), or on the
        socket systemd passes (LISTEN_FDS); tells systemd it is ready when NOTIFY_SOCKET
        is set. Callers are identified by the kernel (SO_PEERCRED) and their groups by
        the system; each profile's policy decides. Every request is logged on stderr.
        It also runs the profiles' on-demand rules on network changes (see
        'vpnctl help ondemand'). Stopping the agent stops no tunnel.
        """),
        examples: [
            "vpnctl agent   # as systemd runs it (systemctl enable --now vpnctl-agent.socket)",
            "vpnctl agent --admin-group netadmin",
        ],
        options: [OptionSpec("admin-group", value: "group", help: L("Members may do everything, as root may (default vpnctl).")),
                  OptionSpec("request-timeout", value: "ms", help: L("How long a client may take to send its request (default 2000).")),
                  OptionSpec("max-clients", value: "n", help: L("Requests read at once; more are told the agent is busy (default 512).")),
                  OptionSpec("max-clients-per-user", value: "n", help: L("Requests of one user read at once (default half of --max-clients).")),
                  OptionSpec("max-requests-per-user", value: "n", help: L("Requests one user may make a second, after a burst (default 100).")),
                  OptionSpec("max-workers", value: "n", help: L("Requests that wait (start, watch, ...) one user may have running (default 32)."))],
        run: run)

    static func number(_ inv: Invocation, _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = inv.args.value(name) else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw VPNError.usage("invalid value \(text.quotedForMessage) for '--\(name)': expected \(range.lowerBound)–\(range.upperBound)", // English: 'vpnctl agent' speaks English only (VPNCLI.speaksEnglishOnly)
                                 hint: "See 'vpnctl help agent'.") // English: as above
        }
        return n
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        var limits = AgentServer.Limits()
        limits.requestTimeoutMs = Int64(try number(inv, "request-timeout", default: 2000, range: 10...600_000))
        limits.maximumClients = try number(inv, "max-clients", default: 512, range: 1...100_000)
        limits.maximumClientsPerUser = try number(inv, "max-clients-per-user", default: max(1, limits.maximumClients / 2),
                                                  range: 1...limits.maximumClients)
        limits.requestsPerSecondPerUser = try number(inv, "max-requests-per-user", default: 100, range: 1...100_000)
        limits.maximumWorkersPerUser = try number(inv, "max-workers", default: 32, range: 1...10_000)
        let adminGroup = inv.args.value("admin-group") ?? AccessPolicy.defaultAdminGroup
        guard !adminGroup.isEmpty, !adminGroup.contains(where: { $0 == ":" || $0 == " " || $0 == "\n" }) else {
            throw VPNError.usage("invalid value \(adminGroup.quotedForMessage) for '--admin-group <group>'", hint: "See 'vpnctl help agent'.") // English: as above
        }
        guard geteuid() == 0 else {
            throw VPNError(.permissionDenied, "the agent runs as root", hint: "start it with: systemctl start vpnctl-agent.socket") // English: as above
        }
        let settings = AgentSettings(configDirectory: inv.options.configDirectory, runDirectory: inv.options.runDirectory,
                                     adminGroup: adminGroup)
        let environment = inv.context.environment
        let stderr = inv.context.stderr
        // Under systemd each line carries its priority for the journal
        // (denials notice, refusals warning, failures error).
        let journal = Journal.stderrIsJournal(environment)
        let log: (String) -> Void = {
            stderr.write(Journal.render($0.escapingControls(keepLineBreaks: false), prefix: "vpnctl agent: ", journal: journal) + "\n")
        }

        // The run dir holds records that make vpnctl signal processes: it
        // must be root's and writable by nobody else (no symlink either).
        // Users need to reach the socket in it, so it is 0755.
        try inv.controller.runtime.prepare()
        if let info = try FileSystem.info(settings.runDirectory), info.mode & 0o055 != 0o055 {
            if chmod(settings.runDirectory, 0o755) != 0 {
                throw VPNError.from(SystemError("make reachable", path: settings.runDirectory, errno: .current))
            }
        }
        if try FileSystem.info(settings.configDirectory) != nil {
            try FileSystem.checkTrustedDirectory(settings.configDirectory)
        }
        signal(SIGPIPE, SIG_IGN)
        let signals = try SignalQueue()
        let listener: Int32
        let activated = Systemd.activatedSocket(environment: environment)
        if let fd = activated {
            listener = fd
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            log("serving the socket systemd passed (admin group '\(adminGroup)')")
        } else {
            listener = try UnixSocket.listenShared(at: settings.socketPath, mode: 0o666, backlog: 512)
            log("listening on \(settings.socketPath) (admin group '\(adminGroup)')")
        }
        let server = AgentServer(settings: settings, limits: limits, listener: listener, path: environment["PATH"], log: log)
        if journal { server.journalStream = environment["JOURNAL_STREAM"] }
        Systemd.notify("READY=1\nSTATUS=serving \(settings.socketPath)", environment: environment)
        server.run(signals: signals)
        Systemd.notify("STOPPING=1", environment: environment)
        if activated == nil { unlink(settings.socketPath) }
        close(listener)
        return .ok
    }

    static let workerSpec = CommandSpec(
        name: "__agent-run", abstract: "Run one request the agent accepted, read from fd 4, writing its reply to fd 3; the agent runs it.",
        options: [OptionSpec("admin-group", value: "group", help: "The agent's admin group.")],
        run: { try worker($0) })

    /// `vpnctl __agent-run ...`: run as root by the agent only; run by
    /// anyone else it has that user's rights and no more.
    static func worker(_ argv: [String], _ context: Context) -> Int32 {
        let output = Output(context: context, json: false, color: false)
        let parser = ArgumentParser(root: CommandSpec(name: "vpnctl", abstract: "", subcommands: [workerSpec]))
        do {
            guard case .run(let spec, let args) = try parser.parse(["__agent-run"] + argv) else {
                throw VPNError.usage("__agent-run has no help; the agent runs it") // English: __agent-run speaks English only
            }
            return VPNCLI.execute(spec, args, context, early: output)
        } catch {
            return VPNCLI.report(error, to: output)
        }
    }

    static func worker(_ inv: Invocation) throws -> ExitCode {
        let order = try AgentWorker.readOrder()
        let settings = AgentSettings(configDirectory: inv.options.configDirectory, runDirectory: inv.options.runDirectory,
                                     adminGroup: inv.args.value("admin-group") ?? AccessPolicy.defaultAdminGroup)
        let environment = inv.context.environment
        let stderr = inv.context.stderr
        let code = AgentWorker.run(order, settings: settings, path: environment["PATH"]) { line in
            stderr.write(Journal.render(Journal.tagged(.error, line.escapingControls(keepLineBreaks: false)), prefix: "vpnctl agent: ",
                                        journal: Journal.stderrIsJournal(environment)) + "\n")
        }
        return ExitCode(rawValue: code) ?? .failure
    }
}
