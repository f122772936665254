#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// Commands vpnctl runs itself; not listed in help.
enum InternalCommands {
    /// `vpnctl __supervise --config-dir D --run-dir R --timeout S [--notify-fd N] <id>`
    static func supervise(_ argv: [String], _ context: Context) -> Int32 {
        var config = "/etc/vpnctl", run = "/run/vpnctl", timeout: Int64 = 20
        var id: UUID? = nil
        var notifyFD: Int32 = -1
        var i = 0
        while i < argv.count {
            switch argv[i] {
            case "--config-dir" where i + 1 < argv.count: config = argv[i + 1]; i += 1
            case "--run-dir" where i + 1 < argv.count: run = argv[i + 1]; i += 1
            case "--timeout" where i + 1 < argv.count: timeout = Int64(argv[i + 1]) ?? 20; i += 1
            case "--notify-fd" where i + 1 < argv.count: notifyFD = Int32(argv[i + 1]) ?? -1; i += 1
            default: id = UUID(uuidString: argv[i])
            }
            i += 1
        }
        guard let id else {
            context.stderr.write("vpnctl: __supervise needs a profile id\n")
            return 2
        }
        let supervisor = Supervisor(id: id, options: .init(configDirectory: config, runDirectory: run, startTimeout: timeout,
                                                           path: context.environment["PATH"], notifyFD: notifyFD))
        return supervisor.run()
    }
}
