#if canImport(Glibc)
import Glibc
#endif

/// What kind of link an interface is, for labelling counters.
public enum InterfaceClass: String, Sendable, CaseIterable {
    case tunnel, wifi, ethernet, cellular, loopback, virtual, other
}

/// Classifies interfaces from the kernel's own facts: the ARPHRD type and
/// the link kind from an RTM_NEWLINK message, then, only for Ethernet-type
/// links without a kind (physical devices, which are few), whether sysfs
/// shows a wireless or a cellular device. Facts are cached for the life of
/// the object (one sample).
public final class InterfaceFacts {
    public struct Facts: Equatable, Sendable {
        public let ifindex: Int32?
        public let kind: InterfaceClass

        public init(ifindex: Int32?, kind: InterfaceClass) {
            self.ifindex = ifindex
            self.kind = kind
        }
    }

    let sysfs: String
    var cache: [String: Facts] = [:]
    /// Links from one dump: names missing from it are not asked for again.
    var dumped: Bool = false

    public init(sysfs: String = "/sys/class/net") {
        self.sysfs = sysfs
    }

    /// Facts for every link of one dump; other names classify by name alone.
    public convenience init(links: [LinkRecord], sysfs: String = "/sys/class/net") {
        self.init(sysfs: sysfs)
        dumped = true
        cache.reserveCapacity(links.count)
        for l in links { cache[l.name] = facts(of: l) }
    }

    /// Facts of a named link: one netlink request (RTM_GETLINK), no ioctls.
    public func facts(_ name: String) -> Facts {
        if let f = cache[name] { return f }
        let f: Facts
        if !dumped, let link = try? LinkDump.link(named: name, counters: false) {
            f = facts(of: link)
        } else {
            f = Facts(ifindex: nil, kind: InterfaceFacts.classifyByName(name))
        }
        cache[name] = f
        return f
    }

    public func facts(of link: LinkRecord) -> Facts {
        Facts(ifindex: link.ifindex, kind: InterfaceFacts.classify(link, sysfs: sysfsProbe))
    }

    /// Drops cached facts, so that a recreated interface shows its new ifindex.
    public func forget() {
        cache.removeAll(keepingCapacity: true)
        dumped = false
    }

    /// What sysfs shows about one device.
    public struct SysfsProbe {
        public var exists: (_ relative: String) -> Bool
        public var uevent: (_ name: String) -> String?

        public init(exists: @escaping (String) -> Bool, uevent: @escaping (String) -> String?) {
            self.exists = exists
            self.uevent = uevent
        }
    }

    lazy var sysfsProbe: SysfsProbe = {
        let root = sysfs
        return SysfsProbe(
            exists: { relative in
                var st = stat()
                return lstat("\(root)/\(relative)", &st) == 0
            },
            uevent: { name in
                (try? FileSystem.readFileIfPresent("\(root)/\(name)/uevent", followSymlinks: true))
                    .flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
            })
    }()

    /// The class of a link from its ARPHRD type and kind; sysfs is read only
    /// for Ethernet-type devices without a kind.
    public static func classify(_ link: LinkRecord, sysfs: SysfsProbe) -> InterfaceClass {
        switch link.type {
        case 772: return .loopback                              // ARPHRD_LOOPBACK
        case 65534, 512, 768, 769, 776, 778, 823: return .tunnel // NONE (tun, wireguard, xfrm), PPP, IPIP, TUNNEL6, SIT, GRE, IP6GRE
        case 519, 530: return .cellular                          // RAWIP, and PHONET-style modems
        case 801, 802, 803, 804: return .wifi                    // IEEE802.11 monitor types
        case 1:                                                  // ETHER
            if link.kind == "tun" { return .tunnel }             // a tap device
            if link.kind != nil { return .virtual }              // veth, bridge, ifb, dummy, macvlan, vlan...
            let name = link.name
            if sysfs.exists("\(name)/tun_flags") { return .tunnel }
            if !sysfs.exists("\(name)/device") { return .virtual }
            if sysfs.exists("\(name)/wireless") || sysfs.exists("\(name)/phy80211") { return .wifi }
            if let uevent = sysfs.uevent(name), uevent.containsUTF8("DEVTYPE=wwan") { return .cellular }
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
