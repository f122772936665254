#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The kill switch's nftables table (NEVPNProtocol's includeAllNetworks,
/// excludeLocalNetworks and enforceRoutes). One `inet` table per profile,
/// named after its id, so vpnctl never touches a table it did not make.
/// The whole table is replaced in one transaction every time it changes, so
/// there is never a moment without it.
public struct KillSwitchRules: Equatable, Sendable {
    public var table: String
    public var profile: String
    /// Everything but the allowed traffic is dropped (includeAllNetworks);
    /// otherwise only traffic to `enforcedRoutes` outside the tunnel is.
    public var includeAll: Bool
    /// The tunnel's interface, once it exists.
    public var tunnelInterface: String?
    /// Socket marks of the provider's own traffic to its server.
    public var marks: [UInt32]
    /// Local subnets that stay reachable (excludeLocalNetworks).
    public var localSubnets: [String]
    /// The tunnel's routes (enforceRoutes): never out of another interface.
    public var enforcedRoutes: [String]

    public init(table: String, profile: String, includeAll: Bool, tunnelInterface: String? = nil, marks: [UInt32] = [],
                localSubnets: [String] = [], enforcedRoutes: [String] = []) {
        self.table = table
        self.profile = profile
        self.includeAll = includeAll
        self.tunnelInterface = tunnelInterface
        self.marks = marks
        self.localSubnets = localSubnets
        self.enforcedRoutes = enforcedRoutes
    }

    /// `vpnctl_` and the profile id's 32 hex digits (nft names take no '-').
    public static func tableName(_ id: UUID) -> String {
        "vpnctl_" + id.lowercasedString.filter { $0 != "-" }
    }

    /// The script for `nft -f`: create (so that the delete cannot fail),
    /// delete, and define again, in one transaction.
    public func render() -> String {
        var out = ["# vpnctl kill switch for the profile '\(profile.escapingControls(keepLineBreaks: false).replacingNewlines)'",
                   "table inet \(table)", "delete table inet \(table)", "table inet \(table) {"]
        let v4 = localSubnets.filter { !$0.contains(":") }, v6 = localSubnets.filter { $0.contains(":") }
        let tun = tunnelInterface.map { "\"\($0)\"" }
        func set(_ items: [String]) -> String { items.count == 1 ? items[0] : "{ " + items.joined(separator: ", ") + " }" }
        for (chain, hook) in [("output", "output"), ("forward", "forward")] {
            out.append("\tchain \(chain) {")
            out.append("\t\ttype filter hook \(hook) priority filter; policy \(includeAll ? "drop" : "accept");")
            if chain == "output" { out.append("\t\toifname \"lo\" accept") }
            if let tun { out.append("\t\toifname \(tun) accept") }
            if chain == "output" && !marks.isEmpty {
                out.append("\t\tmeta mark \(set(marks.map { "0x" + String($0, radix: 16) })) accept")
            }
            if includeAll {
                if chain == "output" {
                    // What keeps the underlay itself alive: DHCP and IPv6 neighbour discovery.
                    out.append("\t\tudp sport 68 udp dport 67 accept")
                    out.append("\t\tudp sport 546 udp dport 547 accept")
                    out.append("\t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } accept")
                }
                if !v4.isEmpty { out.append("\t\tip daddr \(set(v4)) accept") }
                if !v6.isEmpty { out.append("\t\tip6 daddr \(set(v6)) accept") }
                out.append("\t\tcounter drop comment \"blocked by the vpnctl kill switch\"")
            } else {
                let r4 = enforcedRoutes.filter { !$0.contains(":") }, r6 = enforcedRoutes.filter { $0.contains(":") }
                if !r4.isEmpty { out.append("\t\tip daddr \(set(r4)) counter drop") }
                if !r6.isEmpty { out.append("\t\tip6 daddr \(set(r6)) counter drop") }
            }
            out.append("\t}")
        }
        out.append("}")
        return out.joined(separator: "\n") + "\n"
    }

    /// The script that removes the table (and does not fail when it is gone).
    public static func removal(_ table: String) -> String {
        "table inet \(table)\ndelete table inet \(table)\n"
    }
}

