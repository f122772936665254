import FoundationEssentials

/// What on-demand rules are matched against: the primary interface (the one
/// holding the default route, vpnctl's own tunnels left out) and the system
/// resolver's search domains and servers. Unit tests build these by hand.
public struct NetworkSnapshot: Equatable, Sendable {
    public struct PrimaryInterface: Equatable, Sendable {
        public var name: String
        public var ifindex: Int32
        public var type: LinkType
        /// The Wi-Fi network's name, when it is known.
        public var ssid: String?

        public init(name: String, ifindex: Int32, type: LinkType, ssid: String? = nil) {
            self.name = name
            self.ifindex = ifindex
            self.type = type
            self.ssid = ssid
        }
    }

    /// An interface's type for on-demand, from kernel facts.
    public enum LinkType: String, Sendable {
        case ethernet, wifi, cellular, other
    }

    public var primary: PrimaryInterface?
    public var searchDomains: [String]
    public var dnsServers: [String]

    public init(primary: PrimaryInterface?, searchDomains: [String] = [], dnsServers: [String] = []) {
        self.primary = primary
        self.searchDomains = searchDomains
        self.dnsServers = dnsServers
    }

    /// One line for logs and `ondemand test`, in the language in use (the
    /// agent's log: English).
    public var summary: String {
        let link: String
        switch (primary, primary?.ssid) {
        case (let p?, let ssid?): link = L("primary \(p.name) (\(p.type.rawValue), SSID \(ssid))")
        case (let p?, nil): link = L("primary \(p.name) (\(p.type.rawValue))")
        case (nil, _): link = L("no default route")
        }
        let domains = searchDomains.isEmpty ? L("none") : searchDomains.joined(separator: " ")
        let servers = dnsServers.isEmpty ? L("none") : dnsServers.joined(separator: " ")
        return L("\(link); search domains: \(domains); DNS servers: \(servers)")
    }
}

/// What kernel facts make an interface, for on-demand: Wi-Fi when the device
/// is wireless (sysfs `wireless`/`phy80211`, or an 802.11 ARPHRD type),
/// cellular for a wwan DEVTYPE or a raw-IP modem, and Ethernet for any other
/// ARPHRD_ETHER link, a veth or a bridge included. `stats` keeps its own,
/// finer classes.
public enum OnDemandLinkClass {
    public static func classify(arphrd: UInt16, kind: String?, wireless: Bool, devtype: String?) -> NetworkSnapshot.LinkType {
        switch arphrd {
        case 801, 802, 803, 804: return .wifi                   // ARPHRD_IEEE80211*
        case 519, 530: return .cellular                          // ARPHRD_RAWIP, PHONET
        case 1:                                                  // ARPHRD_ETHER
            if kind == "tun" { return .other }                   // a tap device
            if wireless || devtype == "wlan" { return .wifi }
            if devtype == "wwan" { return .cellular }
            return .ethernet
        default: return .other
        }
    }
}

/// Routes from /proc/net/route and /proc/net/ipv6_route (the main table of
/// this network namespace).
public enum DefaultRoutes {
    public struct Route: Equatable, Sendable {
        public var interface: String
        public var metric: Int
    }

    /// The IPv4 default routes: destination and mask 0, the route up (RTF_UP).
    public static func parseIPv4(_ text: String) -> [Route] {
        var out: [Route] = []
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, f[1] == "00000000", f[7] == "00000000",
                  let flags = Int(f[3], radix: 16), flags & 1 != 0, let metric = Int(f[6]) else { continue }
            out.append(Route(interface: String(f[0]), metric: metric))
        }
        return out
    }

    /// The IPv6 default routes (::/0), leaving out the kernel's unreachable
    /// entries on lo.
    public static func parseIPv6(_ text: String) -> [Route] {
        var out: [Route] = []
        for line in text.split(separator: "\n") {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 10, f[0] == String(repeating: "0", count: 32), f[1] == "00", f[9] != "lo",
                  let flags = Int(f[8], radix: 16), flags & 1 != 0, let metric = Int(f[5], radix: 16) else { continue }
            out.append(Route(interface: String(f[9]), metric: metric))
        }
        return out
    }

    /// The interface of the best default route whose interface `ignore` does not exclude.
    public static func primary(_ routes: [Route], ignore: (String) -> Bool) -> String? {
        routes.filter { !ignore($0.interface) }.min { $0.metric < $1.metric }?.interface
    }
}

/// The search domains and servers of resolv.conf text (`domain` counts as a
/// search domain, as glibc reads it when there is no `search`).
public enum ResolvConfFacts {
    public static func parse(_ text: String) -> (searchDomains: [String], servers: [String]) {
        var search: [String] = [], domain: [String] = [], servers: [String] = []
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let key = words.first else { continue }
            switch key {
            case "search": search = Array(words.dropFirst())
            case "domain": domain = Array(words.dropFirst().prefix(1))
            case "nameserver": if words.count > 1 { servers.append(words[1]) }
            default: break
            }
        }
        return (search.isEmpty ? domain : search, servers)
    }
}
