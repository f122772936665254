#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNSystem

/// `toggle --notify`: the status card as a desktop notification too. It is
/// shown by `vpnctl-dbus notify` (installed beside vpnctl: it links libdbus,
/// vpnctl stays static), run as the calling user with that user's session
/// bus. What keeps it from showing is a note; the card is printed anyway.
enum DesktopNotice {
    static func show(_ d: DerivedStatus, _ inv: Invocation) {
        let helper = Processes.besideSelf("vpnctl-dbus")
        guard access(helper, X_OK) == 0 else {
            return inv.output.note(L("no desktop notification: vpnctl-dbus is not installed beside vpnctl (\(helper))"))
        }
        let plain = Output(context: inv.context, json: false, color: false)
        let card = plain.terminalText(statusCard(d, plain), color: false)
        var environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
        for key in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"] {
            if let value = inv.context.environment[key], !value.isEmpty { environment[key] = value }
        }
        do {
            let r = try Command.run(helper, [helper, "notify", plain.terminalText(d.name, color: false), card, icon(d)], environment: environment)
            if !r.succeeded {
                let reason = r.output.split(separator: "\n").last.map(String.init) ?? "vpnctl-dbus exited with \(r.status)"
                inv.output.note(L("no desktop notification: \(reason)"))
            }
        } catch {
            inv.output.note(L("no desktop notification: \(error)"))
        }
    }

    /// A freedesktop icon name for the status.
    static func icon(_ d: DerivedStatus) -> String {
        switch d.status {
        case .connected, .connecting, .reasserting: return "network-vpn"
        default: return d.lastDisconnectError != nil && d.stopReason != .userInitiated ? "network-error" : "network-offline"
        }
    }
}
