import VPNCore
import VPNService

enum StartCommand {
    static let spec = CommandSpec(
        name: "start", aliases: ["up", "connect"], abstract: L("Start a profile's tunnel and wait until it is connected."),
        discussion: L("""
        Waits by default: exit 0 once connected, 4 when the connection fails (with the
        reason), 3 on timeout. --no-wait returns once the request is accepted.
        A persistent tunnel (--persist, or the profile's 'persistent') is not ended
        by a server that does not answer: at the timeout the start exits 3 and the
        tunnel stays, connecting, trying again until the server answers or 'stop'.
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
                  OptionSpec("timeout", value: "seconds", help: L("How long the first handshake may take (default 20).")),
                  OptionSpec("persist", help: L("Keep the tunnel when the server does not answer: it stays connecting and tries again until it answers or 'vpnctl stop' (WireGuard; as the profile's 'persistent').")),
                  OptionSpec("password-file", value: "file", help: L("Read the password the profile does not store from the first line of FILE (your own, mode 0600).")),
                  OptionSpec("save-password", help: L("Once connected, store the password that was typed (or read) as the profile's secret; a one-time code is never stored.")),
                  OptionSpec("open", help: L("Open a web sign-in's URL in your browser (xdg-open, as you; never as root)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        if inv.args.flag("wait") && inv.args.flag("no-wait") {
            throw VPNError.usage(L("'--wait' and '--no-wait' cannot be used together"), hint: L("See 'vpnctl help start'."))
        }
        let timeout = try inv.timeoutSeconds(default: 20)
        let wait = !inv.args.flag("no-wait")
        let spinner = Spinner(for: inv, when: wait)
        let prompt = CredentialPrompt(inv, spinner: spinner)
        let report = try TunnelRendering.during(inv, spinner, prompt: prompt) {
            try inv.service.start(inv.args.positionals[0], wait: wait, timeout: timeout, changes: inv.options.verbose,
                                  persist: inv.args.flag("persist"), $0)
        }
        TunnelRendering.notes(inv, report)
        if inv.args.flag("save-password") { try savePassword(inv, prompt, report) }
        if report.onDemand == .resumed { inv.output.note(L("on-demand resumed for '\(report.status.name)'")) }
        let status = report.status
        if inv.options.json {
            inv.output.emit(OneStatusResult(action: "start", profile: StatusJSON(status: status)))
        } else if status.status == .connected {
            inv.output.line(L("connected '\(status.name)' (\(status.interface ?? "?"))"))
        }
        return .ok
    }

    /// --save-password: the password asked for, stored as the profile's
    /// secret once the start connected (a refused one is not kept).
    static func savePassword(_ inv: Invocation, _ prompt: CredentialPrompt, _ report: TunnelReport) throws {
        guard let password = prompt.password else {
            inv.output.note(L("--save-password: no password was asked for; nothing stored"))
            return
        }
        guard report.status.status == .connected else {
            inv.output.note(L("--save-password: not connected, so the password is not stored"))
            return
        }
        guard inv.service is LocalService else {
            inv.output.note(L("--save-password: through the agent the password is not stored; root stores it with 'vpnctl secret set \(report.status.name)' and the profile's password secret (vpnctl show \(report.status.name))"))
            return
        }
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        guard let name = profile.protocol.model.passwordSecret else { return }
        try manager.store.secrets.set(profile.id, name: name, value: Array(password.utf8))
        inv.output.note(L("stored the password as secret '\(name)' of '\(profile.name)'"))
    }
}