extension String {
    fileprivate var replacingNewlines: String { String(map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
}

/// The subnets this namespace reaches directly (routes without a gateway in
/// the main table), from /proc/net/route and /proc/net/ipv6_route, plus the
/// link-local, multicast and broadcast ranges: what excludeLocalNetworks keeps.
public enum LocalNetworks {
    public static let always = ["169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32", "fe80::/10", "ff00::/8"]

    public static func current(excluding interface: String?) -> [String] {
        let v4 = (try? FileSystem.readFileIfPresent("/proc/net/route", followSymlinks: true)) ?? nil
        let v6 = (try? FileSystem.readFileIfPresent("/proc/net/ipv6_route", followSymlinks: true)) ?? nil
        return parse(route: String(decoding: v4 ?? [], as: UTF8.self), ipv6Route: String(decoding: v6 ?? [], as: UTF8.self),
                     excluding: interface)
    }

    /// Pure: the connected subnets in the two files' text, then `always`.
    public static func parse(route: String, ipv6Route: String, excluding interface: String?) -> [String] {
        var out: [String] = []
        func skip(_ dev: Substring) -> Bool { dev == "lo" || (interface.map { dev == $0 } ?? false) }
        for line in route.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, !skip(f[0]), let dst = UInt32(f[1], radix: 16), let gw = UInt32(f[2], radix: 16),
                  let mask = UInt32(f[7], radix: 16), gw == 0, mask != 0 else { continue }
            // The kernel prints the address as a host-order integer (little-endian here).
            let bytes = (0..<4).map { String((dst >> (8 * $0)) & 0xff) }
            let s = "\(bytes.joined(separator: "."))/\(mask.nonzeroBitCount)"
            if !out.contains(s) { out.append(s) }
        }
        for line in ipv6Route.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, !skip(f[9]), let len = Int(f[1], radix: 16), len > 0, len < 128,
                  f[4].allSatisfy({ $0 == "0" }), f[0].count == 32 else { continue }
            let hex = Array(f[0])
            let groups = stride(from: 0, to: 32, by: 4).map { String(hex[$0..<$0 + 4]) }
            guard let ip = IPAddress(groups.joined(separator: ":")), !groups[0].lowercased().hasPrefix("ff") else { continue }
            let s = "\(ip)/\(len)"
            if !out.contains(s) { out.append(s) }
        }
        return out + always.filter { !out.contains($0) }
    }
}

/// Runs nftables scripts. The real one is the `nft` program fed a file (a
/// static vpnctl keeps no libnftables); tests record.
public protocol FirewallPort: AnyObject {
    func run(_ script: String) throws
    func tableExists(_ table: String) -> Bool
}

public final class NftFirewall: FirewallPort {
    let program: String
    let scratch: String

    /// `scratch` is a file path in the run dir for the script (removed after).
    public init(searchPath: String?, scratch: String) throws {
        guard let p = Processes.which("nft", path: searchPath) else {
            throw VPNError(.providerUnavailable, L("nft is not installed (the kill switch, includeAllNetworks, needs it)"),
                           hint: L("install it: apt-get install --no-install-recommends nftables"))
        }
        program = p
        self.scratch = scratch
    }

    public func run(_ script: String) throws {
        try AtomicFile.write(Array(script.utf8), to: scratch, mode: 0o600, durable: false)
        defer { unlink(scratch) }
        let r = try Command.run(program, [program, "-f", scratch])
        if !r.succeeded {
            throw VPNError(.failure, L("nft -f failed (exit \(r.status)): \(r.output.trimmedWhitespace)"))
        }
    }

    public func tableExists(_ table: String) -> Bool {
        (try? Command.run(program, [program, "list", "table", "inet", table]))?.succeeded ?? false
    }
}

/// One profile's kill switch, run by its supervisor: in place before the
/// provider starts, widened to the tunnel's interface once it exists, and
/// left in place when the tunnel fails (fail closed). Only `stop` (or the
/// supervisor on a user's stop) removes it.
public final class KillSwitch {
    public private(set) var rules: KillSwitchRules
    let firewall: FirewallPort
    let excludeLocal: Bool
    let enforceRoutes: Bool
    let log: (String) -> Void
    let localNetworks: (String?) -> [String]
    public private(set) var installed = false

