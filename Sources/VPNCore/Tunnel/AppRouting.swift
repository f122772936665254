#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// Per-app VPN, as the supervisor puts it in place (the profile's `appRules`):
///
/// - nftables, in the profile's own table (`KillSwitchRules`): a socket made
///   in a covered cgroup gets the profile's packet mark and conntrack mark
///   (a `route` chain, so the kernel routes the packet again with the mark);
///   replies get the mark back from conntrack before reverse-path filtering;
///   the rerouted packets leave with the address of the interface they really
///   leave by (masquerade: the first route lookup chose the source before the
///   mark existed); and the matched programs' DNS queries go where their
///   traffic goes.
/// - Routing: the tunnel's routes in a table of their own (`table`), never in
///   main. `include`: `fwmark M lookup T`, so only marked traffic sees them.
///   `exclude`: `lookup main suppress_prefixlength 0` (the underlay's own,
///   more specific routes, as before the tunnel), then `not fwmark M lookup T`,
///   so everything but the marked traffic uses the tunnel.
/// - `src_valid_mark` on, so that reverse-path filtering looks replies up
///   with their mark.
public enum AppRouting {
    /// The packet mark and routing table of a profile's app rules: 0x7661
    /// ("va") and the profile id's first 16 bits, so that two profiles with
    /// app rules each have their own.
    public static func mark(for id: UUID) -> UInt32 {
        0x7661_0000 | (UInt32(hex(id).prefix(4), radix: 16) ?? 0)
    }

    static func hex(_ id: UUID) -> String { id.lowercasedString.filter { $0 != "-" } }

    /// The rules' priorities: ahead of main (32766) and of enforceRoutes (5208).
    public static let rulePriority: UInt32 = 5210
    /// Include mode's fallback to the tunnel's table, behind main and default (32767).
    public static let fallbackPriority: UInt32 = 32800

    /// The name systemd units and vpnctl's cgroups carry for this profile.
    public static func key(for id: UUID) -> String {
        String(hex(id).prefix(12))
    }

    /// The cgroup vpnctl owns for a profile where systemd does not manage
    /// the tree: `vpnctl run` puts programs here; the rules always cover it.
    public static func ownedCgroup(for id: UUID) -> String { "/vpnctl/\(key(for: id))" }

    /// The slice `vpnctl run` asks systemd for, under whichever manager runs it.
    public static func slice(for id: UUID) -> String { "vpnctl-\(key(for: id)).slice" }

    /// Whether systemd manages the cgroup tree here (it is PID 1).
    public static var systemdManagesCgroups: Bool { FileSystem.exists("/run/systemd/system") }

    /// The cgroups the rules cover now: each match found in the tree, the
    /// profile's own cgroup and its slice (one under a user's manager only for
    /// a user the profile's policy lets use the rules: `mayStart`). A cgroup
    /// below another covered one is left out: the ancestor's match covers it,
    /// and so is a name nft could not take literally.
    public static func covered(_ rules: AppRules, profile: Profile, tree: CgroupTree,
                               mayStart: (UInt32) -> Bool) -> [String] {
        var found: [String] = []
        let patterns = rules.matches.compactMap { m -> String? in if case .unit(let u) = m { return u } else { return nil } }
        let slice = slice(for: profile.id)
        // Under a user's own manager the user names the cgroups: a match there
        // counts only for a user the profile's policy lets use it.
        var allowed: [UInt32: Bool] = [:]
        found += tree.find { name in
            name == slice || patterns.contains { fnmatch($0, name, 0) == 0 }
        }.filter { path in
            guard let uid = userManager(of: path) else { return true }
            if let known = allowed[uid] { return known }
            let may = mayStart(uid)
            allowed[uid] = may
            return may
        }
        for case .cgroup(let path) in rules.matches where tree.exists(path) { found.append(path) }
        let owned = ownedCgroup(for: profile.id)
        if tree.exists(owned) { found.append(owned) }
        // A directory name is anyone's choice under their own manager: only
        // what nft can take literally goes into the table.
        let unique = Set(found).filter { AppRules.cgroupProblem($0) == nil }
        return unique.filter { p in !unique.contains { $0 != p && CgroupTree.isWithin(p, $0) } }.sorted()
    }

