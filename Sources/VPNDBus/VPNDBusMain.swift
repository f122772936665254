#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// `vpnctl-dbus`: org.vpnctl.VPN1 on the system bus (or on --address),
/// beside the agent, on the same store, run directory and policy. It is
/// an executable of its own because Debian's static libdbus-1.a needs
/// libsystemd, which Debian ships only shared: vpnctl stays static.
public enum VPNDBusMain {
    static let usage = """
    usage: vpnctl-dbus [--address ADDRESS] [--config-dir DIR] [--run-dir DIR] [--admin-group GROUP]
           vpnctl-dbus notify SUMMARY BODY [ICON]

    Serves org.vpnctl.VPN1 on the system bus (or the bus at ADDRESS, a D-Bus
    address such as unix:path=/run/dbus/system_bus_socket). Runs as root.
    With notify, shows a desktop notification on the caller's session bus
    (what vpnctl toggle --notify runs, as the calling user). See vpnctl-dbus(8).
    """

    public static func run(_ argv: [String]) -> Int32 {
        func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
        if argv.count > 1 && argv[1] == "notify" { return DesktopNotification.run(Array(argv.dropFirst(2)), environment: env) }
        var options: [String: String] = [:]
        var i = 1
        while i < argv.count {
            let a = argv[i]
            if a == "--help" || a == "-h" { print(usage); return 0 }
            guard ["--address", "--config-dir", "--run-dir", "--admin-group"].contains(a), i + 1 < argv.count else {
                fputs("vpnctl-dbus: unknown or incomplete option \(a.quotedForMessage)\nhint: see vpnctl-dbus --help\n", stderr)
                return ExitCode.usage.rawValue
            }
            options[a] = argv[i + 1]
            i += 2
        }
        let settings = AgentSettings(configDirectory: options["--config-dir"] ?? env("VPNCTL_CONFIG_DIR") ?? "/etc/vpnctl",
                                     runDirectory: options["--run-dir"] ?? env("VPNCTL_RUN_DIR") ?? "/run/vpnctl",
                                     adminGroup: options["--admin-group"] ?? AccessPolicy.defaultAdminGroup)
        guard geteuid() == 0 else {
            fputs("vpnctl-dbus: it runs as root (it starts tunnels for the users the policy names)\n", stderr)
            return ExitCode.permissionDenied.rawValue
        }
        // The supervisor is the vpnctl beside this executable.
        let supervisor = Processes.besideSelf("vpnctl")
        guard access(supervisor, X_OK) == 0 else {
            fputs("vpnctl-dbus: no vpnctl beside it (\(supervisor)); install both from one package\n", stderr)
            return ExitCode.providerUnavailable.rawValue
        }
        signal(SIGPIPE, SIG_IGN)
        let address = options["--address"] ?? BusConnection.systemBusAddress
        do {
            // The watch behind PropertiesChanged needs the run directory from the start.
            try TunnelController(configDirectory: settings.configDirectory, runDirectory: settings.runDirectory).runtime.prepare()
            let bus = try BusConnection(address: address)
            let service = VPNBusService(bus: bus, settings: settings, searchPath: env("PATH"), supervisor: supervisor)
            service.polkit = PolkitAuthority(address: address)
            let loop = EventLoop()
            try bus.attach(to: loop)
            try service.signalTransitions(on: loop)
            service.signalStoreChanges(on: loop)
            try service.answerInBackground(on: loop)
            try service.publish()
            fputs("vpnctl-dbus: \(ProfileObjects.busName) on \(address) as \(bus.uniqueName)\n", stderr)
            loop.run()
            fputs("vpnctl-dbus: the bus closed the connection\n", stderr)
            return ExitCode.failure.rawValue
        } catch {
            fputs("vpnctl-dbus: \(error)\n", stderr)
            return ExitCode.failure.rawValue
        }
    }

    public static func exit(_ code: Int32) -> Never { Glibc.exit(code) }
}
