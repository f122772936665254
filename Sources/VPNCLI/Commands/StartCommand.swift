import VPNCore

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
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let (code, status) = try TunnelActions.start(inv, manager, profile, wait: !inv.args.flag("no-wait"), timeout: timeout)
        // A start by hand ends a pause that a stop began.
        if (try? OnDemandCommand.pauses(inv).set(profile.id, paused: false)) == true {
            inv.output.note(L("on-demand resumed for '\(profile.name)'"))
        }
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: "start", profile: StatusJSON(status: status)))
        } else if status.status == .connected {
            inv.output.line(L("connected '\(profile.name)' (\(status.interface ?? "?"))"))
        }
        return code
    }
}

enum StopCommand {
    /// A stop of a profile whose on-demand is on pauses it (the complaint
    /// about on-demand tunnels that cannot be turned off). Returns whether it
    /// was paused now.
    static func pauseOnDemand(_ inv: Invocation, _ profile: Profile) -> Bool {
        guard profile.onDemand.enabled, !profile.onDemand.rules.isEmpty else { return false }
        do {
            try inv.controller.runtime.prepare()
            return try OnDemandCommand.pauses(inv).set(profile.id, paused: true)
        } catch {
            // The stop matters more than the pause: it goes on, and says so.
            inv.output.note(L("warning: cannot pause on-demand for '\(profile.name)' (\(error)); the agent may start it again"))
            return false
        }
    }

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
        let manager = try inv.loadedManager()
        let all = inv.args.flag("all")
        if all == !inv.args.positionals.isEmpty {
            throw VPNError.usage(all ? L("give a profile or --all, not both") : L("Missing expected argument '<profile>' (or --all)"),
                                 hint: L("See 'vpnctl help stop'."))
        }
        let wait = !inv.args.flag("no-wait")
        if all {
            var results: [DerivedStatus] = []
            for p in manager.profiles {
                let d = try inv.controller.derive(p)
                // A kill switch left blocking by a failed tunnel is stopped too.
                guard d.isActive || d.record?.status != .disconnected && d.record != nil || d.killSwitch != nil else { continue }
                if pauseOnDemand(inv, p) && !inv.options.json { inv.output.note(L("on-demand paused for '\(p.name)'")) }
                results.append(try TunnelActions.stop(inv, p, wait: wait, timeout: timeout).1)
                if !inv.options.json { inv.output.line(L("stopped '\(p.name)'")) }
            }
            if inv.options.json { inv.output.emit(AllResult(profiles: results.map(StatusJSON.init))) }
            else if results.isEmpty { inv.output.note(L("no tunnel is running")) }
            return .ok
        }
        let profile = try manager.profile(named: inv.args.positionals[0])
        let wasRunning = try inv.controller.derive(profile).supervisorAlive
        // Paused before the stop, so that the agent does not start it again meanwhile.
        let paused = pauseOnDemand(inv, profile)
        let (code, status) = try TunnelActions.stop(inv, profile, wait: wait, timeout: timeout)
        if paused {
            inv.output.note(L("on-demand paused for '\(profile.name)': the agent will not start it (vpnctl ondemand resume \(profile.name), or start)"))
        }
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: "stop", profile: StatusJSON(status: status)))
        } else if wasRunning && wait {
            inv.output.line(L("stopped '\(profile.name)'"))
        }
        return code
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
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let current = try inv.controller.derive(profile)
        let action = current.isActive ? "stop" : "start"
        var code = ExitCode.ok
        var status: DerivedStatus
        // As stop and start do: off pauses on-demand, on resumes it.
        if action == "stop", StopCommand.pauseOnDemand(inv, profile) {
            inv.output.note(L("on-demand paused for '\(profile.name)' (vpnctl ondemand resume \(profile.name))"))
        } else if action == "start", (try? OnDemandCommand.pauses(inv).set(profile.id, paused: false)) == true {
            inv.output.note(L("on-demand resumed for '\(profile.name)'"))
        }
        do {
            (code, status) = action == "stop"
                ? try TunnelActions.stop(inv, profile, wait: true, timeout: timeout)
                : try TunnelActions.start(inv, manager, profile, wait: true, timeout: timeout)
        } catch let e as VPNError where e.code == .connectionFailed || e.code == .timedOut {
            status = try inv.controller.derive(profile)
            if inv.options.json {
                inv.output.emit(OneStatusResult(action: action, profile: StatusJSON(status: status)))
            } else {
                inv.output.line(statusCard(status, inv.output))
            }
            return e.code
        }
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: action, profile: StatusJSON(status: status)))
        } else {
            inv.output.line(statusCard(status, inv.output))
        }
        return code
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
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let status = try inv.controller.derive(profile).status
        if inv.options.json {
            inv.output.emit(Result(name: profile.name, connected: status == .connected, status: status.name))
        }
        return status == .connected ? .ok : .notConnected
    }
}
