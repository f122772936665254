#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

/// What the controller asks of the system about a supervisor and what a dead
/// one left: processes, its log, and links, routes and rules in this network
/// namespace. `SystemSupervisorHost` is the real one; unit tests use a fake.
public protocol SupervisorHost {
    /// The pid is alive and started at `startTime` (nil: any start time).
    func isAlive(_ pid: pid_t, startTime: UInt64?) -> Bool
    func commandLine(of pid: pid_t) -> [String]?
    /// kill(2); the errno when it failed (ESRCH: the process is gone).
    @discardableResult
    func signal(_ pid: pid_t, _ signal: Int32) -> Errno?
    func linkIndex(named name: String) throws -> Int32?
    func linkAlias(named name: String) throws -> (index: Int32, alias: String?)?
    func deleteLink(_ name: String) throws
    func deleteRoute(_ destination: String, table: UInt32) throws
    func deleteRule(to destination: String, table: UInt32, priority: UInt32) throws
    /// The supervisor's log, opened to append (created 0600, never through a
    /// symlink, close-on-exec).
    func openLog(_ path: String) throws -> Int32
}

/// The system itself: /proc, kill(2), open(2) and rtnetlink (a socket per
/// call; only a clean-up makes more than one).
public struct SystemSupervisorHost: SupervisorHost {
    public init() {}

    public func isAlive(_ pid: pid_t, startTime: UInt64?) -> Bool { Processes.isAlive(pid, startTime: startTime) }

    public func commandLine(of pid: pid_t) -> [String]? { Processes.commandLine(of: pid) }

    @discardableResult
    public func signal(_ pid: pid_t, _ signal: Int32) -> Errno? {
        kill(pid, signal) == 0 ? nil : Errno.current
    }

    public func linkIndex(named name: String) throws -> Int32? { try NetlinkRouteSocket().linkIndex(named: name) }

    public func linkAlias(named name: String) throws -> (index: Int32, alias: String?)? { try NetlinkRouteSocket().linkAlias(named: name) }

    public func deleteLink(_ name: String) throws { try NetlinkRouteSocket().deleteLink(name) }

    public func deleteRoute(_ destination: String, table: UInt32) throws {
        try NetlinkRouteSocket().changeRoute(destination, ifindex: 0, table: table, add: false)
    }

    public func deleteRule(to destination: String, table: UInt32, priority: UInt32) throws {
        try NetlinkRouteSocket().changeRule(to: destination, table: table, priority: priority, add: false)
    }

    public func openLog(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { throw Errno.current }
        return fd
    }
}
