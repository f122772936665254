#if canImport(Glibc)
import Glibc
#endif

/// An address an interface holds, with its prefix length.
public struct InterfaceAddress: Equatable, Sendable {
    public let interface: String
    /// 4 or 16 bytes, network order.
    public let bytes: [UInt8]
    public let prefixLength: Int

    public init(interface: String, bytes: [UInt8], prefixLength: Int) {
        self.interface = interface
        self.bytes = bytes
        self.prefixLength = prefixLength
    }
}

public enum InterfaceAddresses {
    /// Every IPv4 and IPv6 address of this network namespace. The
    /// corresponding C call is getifaddrs(3) (a netlink dump in glibc).
    public static func current() throws -> [InterfaceAddress] {
        var head: UnsafeMutablePointer<ifaddrs>? = nil
        if getifaddrs(&head) != 0 { throw SystemError("read", path: "the interfaces' addresses (getifaddrs)", errno: .current) }
        defer { freeifaddrs(head) }
        var out: [InterfaceAddress] = []
        var p = head
        while let a = p {
            defer { p = a.pointee.ifa_next }
            guard let addr = a.pointee.ifa_addr, let mask = a.pointee.ifa_netmask, let name = a.pointee.ifa_name else { continue }
            switch Int32(addr.pointee.sa_family) {
            case AF_INET:
                let b = addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { bytes(of: $0.pointee.sin_addr) }
                let m = mask.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { bytes(of: $0.pointee.sin_addr) }
                out.append(InterfaceAddress(interface: String(cString: name), bytes: b, prefixLength: prefixLength(m)))
            case AF_INET6:
                let b = addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { bytes(of: $0.pointee.sin6_addr) }
                let m = mask.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { bytes(of: $0.pointee.sin6_addr) }
                out.append(InterfaceAddress(interface: String(cString: name), bytes: b, prefixLength: prefixLength(m)))
            default:
                continue
            }
        }
        return out
    }

    static func bytes<T>(of value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }

    /// The leading one bits of a netmask.
    static func prefixLength(_ mask: [UInt8]) -> Int {
        var n = 0
        for b in mask {
            if b == 0xFF { n += 8; continue }
            n += (~b).leadingZeroBitCount
            break
        }
        return n
    }
}

/// A route of the kernel's main table, as /proc/net/route and
/// /proc/net/ipv6_route print them.
public struct KernelRoute: Equatable, Sendable {
    /// 4 or 16 bytes, network order.
    public let destination: [UInt8]
    public let prefixLength: Int
    public let interface: String
    public let hasGateway: Bool

    public init(destination: [UInt8], prefixLength: Int, interface: String, hasGateway: Bool) {
        self.destination = destination
        self.prefixLength = prefixLength
        self.interface = interface
        self.hasGateway = hasGateway
    }
}

public enum KernelRoutes {
    /// The main table's IPv4 routes and the IPv6 routes (every table the
    /// kernel prints there), from the live /proc files.
    public static func current() -> [KernelRoute] {
        func text(_ path: String) -> String {
            String(decoding: (try? FileSystem.readFileIfPresent(path, followSymlinks: true)) ?? nil ?? [], as: UTF8.self)
        }
        return parse(route: text("/proc/net/route"), ipv6Route: text("/proc/net/ipv6_route"))
    }

    /// Pure: the routes in the two files' text (rejected and unreachable
    /// routes, lo's and IPv6 multicast are left out).
    public static func parse(route: String, ipv6Route: String) -> [KernelRoute] {
        var out: [KernelRoute] = []
        for line in route.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, f[0] != "lo", let dst = UInt32(f[1], radix: 16), let gw = UInt32(f[2], radix: 16),
                  let flags = UInt32(f[3], radix: 16), flags & 0x0200 == 0, let mask = UInt32(f[7], radix: 16) else { continue }
            // The kernel prints the address as a host-order integer (little-endian here).
            let bytes = (0..<4).map { UInt8(truncatingIfNeeded: dst >> (8 * $0)) }
            out.append(KernelRoute(destination: bytes, prefixLength: mask.nonzeroBitCount, interface: String(f[0]), hasGateway: gw != 0))
        }
        for line in ipv6Route.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, f[9] != "lo", f[0].utf8.count == 32, let len = Int(f[1], radix: 16), len <= 128,
                  let flags = UInt32(f[8], radix: 16), flags & 0x0200 == 0, let dst = hex(f[0]), dst[0] != 0xFF else { continue }
            out.append(KernelRoute(destination: dst, prefixLength: len, interface: String(f[9]), hasGateway: !f[4].allSatisfy { $0 == "0" }))
        }
        return out
    }

    static func hex(_ s: Substring) -> [UInt8]? {
        let u = Array(s.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for i in stride(from: 0, to: u.count, by: 2) {
            guard let v = UInt8(String(decoding: u[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(v)
        }
        return out.count == 16 ? out : nil
    }
}
