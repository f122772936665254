import VPNCore
import VPNService

enum StartCommand {
    static let spec = CommandSpec(
        name: "start", aliases: ["up", "connect"], abstract: L("Start a profile's tunnel and wait until it is connected."),
        discussion: L("""
        Waits by default: exit 0 once connected, 4 when the connection fails (with the
        reason), 3 on timeout. --no-wait returns once the request is accepted.
        Starting a connected profile is exit 0 with a note.
        The tunnel's DNS goes to the resolver of this network namespace
        (systemd-resolved, resolvconf or /etc/resolv.conf in place) until it stops.
        With includeAllNetworks in the profile, an nftables kill switch goes in
        before the provider starts and blocks everything outside the tunnel; it
        stays if the tunnel fails, until 'vpnctl stop'.
        """),
        examples: [
            "vpnctl start office --wait",
            "vpnctl up office --timeout 60",
            "vpnctl start office --no-wait",
        ],
        options: [OptionSpec("wait", help: L("Wait until connected (the default).")),
                  OptionSpec("no-wait", help: L("Return as soon as the start request is accepted.")),
                  OptionSpec("timeout", value: "seconds", help: L("How long the first handshake may take (default 20)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        if inv.args.flag("wait") && inv.args.flag("no-wait") {
            throw VPNError.usage(L("'--wait' and '--no-wait' cannot be used together"), hint: L("See 'vpnctl help start'."))
        }
        let timeout = try inv.timeoutSeconds(default: 20)
        let wait = !inv.args.flag("no-wait")
        let spinner = Spinner(for: inv, when: wait)
        let report = try TunnelRendering.during(inv, spinner) {
            try inv.service.start(inv.args.positionals[0], wait: wait, timeout: timeout, changes: inv.options.verbose, $0)
        }
        TunnelRendering.notes(inv, report)
        if report.onDemand == .resumed { inv.output.note(L("on-demand resumed for '\(report.status.name)'")) }
        let status = report.status
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: "start", profile: StatusJSON(status: status)))
        } else if status.status == .connected {
            inv.output.line(L("connected '\(status.name)' (\(status.interface ?? "?"))"))
        }
        return .ok
    }
}

enum StopCommand {
    static let spec = CommandSpec(
        name: "stop", aliases: ["down", "disconnect"], abstract: L("Stop a profile's tunnel (by its UUID; other tunnels are untouched)."),
        discussion: L("""
        Waits until the tunnel is down and its interface, routes and provider are gone.
        Stopping a stopped profile is exit 0 with a note; what a dead supervisor left
        behind is cleaned up (its DNS restored from the backup it recorded). Stop is
        what removes a kill switch, also one a failed tunnel left blocking. A profile
        with on-demand on is paused first, so that the agent does not start it again
        (until 'vpnctl ondemand resume' or 'vpnctl start').
        """),
        examples: [
            "vpnctl stop office",
            "vpnctl down --all",
        ],
        options: [OptionSpec("all", help: L("Stop every running profile.")),
                  OptionSpec("no-wait", help: L("Return as soon as the stop request is sent.")),
                  OptionSpec("timeout", value: "seconds", help: L("How long to wait (default 10)."))],
        positionals: [PositionalSpec("profile", optional: true, help: L("The profile's name or UUID."))],
        run: run)

    struct AllResult: Encodable {
        var schemaVersion = 1
        let action = "stop"
        let profiles: [StatusJSON]
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let timeout = try inv.timeoutSeconds(default: 10)
        let all = inv.args.flag("all")
        if all == !inv.args.positionals.isEmpty {
            throw VPNError.usage(all ? L("give a profile or --all, not both") : L("Missing expected argument '<profile>' (or --all)"),
                                 hint: L("See 'vpnctl help stop'."))
        }
        let wait = !inv.args.flag("no-wait")
        let spinner = Spinner(for: inv, when: wait)
        if all {
            let report = try TunnelRendering.during(inv, spinner) {
                try inv.service.stopAll(wait: wait, timeout: timeout, changes: inv.options.verbose, $0)
            }
            if inv.options.json {
                inv.output.emit(AllResult(profiles: report.stopped.map { StatusJSON(status: $0.status) }))
                return .ok
            }
            for r in report.stopped {
                if r.onDemand == .paused { inv.output.note(L("on-demand paused for '\(r.status.name)'")) }
                TunnelRendering.notes(inv, r)
                inv.output.line(L("stopped '\(r.status.name)'"))
            }
            if report.stopped.isEmpty { inv.output.note(L("no tunnel is running")) }
            return .ok
        }
        let report = try TunnelRendering.during(inv, spinner) {
            try inv.service.stop(inv.args.positionals[0], wait: wait, timeout: timeout, changes: inv.options.verbose, $0)
        }
        TunnelRendering.notes(inv, report)
        let name = report.status.name
        if report.onDemand == .paused {
            inv.output.note(L("on-demand paused for '\(name)': the agent will not start it (vpnctl ondemand resume \(name), or start)"))
        }
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: "stop", profile: StatusJSON(status: report.status)))
        } else if report.wasRunning && wait {
            inv.output.line(L("stopped '\(name)'"))
        }
        return .ok
    }
}

enum ToggleCommand {
    static let spec = CommandSpec(
        name: "toggle", abstract: L("Connect if disconnected, disconnect if connected; then show a status card."),
        examples: [
            "vpnctl toggle office",
        ],
        options: [OptionSpec("timeout", value: "seconds", help: L("How long to wait (default 20)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let timeout = try inv.timeoutSeconds(default: 20)
        let spinner = Spinner(for: inv, when: true)
        // The on-demand change comes first, as a stop or start by hand makes it.
        let report = try TunnelRendering.during(inv, spinner, onDemand: { name, change in
            inv.output.note(change == .paused ? L("on-demand paused for '\(name)' (vpnctl ondemand resume \(name))")
                                              : L("on-demand resumed for '\(name)'"))
        }) {
            try inv.service.toggle(inv.args.positionals[0], timeout: timeout, changes: inv.options.verbose, $0)
        }
        if report.outcome != .failed { TunnelRendering.notes(inv, report) }
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: report.action, profile: StatusJSON(status: report.status)))
        } else {
            inv.output.line(statusCard(report.status, inv.output))
        }
        return report.failure ?? .ok
    }
}

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
