#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The system operations a tunnel bring-up needs. The real one talks to the
/// kernel; unit tests use a fake that records the sequence and can fail at step N.
public protocol TunnelSystem: AnyObject {
    func interfaceExists(_ name: String) -> Bool
    func uapiSocketIsLive(_ name: String) -> Bool
    func createTun(_ name: String) throws -> Int32
    /// Marks a link as created by vpnctl for one profile (its alias).
    func markLink(_ name: String, _ mark: String) throws
    func closeFD(_ fd: Int32)
    func listenUAPI(_ name: String) throws -> Int32
    /// The UAPI socket file at `name`'s path now (nil when there is none):
    /// the path is shared by every namespace, and anything may remove it.
    func uapiSocketFile(_ name: String) -> UAPISocketFile?
    /// Removes `name`'s UAPI socket if it is still `file`: never another
    /// process's socket that took the path meanwhile.
    func removeUAPI(_ name: String, ifStill file: UAPISocketFile?)
    func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32) throws -> pid_t
    func stopProvider(_ pid: pid_t)
    /// A provider that runs as `user` (a plugin), tied to this process like the others.
    func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                       as user: UserIdentity) throws -> pid_t
    /// A plugin: the executable a checked walk opened, run by its fd (not
    /// its path looked up again), as `user`, tied to this process.
    func spawnProvider(_ executable: CheckedExecutable, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                       as user: UserIdentity) throws -> pid_t
    /// A pair of connected stream sockets (close-on-exec).
    func socketPair() throws -> (Int32, Int32)
    func ifindex(_ name: String) throws -> Int32
    func addAddress(_ cidr: String, ifindex: Int32) throws
    /// The address without the kernel's route to its subnet.
    func addAddressWithoutPrefixRoute(_ cidr: String, ifindex: Int32) throws
    func deleteAddress(_ cidr: String, ifindex: Int32) throws
    func setMTU(_ name: String, _ mtu: Int) throws
    func setUp(_ name: String) throws
    func addRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws
    func deleteRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws
    func deleteLink(_ name: String) throws
    func uapi(_ name: String, _ request: String) throws -> String
    func route(to address: IPAddress) -> RouteDecision?
    /// A persistent tun (no packet information) that a provider attaches to by name.
    func createPersistentTun(_ name: String) throws
    /// A link's name and whether it can carry traffic (up, with carrier).
    func linkState(index: Int32) -> (name: String, usable: Bool)?
    /// The interface's counters, or nil when there is no such link.
    func counters(_ name: String) -> InterfaceCounters?
    /// A program in `path` (or the default PATH), or nil.
    func which(_ program: String, path: String?) -> String?
    /// A listening unix socket at `path` (a stale file there is replaced).
    func listenUnix(_ path: String) throws -> Int32
    /// Sends `signal` to a child and waits up to `timeoutMs` before SIGKILL.
    func terminate(_ pid: pid_t, signal: Int32, timeoutMs: Int)
    func startTime(of pid: pid_t) -> UInt64?
    /// A policy-routing rule `to prefix lookup table` (enforceRoutes).
    func changeRule(to prefix: String, table: UInt32, priority: UInt32, add: Bool) throws
    /// A policy-routing rule by packet mark (app rules).
    func changeMarkRule(_ rule: MarkRule, add: Bool) throws
}

extension TunnelSystem {
    public func changeRule(to prefix: String, table: UInt32, priority: UInt32, add: Bool) throws {
        throw SystemError("change a routing rule to", path: prefix, errno: Errno(EOPNOTSUPP))
    }
    public func changeMarkRule(_ rule: MarkRule, add: Bool) throws {
        throw SystemError("change a routing rule", path: rule.description, errno: Errno(EOPNOTSUPP))
    }
    public func addAddressWithoutPrefixRoute(_ cidr: String, ifindex: Int32) throws { try addAddress(cidr, ifindex: ifindex) }
}

extension TunnelSystem {
    public func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                              as user: UserIdentity) throws -> pid_t {
        throw SystemError("run \(path) as", path: user.name, errno: Errno(ENOSYS))
    }
    public func spawnProvider(_ executable: CheckedExecutable, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                              as user: UserIdentity) throws -> pid_t {
        throw SystemError("run \(executable.resolved) as", path: user.name, errno: Errno(ENOSYS))
    }
    public func socketPair() throws -> (Int32, Int32) { try UnixSocket.pair() }
}

/// A UAPI socket file, by st_dev and st_ino: the same pair is the same socket.
public struct UAPISocketFile: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

public final class KernelTunnelSystem: TunnelSystem {
    let netlink: NetlinkRouteSocket
    public static let uapiDirectory = "/var/run/wireguard"

    public init() throws {
        netlink = try NetlinkRouteSocket()
    }

    public static func uapiPath(_ name: String) -> String { "\(uapiDirectory)/\(name).sock" }

    public func interfaceExists(_ name: String) -> Bool {
        (try? netlink.linkIndex(named: name)) != nil
    }

    public func uapiSocketIsLive(_ name: String) -> Bool {
        UnixSocket.isLive(KernelTunnelSystem.uapiPath(name))
    }

    public func createTun(_ name: String) throws -> Int32 {
        try TunDevice.create(name: name, packetInformation: true).fd
    }