    /// The subnets of a tunnel's addresses ("198.19.12.2/24" is 198.19.12.0/24;
    /// a /32 or /128 has none).
    public static func subnets(of addresses: [String]) -> [String] {
        addresses.compactMap(CIDR.init).filter { $0.prefixLength < ($0.address.isIPv6 ? 128 : 32) }.map { $0.network.description }
    }

    /// The uid whose user manager (`user@UID.service`) a cgroup is under, if any.
    public static func userManager(of path: String) -> UInt32? {
        for part in path.split(separator: "/") where part.hasPrefix("user@") && part.hasSuffix(".service") {
            return UInt32(part.dropFirst(5).dropLast(8))
        }
        return nil
    }
}

/// What the profile's nftables table adds for its app rules (rendered by
/// `KillSwitchRules`, so that the marks and the kill switch change in one
/// transaction).
public struct AppMarking: Equatable, Sendable {
    public struct Cgroup: Equatable, Sendable {
        public var level: Int
        /// As nft resolves it: relative to /sys/fs/cgroup.
        public var nftPath: String
        public init(level: Int, nftPath: String) {
            self.level = level
            self.nftPath = nftPath
        }
    }
    public var mode: AppRules.Mode
    public var mark: UInt32
    public var cgroups: [Cgroup] = []
    /// Where the matched programs' DNS queries go instead (a DNAT per
    /// family): include, the tunnel's servers; exclude, the underlay's.
    public var dnsTo: [String] = []
    /// Addresses the matched programs' queries are taken from (exclude: the
    /// tunnel's servers, which the system resolver now names); empty: any.
    public var dnsFrom: [String] = []

    public init(mode: AppRules.Mode, mark: UInt32) {
        self.mode = mode
        self.mark = mark
    }

    var hexMark: String { "0x" + String(mark, radix: 16) }

    /// The app chains, for `tunnel` (the tunnel's interface, once it exists)
    /// and `killSwitch` (includeAllNetworks).
    func render(tunnel: String?, killSwitch: Bool) -> [String] {
        let m = hexMark
        var out = ["\tchain apps_mark {", "\t\ttype route hook output priority mangle; policy accept;",
                   // A socket that carries the mark itself (verify's probe) gets its connections marked too;
                   // one with a mark of its own (a provider's) is left alone.
                   "\t\tmeta mark \(m) ct mark set \(m) return",
                   "\t\tmeta mark != 0 return"]
        for c in cgroups where AppRules.cgroupProblem("/" + c.nftPath) == nil {
            out.append("\t\tsocket cgroupv2 level \(c.level) \"\(c.nftPath)\" meta mark set \(m) ct mark set \(m)")
        }
        out += ["\t}", "\tchain apps_restore {", "\t\ttype filter hook prerouting priority mangle; policy accept;",
                "\t\tct mark \(m) meta mark set \(m)", "\t}"]
        let v4 = dnsTo.first { !$0.contains(":") }, v6 = dnsTo.first { $0.contains(":") }
        if v4 != nil || v6 != nil {
            out += ["\tchain apps_dns {", "\t\ttype nat hook output priority -100; policy accept;"]
            let from4 = dnsFrom.filter { !$0.contains(":") }, from6 = dnsFrom.filter { $0.contains(":") }
            func set(_ l: [String]) -> String { l.count == 1 ? l[0] : "{ " + l.joined(separator: ", ") + " }" }
            for proto in ["udp", "tcp"] {
                // A query to a local stub (127.0.0.53) stays local: a DNAT could not leave with a loopback source.
                if let v4, dnsFrom.isEmpty || !from4.isEmpty {
                    out.append("\t\tmeta mark \(m) \(from4.isEmpty ? "ip daddr != 127.0.0.0/8" : "ip daddr \(set(from4))") \(proto) dport 53 dnat ip to \(v4)")
                }
                if let v6, dnsFrom.isEmpty || !from6.isEmpty {
                    out.append("\t\tmeta mark \(m) \(from6.isEmpty ? "ip6 daddr != ::1" : "ip6 daddr \(set(from6))") \(proto) dport 53 dnat ip6 to \(v6)")
                }
            }
            out.append("\t}")
        }
        if let tunnel, mode == .include {
            // Only the matched programs' packets leave by the tunnel (the fallback rule routes the
            // first lookup of every socket there when nothing else does).
            out += ["\tchain apps_only {", "\t\ttype filter hook postrouting priority filter; policy accept;",
                    "\t\toifname \"\(tunnel)\" meta mark != \(m) counter drop comment \"not a program of the app rules\"", "\t}"]
        }
        if let tunnel {
            out += ["\tchain apps_nat {", "\t\ttype nat hook postrouting priority 100; policy accept;",
                    "\t\tmeta mark \(m) oifname \(mode == .include ? "" : "!= ")\"\(tunnel)\" masquerade", "\t}"]
        }
        if killSwitch && mode == .include {
            // The matched programs: through the tunnel or nowhere. In the output
            // hook the interface is still the one chosen before the mark; here
            // it is the one the packet leaves by.
            out += ["\tchain apps_guard {", "\t\ttype filter hook postrouting priority filter; policy accept;",
                    // Local services (a resolver stub on 127.0.0.53 among them) stay reachable.
                    "\t\toifname \"lo\" accept",
                    "\t\tmeta mark \(m) \(tunnel.map { "oifname != \"\($0)\" " } ?? "")counter drop comment \"per-app kill switch\"",
                    "\t}"]
        }
        return out
    }
}

