import VPNCore
import VPNService

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