    public func markLink(_ name: String, _ mark: String) throws { try netlink.setAlias(name, mark) }

    public func closeFD(_ fd: Int32) { close(fd) }

    public func listenUAPI(_ name: String) throws -> Int32 {
        mkdir(KernelTunnelSystem.uapiDirectory, 0o755)
        let path = KernelTunnelSystem.uapiPath(name)
        // A socket file nobody answers on is left over from a dead process.
        if FileSystem.exists(path) && !UnixSocket.isLive(path) { unlink(path) }
        return try UnixSocket.listen(at: path)
    }

    public func uapiSocketFile(_ name: String) -> UAPISocketFile? {
        guard let info = try? FileSystem.info(KernelTunnelSystem.uapiPath(name)), info.isSocket else { return nil }
        return UAPISocketFile(device: info.device, inode: info.inode)
    }

    public func removeUAPI(_ name: String, ifStill file: UAPISocketFile?) {
        guard let file, uapiSocketFile(name) == file else { return }
        unlink(KernelTunnelSystem.uapiPath(name))
    }

    public func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32) throws -> pid_t {
        try Processes.spawnTied(path, argv, environment: environment, passFDs: passFDs, outputFD: logFD)
    }

    public func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                              as user: UserIdentity) throws -> pid_t {
        try Processes.spawnTied(path, argv, environment: environment, passFDs: passFDs, outputFD: logFD, as: user)
    }

    public func spawnProvider(_ executable: CheckedExecutable, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                              as user: UserIdentity) throws -> pid_t {
        try Spawn.tied(executable, argv, environment: environment, passFDs: passFDs, outputFD: logFD, as: user)
    }

    public func stopProvider(_ pid: pid_t) {
        Processes.terminate(pid, signal: SIGTERM, timeoutMs: 3000)
    }

    public func ifindex(_ name: String) throws -> Int32 {
        guard let i = try netlink.linkIndex(named: name) else {
            throw SystemError("find", path: "interface \(name)", errno: Errno(ENODEV))
        }
        return i
    }

    public func addAddress(_ cidr: String, ifindex: Int32) throws { try netlink.addAddress(cidr, ifindex: ifindex) }
    public func addAddressWithoutPrefixRoute(_ cidr: String, ifindex: Int32) throws {
        try netlink.addAddress(cidr, ifindex: ifindex, noPrefixRoute: true)
    }
    public func deleteAddress(_ cidr: String, ifindex: Int32) throws { try netlink.deleteAddress(cidr, ifindex: ifindex) }
    public func setMTU(_ name: String, _ mtu: Int) throws {
        guard (68...65535).contains(mtu) else {
            throw SystemError("set an MTU of \(mtu) (68–65535) on", path: "interface \(name)", errno: Errno(EINVAL))
        }
        try netlink.setLink(name, mtu: UInt32(mtu))
    }
    public func setUp(_ name: String) throws { try netlink.setLink(name, up: true) }

    public func addRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws {
        try netlink.changeRoute(prefix, ifindex: ifindex, gateway: gateway, table: table, add: true)
    }

    public func deleteRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws {
        try netlink.changeRoute(prefix, ifindex: ifindex, gateway: gateway, table: table, add: false)
    }

    public func deleteLink(_ name: String) throws { try netlink.deleteLink(name) }

    public func uapi(_ name: String, _ request: String) throws -> String {
        let fd = try UnixSocket.connect(to: KernelTunnelSystem.uapiPath(name))
        defer { close(fd) }
        return try UnixSocket.exchange(fd: fd, request: request)
    }

    public func route(to address: IPAddress) -> RouteDecision? {
        try? RouteLookup.route(to: address.bytes)
    }

    public func createPersistentTun(_ name: String) throws {
        close(try TunDevice.create(name: name, packetInformation: false, persistent: true).fd)
    }

    public func linkState(index: Int32) -> (name: String, usable: Bool)? {
        guard let link = try? netlink.linkInfo(index: index) else { return nil }
        return (link.name, link.info.isUp && link.info.hasCarrier)
    }

    public func counters(_ name: String) -> InterfaceCounters? {
        (try? netlink.counters(named: name))??.counters
    }

    public func which(_ program: String, path: String?) -> String? { Processes.which(program, path: path) }

    public func listenUnix(_ path: String) throws -> Int32 {
        unlink(path)
        return try UnixSocket.listen(at: path)
    }

    public func terminate(_ pid: pid_t, signal: Int32, timeoutMs: Int) {
        Processes.terminate(pid, signal: signal, timeoutMs: timeoutMs)
    }

    public func startTime(of pid: pid_t) -> UInt64? { Processes.startTime(of: pid) }

    public func changeRule(to prefix: String, table: UInt32, priority: UInt32, add: Bool) throws {
        try netlink.changeRule(to: prefix, table: table, priority: priority, add: add)
    }

    public func changeMarkRule(_ rule: MarkRule, add: Bool) throws {
        try netlink.changeMarkRule(family: rule.family, priority: rule.priority, table: rule.table, mark: rule.mark,
                                   invert: rule.invert, suppressPrefixLength: rule.suppressPrefixLength, add: add)
    }
}
