#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

/// What the controller asks of the system about a supervisor and what a dead
/// one left: processes (spawning the supervisor among them), its log, and
/// links, routes and rules in this network namespace. `SystemSupervisorHost`
/// is the real one; unit tests use a fake.
public protocol SupervisorHost {
    /// The pid is alive and started at `startTime` (nil: any start time).
    func isAlive(_ pid: pid_t, startTime: UInt64?) -> Bool
    func commandLine(of pid: pid_t) -> [String]?
    /// kill(2); the errno when it failed (ESRCH: the process is gone).
    @discardableResult
    func signal(_ pid: pid_t, _ signal: Int32) -> Errno?
    func linkIndex(named name: String) throws -> Int32?
    /// Whether process `pid` is in this process's network namespace (true
    /// when that cannot be read): links are looked up only there.
    func sharesNetworkNamespace(with pid: pid_t) -> Bool
    func linkAlias(named name: String) throws -> (index: Int32, alias: String?)?
    func deleteLink(_ name: String) throws
    func deleteRoute(_ destination: String, table: UInt32) throws
    func deleteRule(to destination: String, table: UInt32, priority: UInt32) throws
    /// An app rule's mark rule (see `MarkRule`).
    func deleteMarkRule(_ rule: MarkRule) throws
    /// The supervisor's log, opened to append (created 0600, never through a
    /// symlink, close-on-exec).
    func openLog(_ path: String) throws -> Int32
    /// Starts the detached supervisor `argv` (in a session of its own), its
    /// output on `logFD` and `notifyFD` as its fd 3; returns its pid.
    /// `passFDs` become fds 3, 4, ... in the supervisor (the doorbell, the credential line).
    func spawnSupervisor(_ executable: String, _ argv: [String], environment: [String: String],
                         passFDs: [Int32], logFD: Int32) throws -> pid_t
    /// A pidfd that becomes readable when `pid` exits (nil: gone, or no pidfds).
    func watchExit(of pid: pid_t) -> ProcessWatch?
}

extension SupervisorHost {
    /// A host that cannot delete rules says so (the clean-up then names nothing deleted).
    public func deleteMarkRule(_ rule: MarkRule) throws {
        throw SystemError("delete the rule", path: rule.description, errno: Errno(EOPNOTSUPP))
    }
}

/// The system itself: /proc, kill(2), posix_spawn, pidfds, the log file and
/// rtnetlink (a socket per call; only a clean-up makes more than one).
public struct SystemSupervisorHost: SupervisorHost {
    public init() {}

    public func isAlive(_ pid: pid_t, startTime: UInt64?) -> Bool { Processes.isAlive(pid, startTime: startTime) }

    public func commandLine(of pid: pid_t) -> [String]? { Processes.commandLine(of: pid) }

    @discardableResult
    public func signal(_ pid: pid_t, _ signal: Int32) -> Errno? {
        kill(pid, signal) == 0 ? nil : Errno.current
    }

    public func linkIndex(named name: String) throws -> Int32? { try NetlinkRouteSocket().linkIndex(named: name) }

    public func sharesNetworkNamespace(with pid: pid_t) -> Bool {
        guard let theirs = NetworkNamespace.of(String(pid)), let ours = NetworkNamespace.current() else { return true }
        return theirs == ours
    }

    public func linkAlias(named name: String) throws -> (index: Int32, alias: String?)? { try NetlinkRouteSocket().linkAlias(named: name) }

    public func deleteLink(_ name: String) throws { try NetlinkRouteSocket().deleteLink(name) }

    public func deleteRoute(_ destination: String, table: UInt32) throws {
        try NetlinkRouteSocket().changeRoute(destination, ifindex: 0, table: table, add: false)
    }

    public func deleteRule(to destination: String, table: UInt32, priority: UInt32) throws {
        try NetlinkRouteSocket().changeRule(to: destination, table: table, priority: priority, add: false)
    }

    public func deleteMarkRule(_ rule: MarkRule) throws {
        try NetlinkRouteSocket().changeMarkRule(family: rule.family, priority: rule.priority, table: rule.table, mark: rule.mark,
                                                invert: rule.invert, suppressPrefixLength: rule.suppressPrefixLength, add: false)
    }

    /// A FIFO or a device in the log's place is refused rather than blocking the start.
    public func openLog(_ path: String) throws -> Int32 {
        // The caller names the path; the errno alone says why.
        do { return try FileSystem.openForAppending(path, mode: 0o600) } catch let e as SystemError { throw e.errno }
    }

    public func spawnSupervisor(_ executable: String, _ argv: [String], environment: [String: String],
                                passFDs: [Int32], logFD: Int32) throws -> pid_t {
        try Processes.spawn(executable, argv, environment: environment, passFDs: passFDs, outputFD: logFD, newSession: true)
    }

    public func watchExit(of pid: pid_t) -> ProcessWatch? { ProcessWatch(pid: pid) }
}
