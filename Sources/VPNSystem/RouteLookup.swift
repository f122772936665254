#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// The kernel's answer to "how would a packet to X leave?": RTM_GETROUTE
/// over a plain rtnetlink socket (libnl has no route-get call).
public struct RouteDecision: Equatable, Sendable {
    public let outputInterfaceIndex: Int32
    public let gateway: [UInt8]?

    public init(outputInterfaceIndex: Int32, gateway: [UInt8]?) {
        self.outputInterfaceIndex = outputInterfaceIndex
        self.gateway = gateway
    }
}

public enum RouteLookup {
    /// Returns nil when the kernel has no route (ENETUNREACH and friends).
    /// `mark`: the route a packet with that mark takes (RTA_MARK), as policy
    /// routing by mark chooses it.
    public static func route(to address: [UInt8], mark: UInt32? = nil) throws -> RouteDecision? {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        if fd < 0 { throw SystemError("open", path: "netlink socket", errno: .current) }
        defer { close(fd) }
        let family: UInt8 = address.count == 16 ? UInt8(AF_INET6) : UInt8(AF_INET)
        // nlmsghdr (16) + rtmsg (12) + rtattr RTA_DST (4 + len, aligned)
        let attrLen = 4 + address.count
        let dstEnd = 16 + 12 + ((attrLen + 3) & ~3)
        let total = dstEnd + (mark == nil ? 0 : 8)
        var msg = [UInt8](repeating: 0, count: total)
        func put32(_ v: UInt32, at o: Int) { withUnsafeBytes(of: v.littleEndian) { for i in 0..<4 { msg[o + i] = $0[i] } } }
        func put16(_ v: UInt16, at o: Int) { withUnsafeBytes(of: v.littleEndian) { for i in 0..<2 { msg[o + i] = $0[i] } } }
        put32(UInt32(total), at: 0)
        put16(26 /* RTM_GETROUTE */, at: 4)
        put16(1 /* NLM_F_REQUEST */, at: 6)
        put32(1, at: 8)
        msg[16] = family
        msg[17] = UInt8(address.count * 8)  // rtm_dst_len
        put16(UInt16(attrLen), at: 28)
        put16(1 /* RTA_DST */, at: 30)
        for (i, b) in address.enumerated() { msg[32 + i] = b }
        if let mark {
            put16(8, at: dstEnd)
            put16(16 /* RTA_MARK */, at: dstEnd + 2)
            put32(mark, at: dstEnd + 4)
        }
        var sa = sockaddr_nl()
        sa.nl_family = sa_family_t(AF_NETLINK)
        let sent = msg.withUnsafeBytes { buf in
            withUnsafePointer(to: &sa) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buf.baseAddress, buf.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        if sent < 0 { throw SystemError("send", path: "RTM_GETROUTE", errno: .current) }
        var reply = [UInt8](repeating: 0, count: 8192)
        let n = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw SystemError("receive", path: "RTM_GETROUTE", errno: .current) }
        return parseReply(Array(reply[0..<n]))
    }

    static func u16(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) | Int(b[o + 1]) << 8 }
    static func u32(_ b: [UInt8], _ o: Int) -> Int { u16(b, o) | u16(b, o + 2) << 16 }

    /// Parses an RTM_NEWROUTE reply (or an NLMSG_ERROR, which means no route).
    public static func parseReply(_ b: [UInt8]) -> RouteDecision? {
        guard b.count >= 16 else { return nil }
        let len = min(u32(b, 0), b.count)
        let type = u16(b, 4)
        guard type == 24 /* RTM_NEWROUTE */, len >= 28 else { return nil }
        var o = 28
        var oif: Int32? = nil
        var gateway: [UInt8]? = nil
        while o + 4 <= len {
            let alen = u16(b, o), atype = u16(b, o + 2)
            guard alen >= 4, o + alen <= len else { break }
            let payload = Array(b[(o + 4)..<(o + alen)])
            if atype == 4 /* RTA_OIF */, payload.count >= 4 { oif = Int32(truncatingIfNeeded: u32(payload, 0)) }
            if atype == 5 /* RTA_GATEWAY */ { gateway = payload }
            o += (alen + 3) & ~3
        }
        guard let oif else { return nil }
        return RouteDecision(outputInterfaceIndex: oif, gateway: gateway)
    }
}