/// The record of what a profile's app rules put in place, for `vpnctl apps`,
/// `vpnctl run` and the clean-up after a dead supervisor.
public struct AppRoutingRecord: Codable, Equatable, Sendable {
    public var mode: AppRules.Mode
    public var mark: UInt32
    public var table: UInt32
    /// The cgroups the rules cover now (paths from the cgroup2 root).
    public var covered: [String]
    /// The cgroup vpnctl made for `vpnctl run` (removed when empty).
    public var ownedCgroup: String?
    /// The cgroup2 mount the paths are relative to.
    public var cgroupMount: String
    /// The rules' families: 4 and/or 6.
    public var families: [Int]
    /// The sysctls turned on for the app rules (set back at the end).
    public var sysctls: [String] = []
    public init(mode: AppRules.Mode, mark: UInt32, table: UInt32, covered: [String], ownedCgroup: String?,
                cgroupMount: String, families: [Int], sysctls: [String] = []) {
        self.sysctls = sysctls
        self.mode = mode
        self.mark = mark
        self.table = table
        self.covered = covered
        self.ownedCgroup = ownedCgroup
        self.cgroupMount = cgroupMount
        self.families = families
    }
}

/// One policy-routing rule of the app rules (`ip rule` with a mark).
public struct MarkRule: Equatable, Sendable {
    public var family: Int32
    public var priority: UInt32
    public var table: UInt32
    /// nil: every packet (with `suppressPrefixLength`).
    public var mark: UInt32?
    public var invert: Bool
    public var suppressPrefixLength: UInt32?

    public init(family: Int32, priority: UInt32, table: UInt32, mark: UInt32?, invert: Bool = false, suppressPrefixLength: UInt32? = nil) {
        self.family = family
        self.priority = priority
        self.table = table
        self.mark = mark
        self.invert = invert
        self.suppressPrefixLength = suppressPrefixLength
    }

    /// The rules a mode asks for, in both families.
    public static func rules(mode: AppRules.Mode, mark: UInt32, table: UInt32) -> [MarkRule] {
        [AF_INET, AF_INET6].flatMap { f -> [MarkRule] in
            switch mode {
            case .include:
                // The second, after main and default: a socket's first route lookup is made before
                // its packets are marked, and where only the tunnel routes the destination, it must
                // find a route (apps_only then drops what the rules do not cover).
                return [MarkRule(family: f, priority: AppRouting.rulePriority, table: table, mark: mark),
                        MarkRule(family: f, priority: AppRouting.fallbackPriority, table: table, mark: nil)]
            case .exclude:
                return [MarkRule(family: f, priority: AppRouting.rulePriority, table: 254, mark: nil, suppressPrefixLength: 0),
                        MarkRule(family: f, priority: AppRouting.rulePriority + 1, table: table, mark: mark, invert: true)]
            }
        }
    }

    public var description: String {
        (family == AF_INET6 ? "-6 " : "") + (mark.map { "\(invert ? "not " : "")fwmark 0x\(String($0, radix: 16)) " } ?? "")
            + "lookup \(table == 254 ? "main" : "\(table)")" + (suppressPrefixLength.map { " suppress_prefixlength \($0)" } ?? "")
            + " pref \(priority)"
    }
}
