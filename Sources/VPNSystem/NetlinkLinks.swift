#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// One link as the kernel describes it in an RTM_NEWLINK message.
public struct LinkRecord: Equatable, Sendable {
    public var name: String
    public var ifindex: Int32
    /// The ARPHRD_* type (ifinfomsg.ifi_type).
    public var type: UInt16
    /// IFLA_INFO_KIND ("tun", "veth", "ifb", ...); nil for a device without
    /// rtnl_link_ops, which is what a physical NIC is.
    public var kind: String?
    public var flags: UInt32
    /// From IFLA_STATS64, folded the way /proc/net/dev prints them; nil when
    /// the request skipped statistics.
    public var counters: InterfaceCounters?

    public init(name: String, ifindex: Int32, type: UInt16, kind: String? = nil, flags: UInt32 = 0,
                counters: InterfaceCounters? = nil) {
        self.name = name
        self.ifindex = ifindex
        self.type = type
        self.kind = kind
        self.flags = flags
        self.counters = counters
    }
}

/// Links over a plain rtnetlink socket: one RTM_GETLINK dump for all of them,
/// or one request for a named one. libnl's link cache allocates an object and
/// a hash entry per link; with 10,000 links parsing the messages in place is
/// several times cheaper.
public enum LinkDump {
    /// Every link in the namespace, in one dump; `counters: false` drops them.
    public static func all(counters: Bool = true) throws -> [LinkRecord] {
        var links: [LinkRecord] = []
        links.reserveCapacity(256)
        try forEach { link in
            var link = link
            if !counters { link.counters = nil }
            links.append(link)
        }
        return links
    }

    /// Every link in the namespace, handed to `body` as its message is
    /// parsed (no array of 10,000 records in between).
    public static func forEach(_ body: (LinkRecord) -> Void) throws {
        let socket = try RawRouteSocket()
        try socket.send(request(name: nil))
        try socket.receiveUntilDone { message in
            if let link = parseLink(message) { body(link) }
        }
    }

    /// One link by name, or nil when there is none.
    public static func link(named name: String, counters: Bool = true) throws -> LinkRecord? {
        guard !name.isEmpty, name.utf8.count < 16 else { return nil }
        let socket = try RawRouteSocket()
        try socket.send(request(name: name))
        var found: LinkRecord? = nil
        do {
            try socket.receiveOne { found = parseLink($0) }
            if !counters { found?.counters = nil }
        } catch let e as SystemError where e.errno == Errno(ENODEV) {
            return nil
        }
        return found
    }

    /// The links in one netlink datagram, and whether the answer ends in it.
    public static func links(in datagram: UnsafeRawBufferPointer) throws -> (links: [LinkRecord], complete: Bool) {
        var links: [LinkRecord] = []
        let complete = try RawRouteSocket.messages(in: datagram) { if let l = parseLink($0) { links.append(l) } }
        return (links, complete)
    }

    static let getLink: UInt16 = 18, newLink: UInt16 = 16
    static let ifName: UInt16 = 3, linkInfo: UInt16 = 18, stats64: UInt16 = 23, infoKind: UInt16 = 1

    /// nlmsghdr, ifinfomsg and, for one link, IFLA_IFNAME. No IFLA_EXT_MASK:
    /// with one, the kernel first walks every link to size the dump's
    /// buffers (rtnl_calcit()), which with 10,000 links costs more (5 ms)
    /// than the IPv6 statistics RTEXT_FILTER_SKIP_STATS would leave out.
    static func request(name: String?) -> [UInt8] {
        var m = NetlinkMessage(type: getLink, flags: name == nil ? 0x301 /* REQUEST | DUMP */ : 0x1)
        m.append(bytes: [UInt8](repeating: 0, count: 16))   // ifinfomsg, AF_UNSPEC
        if let name { m.appendAttribute(ifName, bytes: Array(name.utf8) + [0]) }
        return m.finished()
    }

    /// Parses one RTM_NEWLINK message (header included); nil for any other.
    public static func parseLink(_ m: UnsafeRawBufferPointer) -> LinkRecord? {
        guard m.count >= 32, m.loadUnaligned(fromByteOffset: 4, as: UInt16.self) == newLink else { return nil }
        let type = m.loadUnaligned(fromByteOffset: 18, as: UInt16.self)
        let index = m.loadUnaligned(fromByteOffset: 20, as: Int32.self)
        let flags = m.loadUnaligned(fromByteOffset: 24, as: UInt32.self)
        var link = LinkRecord(name: "", ifindex: index, type: type, flags: flags)
        var seenName = false
        forEachAttribute(m, from: 32) { kind, payload in
            switch kind {
            case ifName:
                link.name = cString(payload)
                seenName = true
            case stats64 where payload.count >= 16 * 8:
                link.counters = counters(payload)
            case linkInfo:
                forEachAttribute(payload, from: 0) { k, p in if k == infoKind { link.kind = cString(p) } }
            default:
                break
            }
        }
        guard seenName else { return nil }
        if link.counters != nil { link.counters!.name = link.name }
        return link
    }

