#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// Asynchronous rtnetlink notifications (link and route changes), for the
/// supervisor's reasserting checks and `status --watch`.
public final class NetlinkMonitor {
    public let fd: Int32

    /// Groups: RTMGRP_LINK (1), RTMGRP_IPV4_ROUTE (0x40), RTMGRP_IPV6_ROUTE (0x400).
    public init(groups: UInt32 = 0x1 | 0x40 | 0x400) throws {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), NETLINK_ROUTE)
        if fd < 0 { throw SystemError("open", path: "netlink monitor socket", errno: .current) }
        var sa = sockaddr_nl()
        sa.nl_family = sa_family_t(AF_NETLINK)
        sa.nl_groups = groups
        let r = withUnsafePointer(to: &sa) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
        }
        if r < 0 {
            close(fd)
            throw SystemError("bind", path: "netlink monitor socket", errno: .current)
        }
    }

    deinit { close(fd) }

    /// Empties the socket; returns how many messages were read.
    @discardableResult
    public func drain() -> Int {
        var buf = [UInt8](repeating: 0, count: 65536)
        var count = 0
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            count += 1
        }
        return count
    }
}
