#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNSystem

/// A system that answers from tables and records what it is asked to change.
public final class FakeSupervisorHost: SupervisorHost {
    public init() {}

    /// Live processes and their command lines.
    public var processes: [pid_t: [String]] = [:]
    public var links: [String: (index: Int32, alias: String?)] = [:]
    /// "PREFIX table T"
    public var routes: Set<String> = []
    public var rules: Set<String> = []
    public var calls: [String] = []

    public func isAlive(_ pid: pid_t, startTime: UInt64?) -> Bool { processes[pid] != nil }

    public func commandLine(of pid: pid_t) -> [String]? { processes[pid] }

    public func signal(_ pid: pid_t, _ signal: Int32) -> Errno? {
        calls.append("signal \(pid) \(signal)")
        return processes.removeValue(forKey: pid) == nil ? Errno(ESRCH) : nil
    }

    public func linkIndex(named name: String) throws -> Int32? { links[name]?.index }
    /// Processes in another network namespace (their links are not in `links`).
    public var inOtherNamespaces: Set<pid_t> = []
    public func sharesNetworkNamespace(with pid: pid_t) -> Bool { !inOtherNamespaces.contains(pid) }

    public func linkAlias(named name: String) throws -> (index: Int32, alias: String?)? { links[name] }

    public func deleteLink(_ name: String) throws {
        calls.append("delete link \(name)")
        if links.removeValue(forKey: name) == nil { throw Errno(ENODEV) }
    }

    public func deleteRoute(_ destination: String, table: UInt32) throws {
        calls.append("delete route \(destination) table \(table)")
        if routes.remove("\(destination) table \(table)") == nil { throw Errno(ESRCH) }
    }

    public func deleteRule(to destination: String, table: UInt32, priority: UInt32) throws {
        calls.append("delete rule to \(destination) table \(table) priority \(priority)")
        if rules.remove("\(destination) table \(table)") == nil { throw Errno(ENOENT) }
    }

    /// Why the log cannot be opened (nil: it opens, on /dev/null).
    public var logError: Errno? = nil
    public func openLog(_ path: String) throws -> Int32 {
        if let logError { throw logError }
        calls.append("open log \(path)")
        return open("/dev/null", O_WRONLY | O_CLOEXEC)
    }

    /// Supervisors "spawned": nothing runs; `onSpawn` plays the supervisor's
    /// part (its first record) before the pid is handed back.
    public var spawned: [(pid: pid_t, argv: [String], environment: [String: String])] = []
    public var spawnError: Errno? = nil
    public var nextPid: pid_t = 5000
    public var onSpawn: ((pid_t, [String]) throws -> Void)? = nil
    public func spawnSupervisor(_ executable: String, _ argv: [String], environment: [String: String],
                                passFDs: [Int32], logFD: Int32) throws -> pid_t {
        calls.append("spawn \(argv.dropFirst().joined(separator: " "))")
        if let spawnError { throw spawnError }
        let pid = nextPid
        nextPid += 1
        spawned.append((pid, argv, environment))
        processes[pid] = argv
        try onSpawn?(pid, argv)
        return pid
    }

    public func watchExit(of pid: pid_t) -> ProcessWatch? { nil }
}