    /// vpnctl's own mark for a provider's sockets when the profile sets none
    /// ("vn").
    public static let defaultMark: UInt32 = 0x766e

    public init(profile: Profile, firewall: FirewallPort, log: @escaping (String) -> Void,
                localNetworks: @escaping (String?) -> [String] = LocalNetworks.current(excluding:)) {
        rules = KillSwitchRules(table: KillSwitchRules.tableName(profile.id), profile: profile.name,
                                includeAll: profile.includeAllNetworks, marks: [KillSwitch.defaultMark])
        self.firewall = firewall
        excludeLocal = profile.excludeLocalNetworks
        enforceRoutes = profile.enforceRoutes
        self.log = log
        self.localNetworks = localNetworks
    }

    /// Whether a profile asks for a table at all.
    public static func wanted(by profile: Profile) -> Bool { profile.includeAllNetworks || profile.enforceRoutes }

    public var mark: UInt32 { rules.marks.first ?? KillSwitch.defaultMark }

    public var record: KillSwitchRecord { KillSwitchRecord(table: rules.table, netns: NetworkNamespace.current()) }

    /// The provider marks its sockets with `mark` instead of vpnctl's default.
    public func useMark(_ mark: UInt32) throws {
        guard rules.marks != [mark] else { return }
        rules.marks = [mark]
        if installed { try apply() }
    }

    public func install() throws {
        try apply()
        installed = true
        log("[#] nft: table inet \(rules.table) (kill switch: \(rules.includeAll ? "everything through the tunnel or nothing" : "the tunnel's routes only through the tunnel")\(excludeLocal ? ", local networks excepted" : ""))")
    }

    /// The tunnel's interface and routes changed: the table follows.
    public func update(interface: String?, routes: [String]) {
        guard installed else { return }
        let wantedRoutes = enforceRoutes ? routes : []
        guard interface != rules.tunnelInterface || wantedRoutes != rules.enforcedRoutes else { return }
        rules.tunnelInterface = interface
        rules.enforcedRoutes = wantedRoutes
        do {
            try apply()
            log("[#] nft: table inet \(rules.table) allows \(interface ?? "no interface")")
        } catch {
            // The older table stays: still closed, never open.
            log("[!] the kill switch could not follow the tunnel (traffic stays blocked): \(error)")
        }
    }

    /// The local subnets may have changed (a new network): the table follows.
    public func refreshLocalNetworks() {
        guard installed, excludeLocal else { return }
        let now = localNetworks(rules.tunnelInterface)
        guard now != rules.localSubnets else { return }
        do {
            try apply()
            log("[#] nft: table inet \(rules.table) keeps local networks \(now.joined(separator: ", ")) reachable")
        } catch {
            log("[!] the kill switch could not follow the local networks (they stay blocked): \(error)")
        }
    }

    func apply() throws {
        rules.localSubnets = excludeLocal ? localNetworks(rules.tunnelInterface) : []
        try firewall.run(rules.render())
    }

    public func remove() throws {
        try firewall.run(KillSwitchRules.removal(rules.table))
        installed = false
        log("[#] nft: table inet \(rules.table) deleted (kill switch off)")
    }

    /// Removes the table `r` names, in this namespace only. Returns what was
    /// done, in words, and whether the table is gone.
    public static func remove(_ r: KillSwitchRecord, id: UUID, firewall: () throws -> FirewallPort) -> (done: String, removed: Bool) {
        // Only the profile's own table, by the name vpnctl gives it: a record
        // never names another table (or smuggles a command into the script).
        guard r.table == KillSwitchRules.tableName(id) else {
            return (L("kill switch record names table '\(r.table.escapingControls(keepLineBreaks: false))', not this profile's; left alone"), false)
        }
        let here = NetworkNamespace.current()
        if let there = r.netns, there != here {
            return (L("kill switch left in place: its table is in network namespace \(there), this is \(here ?? "?"); stop the profile there"), false)
        }
        do {
            try firewall().run(KillSwitchRules.removal(r.table))
            return (L("deleted nftables table inet \(r.table) (kill switch off)"), true)
        } catch {
            return (L("cannot delete nftables table inet \(r.table): \(error)"), false)
        }
    }
}
