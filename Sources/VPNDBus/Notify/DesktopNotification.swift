#if canImport(Glibc)
import Glibc
#endif

/// `vpnctl-dbus notify SUMMARY BODY [ICON]`, which `vpnctl toggle --notify`
/// runs as the calling user: one org.freedesktop.Notifications.Notify on
/// that user's session bus. It prints the notification's id; without a
/// session bus, or with no notification server on it, it says which, and
/// exits 1.
public enum DesktopNotification {
    static let usage = "usage: vpnctl-dbus notify SUMMARY BODY [ICON]"

    public static func run(_ args: [String], environment: (String) -> String?) -> Int32 {
        guard args.count == 2 || args.count == 3 else {
            fputs("vpnctl-dbus: \(usage)\n", stderr)
            return 2
        }
        guard let address = sessionBusAddress(environment) else {
            fputs("no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus\n", stderr)
            return 1
        }
        do {
            let bus = try BusConnection(address: address)
            guard let m = BusMessage.methodCall(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                                interface: "org.freedesktop.Notifications", member: "Notify",
                                                notifyArguments(summary: args[0], body: args[1], icon: args.count > 2 ? args[2] : "")) else {
                fputs("no memory for a message\n", stderr)
                return 1
            }
            let reply = try bus.call(m, timeoutMs: 5000)
            if case .uint32(let id) = reply.first { print(id) }
            return 0
        } catch {
            fputs("\(error)\n", stderr)
            return 1
        }
    }

    /// The session bus the user's desktop runs: DBUS_SESSION_BUS_ADDRESS,
    /// else the user's bus socket in $XDG_RUNTIME_DIR (systemd's dbus.socket
    /// of the user manager). Never X11 autolaunch.
    static func sessionBusAddress(_ environment: (String) -> String?) -> String? {
        if let a = environment("DBUS_SESSION_BUS_ADDRESS") { return a }
        guard let dir = environment("XDG_RUNTIME_DIR") else { return nil }
        var st = stat()
        guard stat(dir + "/bus", &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return "unix:path=" + dir + "/bus"
    }

    /// Notify's (susssasa{sv}i): from vpnctl, replacing none, the body's
    /// markup characters escaped (servers may read it as markup), shown
    /// for the server's default time.
    static func notifyArguments(summary: String, body: String, icon: String) -> [BusValue] {
        [.string("vpnctl"), .uint32(0), .string(icon), .string(summary), .string(escapeMarkup(body)),
         .array(of: "s", []), .dictionary([]), .int32(-1)]
    }

    static func escapeMarkup(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(c)
            }
        }
        return out
    }
}
