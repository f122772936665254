#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// The SSID a Wi-Fi interface is connected to, from nl80211 over a plain
/// generic-netlink socket (no libnl-genl): the family's id from the
/// controller (CTRL_CMD_GETFAMILY), then NL80211_CMD_GET_INTERFACE, whose
/// answer carries NL80211_ATTR_SSID while the interface is associated.
public enum WirelessSSID {
    /// nil when the kernel has no nl80211, the interface is not wireless, or
    /// it is not associated.
    public static func ssid(ifindex: Int32) -> String? {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 16 /* NETLINK_GENERIC */)
        if fd < 0 { return nil }
        defer { close(fd) }
        var tv = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let getFamily = message(type: 0x10 /* GENL_ID_CTRL */, command: 3 /* CTRL_CMD_GETFAMILY */, version: 1,
                                attributes: [(2 /* CTRL_ATTR_FAMILY_NAME */, Array("nl80211".utf8) + [0])])
        guard let reply = exchange(fd, getFamily),
              let id = attributes(reply)[1 /* CTRL_ATTR_FAMILY_ID */], id.count >= 2 else { return nil }
        let family = UInt16(id[0]) | UInt16(id[1]) << 8
        var index = UInt32(bitPattern: ifindex).littleEndian
        let getInterface = message(type: family, command: 5 /* NL80211_CMD_GET_INTERFACE */, version: 0,
                                   attributes: [(3 /* NL80211_ATTR_IFINDEX */, withUnsafeBytes(of: &index) { Array($0) })])
        guard let answer = exchange(fd, getInterface) else { return nil }
        return ssid(inAnswer: answer)
    }

    /// NL80211_ATTR_SSID of an NL80211_CMD_NEW_INTERFACE answer.
    public static func ssid(inAnswer b: [UInt8]) -> String? {
        guard let raw = attributes(b)[52 /* NL80211_ATTR_SSID */], !raw.isEmpty, raw.count <= 32 else { return nil }
        return String(decoding: raw, as: UTF8.self)
    }

    /// A generic-netlink request: nlmsghdr, genlmsghdr, then attributes.
    public static func message(type: UInt16, command: UInt8, version: UInt8, attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var body: [UInt8] = [command, version, 0, 0]
        for (t, value) in attributes {
            let len = 4 + value.count
            body += [UInt8(len & 0xFF), UInt8(len >> 8), UInt8(t & 0xFF), UInt8(t >> 8)] + value
            body += [UInt8](repeating: 0, count: (4 - len % 4) % 4)
        }
        let total = 16 + body.count
        var m: [UInt8] = []
        func put32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { m += $0 } }
        func put16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { m += $0 } }
        put32(UInt32(total)); put16(type); put16(1 /* NLM_F_REQUEST */); put32(1); put32(0)
        return m + body
    }

    /// The top-level attributes of one generic-netlink message (an
    /// NLMSG_ERROR or anything shorter than the headers has none).
    public static func attributes(_ b: [UInt8]) -> [UInt16: [UInt8]] {
        guard b.count >= 20 else { return [:] }
        let len = min(Int(b[0]) | Int(b[1]) << 8 | Int(b[2]) << 16 | Int(b[3]) << 24, b.count)
        let type = Int(b[4]) | Int(b[5]) << 8
        guard type >= 0x10, len >= 20 else { return [:] }
        var out: [UInt16: [UInt8]] = [:]
        var o = 20
        while o + 4 <= len {
            let alen = Int(b[o]) | Int(b[o + 1]) << 8
            let atype = (UInt16(b[o + 2]) | UInt16(b[o + 3]) << 8) & 0x3FFF
            guard alen >= 4, o + alen <= len else { break }
            if out[atype] == nil { out[atype] = Array(b[(o + 4)..<(o + alen)]) }
            o += (alen + 3) & ~3
        }
        return out
    }

    static func exchange(_ fd: Int32, _ request: [UInt8]) -> [UInt8]? {
        var sa = sockaddr_nl()
        sa.nl_family = sa_family_t(AF_NETLINK)
        let sent = request.withUnsafeBytes { buf in
            withUnsafePointer(to: &sa) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buf.baseAddress, buf.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        if sent < 0 { return nil }
        var reply = [UInt8](repeating: 0, count: 16384)
        let n = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(reply[0..<n]) : nil
    }
}
