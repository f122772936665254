#if canImport(Glibc)
import Glibc
#endif
import CVPNShims
import FoundationEssentials
import VPNCore
import VPNSystem

/// Commands vpnctl runs itself; not listed in help.
enum InternalCommands {
    /// `vpnctl __supervise --config-dir D --run-dir R --timeout S <id>`
    static func supervise(_ argv: [String], _ context: Context) -> Int32 {
        var config = "/etc/vpnctl", run = "/run/vpnctl", timeout: Int64 = 20
        var id: UUID? = nil
        var i = 0
        while i < argv.count {
            switch argv[i] {
            case "--config-dir" where i + 1 < argv.count: config = argv[i + 1]; i += 1
            case "--run-dir" where i + 1 < argv.count: run = argv[i + 1]; i += 1
            case "--timeout" where i + 1 < argv.count: timeout = Int64(argv[i + 1]) ?? 20; i += 1
            default: id = UUID(uuidString: argv[i])
            }
            i += 1
        }
        guard let id else {
            context.stderr.write("vpnctl: __supervise needs a profile id\n")
            return 2
        }
        let supervisor = Supervisor(id: id, options: .init(configDirectory: config, runDirectory: run, startTimeout: timeout,
                                                           executable: Processes.currentExecutable(),
                                                           path: context.environment["PATH"]))
        return supervisor.run()
    }

    /// `vpnctl __exec-provider <supervisor-pid> <program> <args...>`: sets a
    /// parent-death signal, so the provider never outlives its supervisor,
    /// then execs the provider in its place.
    static func execProvider(_ argv: [String], _ context: Context) -> Int32 {
        guard argv.count >= 2, let parent = Int32(argv[0]) else { return 2 }
        if vpn_set_parent_death_signal(SIGKILL) < 0 { return 1 }
        // The supervisor may have died before the signal was armed.
        if getppid() != parent { return 1 }
        let program = argv[1]
        var cArgs: [UnsafeMutablePointer<CChar>?] = Array(argv[1...]).map { strdup($0) } + [nil]
        execv(program, &cArgs)
        context.stderr.write("vpnctl: cannot run \(program): \(Errno.current)\n")
        return 127
    }
}
