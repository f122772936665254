import VPNCore
import VPNService

enum ToggleCommand {
    static let spec = CommandSpec(
        name: "toggle", abstract: L("Connect if disconnected, disconnect if connected; then show a status card."),
        examples: [
            "vpnctl toggle office",
            "vpnctl toggle office --notify",
        ],
        options: [OptionSpec("timeout", value: "seconds", help: L("How long to wait (default 20).")),
                  OptionSpec("notify", help: L("Show the status card as a desktop notification too (on your session bus, through vpnctl-dbus).")),
                  OptionSpec("password-file", value: "file", help: L("Read the password the profile does not store from the first line of FILE (your own, mode 0600).")),
                  OptionSpec("open", help: L("Open a web sign-in's URL in your browser (xdg-open, as you; never as root)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let timeout = try inv.timeoutSeconds(default: 20)
        let spinner = Spinner(for: inv, when: true)
        // The on-demand change comes first, as a stop or start by hand makes it.
        let report = try TunnelRendering.during(inv, spinner, prompt: CredentialPrompt(inv, spinner: spinner), onDemand: { name, change in
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
        if inv.args.flag("notify") { DesktopNotice.show(report.status, inv) }
        return report.failure ?? .ok
    }
}
