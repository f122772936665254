#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// What kind of link an interface is, for labelling counters.
public enum InterfaceClass: String, Sendable, CaseIterable {
    case tunnel, wifi, ethernet, cellular, loopback, virtual, other
}

/// Classifies interfaces from the kernel's own facts: the ARPHRD type and
/// ifindex (two ioctls on one socket), then, only for Ethernet-type links,
/// whether sysfs shows a tun device, a physical device, or a wireless one.
/// Facts are cached for the life of the object (one run).
public final class InterfaceFacts {
    public struct Facts: Equatable, Sendable {
        public let ifindex: Int32?
        public let kind: InterfaceClass
    }

    let sock: Int32
    let sysfs: String
    var cache: [String: Facts] = [:]

    public init(sysfs: String = "/sys/class/net") {
        sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.sysfs = sysfs
    }

    deinit { if sock >= 0 { close(sock) } }

    public func facts(_ name: String) -> Facts {
        if let f = cache[name] { return f }
        var index: Int32 = 0, type: Int32 = 0
        let f: Facts
        if sock >= 0, vpn_link_facts(sock, name, &index, &type) == 0 {
            f = Facts(ifindex: index, kind: classify(name, arphrd: type))
        } else {
            f = Facts(ifindex: nil, kind: InterfaceFacts.classifyByName(name))
        }
        cache[name] = f
        return f
    }

    /// Drops cached facts, so that a recreated interface shows its new ifindex.
    public func forget() { cache.removeAll(keepingCapacity: true) }

    func exists(_ relative: String) -> Bool {
        var st = stat()
        return lstat("\(sysfs)/\(relative)", &st) == 0
    }

    func classify(_ name: String, arphrd: Int32) -> InterfaceClass {
        switch arphrd {
        case 772: return .loopback                              // ARPHRD_LOOPBACK
        case 65534, 512, 768, 769, 776, 778, 823: return .tunnel // NONE (tun, wireguard, xfrm), PPP, IPIP, TUNNEL6, SIT, GRE, IP6GRE
        case 519, 530: return .cellular                          // RAWIP, and PHONET-style modems
        case 801, 802, 803, 804: return .wifi                    // IEEE802.11 monitor types
        case 1:                                                  // ETHER
            // One ethtool ioctl names the driver; no sysfs path walk for the
            // (many) virtual links.
            var driver = [CChar](repeating: 0, count: 64), bus = [CChar](repeating: 0, count: 64)
            if vpn_link_driver(sock, name, &driver, 64, &bus, 64) == 0 {
                let d = String(cString: driver), b = String(cString: bus)
                if d == "tun" { return .tunnel }                 // a tap device
                if b.isEmpty || b == "N/A" || b == "tap" { return .virtual }
            } else {
                if exists("\(name)/tun_flags") { return .tunnel }
                if !exists("\(name)/device") { return .virtual } // veth, bridge, ifb, dummy, macvlan...
            }
            if exists("\(name)/wireless") || exists("\(name)/phy80211") { return .wifi }
            if let uevent = try? FileSystem.readFileIfPresent("\(sysfs)/\(name)/uevent", followSymlinks: true),
               String(decoding: uevent, as: UTF8.self).containsUTF8("DEVTYPE=wwan") { return .cellular }
            return .ethernet
        default:
            return .other
        }
    }

    /// Only when the kernel has no facts (e.g. a fixture's names).
    public static func classifyByName(_ name: String) -> InterfaceClass {
        func has(_ prefixes: String...) -> Bool { prefixes.contains { name.hasPrefix($0) } }
        if name == "lo" { return .loopback }
        if has("utun", "tun", "tap", "wg", "ipsec", "ppp", "vti", "xfrm") { return .tunnel }
        if has("wl") { return .wifi }
        if has("ww", "rmnet") { return .cellular }
        if has("eth", "en") { return .ethernet }
        if has("veth", "br", "docker", "virbr", "dummy", "ifb", "bond") { return .virtual }
        return .other
    }
}