    /// struct rtnl_link_stats64, folded as net/core/net-procfs.c prints
    /// /proc/net/dev: its rx "drop" column is rx_dropped + rx_missed_errors.
    static func counters(_ p: UnsafeRawBufferPointer) -> InterfaceCounters {
        func u(_ i: Int) -> UInt64 { p.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self) }
        return InterfaceCounters(name: "", rxBytes: u(2), rxPackets: u(0), rxErrors: u(4), rxDropped: u(6) &+ u(15),
                                 txBytes: u(3), txPackets: u(1), txErrors: u(5), txDropped: u(7))
    }

    static func cString(_ p: UnsafeRawBufferPointer) -> String {
        let end = p.firstIndex(of: 0) ?? p.count
        return String(decoding: UnsafeRawBufferPointer(rebasing: p[0..<end]), as: UTF8.self)
    }

    /// Calls `body` with each rtattr's type (flags masked off) and payload.
    static func forEachAttribute(_ m: UnsafeRawBufferPointer, from start: Int,
                                 _ body: (UInt16, UnsafeRawBufferPointer) -> Void) {
        var o = start
        while o + 4 <= m.count {
            let len = Int(m.loadUnaligned(fromByteOffset: o, as: UInt16.self))
            let kind = m.loadUnaligned(fromByteOffset: o + 2, as: UInt16.self) & 0x3FFF
            guard len >= 4, o + len <= m.count else { return }
            body(kind, UnsafeRawBufferPointer(rebasing: m[(o + 4)..<(o + len)]))
            o += (len + 3) & ~3
        }
    }
}

/// A netlink request being built: header, fixed part, attributes.
struct NetlinkMessage {
    var bytes: [UInt8]

    init(type: UInt16, flags: UInt16, sequence: UInt32 = 1) {
        bytes = [UInt8](repeating: 0, count: 16)
        put(type, at: 4)
        put(flags, at: 6)
        put(sequence, at: 8)
    }

    mutating func put<T: FixedWidthInteger>(_ v: T, at o: Int) {
        withUnsafeBytes(of: v.littleEndian) { for (i, b) in $0.enumerated() { bytes[o + i] = b } }
    }

    mutating func append(bytes more: [UInt8]) { bytes += more }

    mutating func appendAttribute(_ type: UInt16, bytes payload: [UInt8]) {
        let start = bytes.count
        bytes += [UInt8](repeating: 0, count: 4)
        put(UInt16(4 + payload.count), at: start)
        put(type, at: start + 2)
        bytes += payload
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    mutating func appendAttribute(_ type: UInt16, u32 v: UInt32) {
        appendAttribute(type, bytes: withUnsafeBytes(of: v.littleEndian) { Array($0) })
    }

    func finished() -> [UInt8] {
        var m = self
        m.put(UInt32(bytes.count), at: 0)
        return m.bytes
    }
}

/// A NETLINK_ROUTE socket without libnl, for requests whose answers are
/// parsed in place.
final class RawRouteSocket {
    let fd: Int32
    var buffer: UnsafeMutableRawBufferPointer

    init() throws {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
        if fd < 0 { throw SystemError("open", path: "netlink socket", errno: .current) }
        // The kernel fills at most 32 KiB per dump step; 64 KiB never truncates.
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    }

    deinit {
        close(fd)
        buffer.deallocate()
    }

    func send(_ message: [UInt8]) throws {
        var sa = sockaddr_nl()
        sa.nl_family = sa_family_t(AF_NETLINK)
        let sent = message.withUnsafeBytes { buf in
            withUnsafePointer(to: &sa) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buf.baseAddress, buf.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        if sent < 0 { throw SystemError("send", path: "netlink request", errno: .current) }
    }

    /// Receives a dump, calling `body` with each message, until NLMSG_DONE.
    func receiveUntilDone(_ body: (UnsafeRawBufferPointer) -> Void) throws {
        while true {
            if try receiveBatch(body) { return }
        }
    }

    /// Receives the answer to a single request.
    func receiveOne(_ body: (UnsafeRawBufferPointer) -> Void) throws {
        _ = try receiveBatch(body)
    }

    /// One recv; true when the answer is complete (NLMSG_DONE or an ack).
    func receiveBatch(_ body: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        var n = recv(fd, buffer.baseAddress, buffer.count, 0)
        while n < 0 && errno == EINTR { n = recv(fd, buffer.baseAddress, buffer.count, 0) }
        if n < 0 { throw SystemError("receive", path: "netlink answer", errno: .current) }
        if n == 0 { return true }
        return try RawRouteSocket.messages(in: UnsafeRawBufferPointer(rebasing: buffer[0..<n]), body)
    }

    /// Splits one datagram into netlink messages and calls `body` with each
    /// (header included). True when the answer ends in it: NLMSG_DONE, an
    /// ack, a message without NLM_F_MULTI, or a truncated message. A kernel
    /// error (NLMSG_ERROR with a code) is thrown.
    static func messages(in all: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        var o = 0
        while o + 16 <= all.count {
            let len = Int(all.loadUnaligned(fromByteOffset: o, as: UInt32.self))
            let type = all.loadUnaligned(fromByteOffset: o + 4, as: UInt16.self)
            let flags = all.loadUnaligned(fromByteOffset: o + 6, as: UInt16.self)
            guard len >= 16, len <= all.count - o else { return true }
            let message = UnsafeRawBufferPointer(rebasing: all[o..<(o + len)])
            if type == 3 /* NLMSG_DONE */ { return true }
            if type == 2 /* NLMSG_ERROR */ {
                let code = len >= 20 ? message.loadUnaligned(fromByteOffset: 16, as: Int32.self) : 0
                if code != 0 { throw SystemError("ask the kernel for", path: "links", errno: Errno(code == Int32.min ? 0 : -code)) }
                return true
            }
            body(message)
            if flags & 0x2 /* NLM_F_MULTI */ == 0 { return true }
            o += (len + 3) & ~3
        }
        return false
    }
}
