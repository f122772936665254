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
    /// The profile's app rules: marks, and (include mode) whom the kill switch
    /// holds to the tunnel: the matched programs, not everyone.
    public var apps: AppMarking? = nil

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
    /// delete, and define again, in one transaction. Throws for an interface
    /// name nft would not take literally (see `InterfaceName.isValid`).
    public func render() throws -> String {
        if let name = tunnelInterface, !InterfaceName.isValid(name) {
            throw VPNError(.failure, "the tunnel's interface name '\(name.escapingControls(keepLineBreaks: false))' is not one nft takes literally (A–Z, a–z, 0–9, '_', '.', '-')") // English: the supervisor's, for its log and runtime record
        }
        var out = ["# vpnctl kill switch for the profile '\(profile.escapingControls(keepLineBreaks: false).replacingNewlines)'",
                   "table inet \(table)", "delete table inet \(table)", "table inet \(table) {"]
        let v4 = localSubnets.filter { !$0.contains(":") }, v6 = localSubnets.filter { $0.contains(":") }
        let tun = tunnelInterface.map { "\"\($0)\"" }
        func set(_ items: [String]) -> String { items.count == 1 ? items[0] : "{ " + items.joined(separator: ", ") + " }" }
        // Include mode holds only the matched programs to the tunnel (apps_guard).
        let blockAll = includeAll && apps?.mode != .include
        for (chain, hook) in [("output", "output"), ("forward", "forward")] {
            out.append("\tchain \(chain) {")
            out.append("\t\ttype filter hook \(hook) priority filter; policy \(blockAll ? "drop" : "accept");")
            if chain == "output" { out.append("\t\toifname \"lo\" accept") }
            if let tun { out.append("\t\toifname \(tun) accept") }
            if chain == "output" && !marks.isEmpty {
                out.append("\t\tmeta mark \(set(marks.map { "0x" + String($0, radix: 16) })) accept")
            }
            if chain == "output", let apps, apps.mode == .exclude {
                out.append("\t\tmeta mark \(apps.hexMark) accept comment \"programs the app rules send around the tunnel\"")
            }
            if blockAll {
                if chain == "output" {
                    // What keeps the underlay itself alive: DHCP and IPv6 neighbour discovery.
                    out.append("\t\tudp sport 68 udp dport 67 accept")
                    out.append("\t\tudp sport 546 udp dport 547 accept")
                    out.append("\t\ticmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } accept")
                }
                if !v4.isEmpty { out.append("\t\tip daddr \(set(v4)) accept") }
                if !v6.isEmpty { out.append("\t\tip6 daddr \(set(v6)) accept") }
                out.append("\t\tcounter drop comment \"blocked by the vpnctl kill switch\"")
            } else if !includeAll {
                let r4 = enforcedRoutes.filter { !$0.contains(":") }, r6 = enforcedRoutes.filter { $0.contains(":") }
                if !r4.isEmpty { out.append("\t\tip daddr \(set(r4)) counter drop") }
                if !r6.isEmpty { out.append("\t\tip6 daddr \(set(r6)) counter drop") }
            }
            out.append("\t}")
        }
        if let apps { out += apps.render(tunnel: tunnelInterface, killSwitch: includeAll) }
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

/// What excludeLocalNetworks keeps reachable: the prefixes of the addresses
/// the underlay interfaces hold themselves, plus the link-local, multicast
/// and broadcast ranges. Never routes: a route is what a hostile DHCP server
/// pushes (option 121, the TunnelVision class, CVE-2024-3661), and
/// `128.0.0.0/1 dev eth0` would open half the Internet. An address with a
/// prefix shorter than a /16 (IPv4) or a /48 (IPv6) opens only the /16 or
/// /48 around it.
public enum LocalNetworks {
    public static let always = ["169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32", "fe80::/10", "ff00::/8"]
    public static let shortestIPv4 = 16
    public static let shortestIPv6 = 48

    public static func current(excluding interface: String?) -> [String] {
        do {
            return from(try InterfaceAddresses.current(), excluding: interface)
        } catch {
            // Nothing is opened that cannot be read: fail closed.
            return always
        }
    }

    /// Pure: the local prefixes of `addresses` (lo's, the tunnel's and
    /// link-local ones left out; those are in `always`), then `always`.
    public static func from(_ addresses: [InterfaceAddress], excluding interface: String?) -> [String] {
        var out: [String] = []
        for a in addresses where a.interface != "lo" && a.interface != interface {
            guard let ip = IPAddress(bytes: a.bytes) else { continue }
            let v6 = ip.isIPv6
            if v6 && (a.bytes[0] == 0xFE && a.bytes[1] & 0xC0 == 0x80 || a.bytes[0] == 0xFF) { continue }
            if !v6 && a.bytes[0] == 127 { continue }
            let length = max(a.prefixLength, v6 ? shortestIPv6 : shortestIPv4)
            guard let prefix = CIDR("\(ip)/\(length)")?.network.description, !out.contains(prefix) else { continue }
            out.append(prefix)
        }
        return out + always.filter { !out.contains($0) }
    }
}

/// Routes that take a tunnel's traffic away from it: a route out of another
/// interface that is more specific than one of the tunnel's routes and is
/// not the underlay's own subnet (the TunnelVision class: a DHCP server, or
/// anyone who can add routes, pulls a destination off the tunnel). With
/// includeAllNetworks the kill switch drops what such a route carries;
/// without it, it leaks. Either way status names them.
public enum TunnelBypass {
    /// "128.0.0.0/1 dev eth0" for each route of `routes` that bypasses the
    /// tunnel on `interface` with the routes `tunnelRoutes`.
    public static func routes(_ routes: [KernelRoute], interface: String, tunnelRoutes: [String],
                              addresses: [InterfaceAddress], servers: [String] = []) -> [String] {
        self.routes(routes, interface: interface, tunnelRoutes: tunnelRoutes, addresses: { addresses }, servers: servers)
    }

    /// The same, asking for the addresses only when a route is a candidate:
    /// on most systems none is, and the addresses cost a netlink dump.
    public static func routes(_ routes: [KernelRoute], interface: String, tunnelRoutes: [String],
                              addresses: () -> [InterfaceAddress], servers: [String] = []) -> [String] {
        let tunnel = tunnelRoutes.compactMap(CIDR.init).map(\.network)
        guard !tunnel.isEmpty else { return [] }
        // The underlay's own subnets (connected routes) are not pulled off the tunnel by anyone.
        var own: Set<CIDR>?
        func isOwn(_ dst: CIDR) -> Bool {
            if own == nil {
                own = Set(addresses().compactMap { a in IPAddress(bytes: a.bytes).flatMap { CIDR("\($0)/\(a.prefixLength)")?.network } })
            }
            return own!.contains(dst)
        }
        let serverIPs = servers.compactMap(IPAddress.init)
        var out: [String] = []
        for r in routes where r.interface != interface {
            guard let ip = IPAddress(bytes: r.destination), let dst = CIDR("\(ip)/\(r.prefixLength)")?.network else { continue }
            if dst.prefixLength == (ip.isIPv6 ? 128 : 32), serverIPs.contains(ip) { continue }
            if ip.isIPv6 && r.destination[0] == 0xFE && r.destination[1] & 0xC0 == 0x80 { continue }
            // Equally specific counts too: the kernel may prefer it (a lower metric), except two default routes.
            guard tunnel.contains(where: { t in
                t.contains(dst.address) && (t.prefixLength < dst.prefixLength || t.prefixLength == dst.prefixLength && dst.prefixLength > 0)
            }) else { continue }
            if isOwn(dst) { continue }
            let s = "\(dst) dev \(r.interface)"
            if !out.contains(s) { out.append(s) }
        }
        return out
    }

    /// The live routes now, and the addresses when first asked for, once.
    public final class LiveSystem {
        public let routes = KernelRoutes.current()
        public lazy var addresses: [InterfaceAddress] = (try? InterfaceAddresses.current()) ?? []
        public init() {}
    }

    /// The live system's bypassing routes for a tunnel.
    public static func current(interface: String, tunnelRoutes: [String], servers: [String] = []) -> [String] {
        let s = LiveSystem()
        return routes(s.routes, interface: interface, tunnelRoutes: tunnelRoutes, addresses: { s.addresses }, servers: servers)
    }
}

/// Runs nftables scripts. The real one is the `nft` program fed a file (a
/// static vpnctl keeps no libnftables); tests record.
public protocol FirewallPort: AnyObject {
    func run(_ script: String) throws
    func tableExists(_ table: String) -> Bool
    /// `nft list table inet TABLE` (its rules and counters), or nil.
    func list(_ table: String) -> String?
}

extension FirewallPort {
    public func list(_ table: String) -> String? { nil }
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

    public func list(_ table: String) -> String? {
        guard let r = try? Command.run(program, [program, "list", "table", "inet", table]), r.succeeded else { return nil }
        return r.output
    }
}

/// One profile's kill switch, run by its supervisor: in place before the
/// provider starts, widened to the tunnel's interface once it exists, and
/// left in place when the tunnel fails (fail closed). Only `stop` (or the
/// supervisor on a user's stop) removes it.
public final class KillSwitch {
    public private(set) var rules: KillSwitchRules
    public let firewall: FirewallPort
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
        rules.apps = profile.appRules.map { AppMarking(mode: $0.mode, mark: AppRouting.mark(for: profile.id)) }
        self.firewall = firewall
        excludeLocal = profile.excludeLocalNetworks
        enforceRoutes = profile.enforceRoutes
        self.log = log
        self.localNetworks = localNetworks
    }

    /// Whether a profile asks for a table at all.
    public static func wanted(by profile: Profile) -> Bool { profile.includeAllNetworks || profile.enforceRoutes }

    /// Whether the profile needs its nftables table: a kill switch, or app rules.
    public static func tableWanted(by profile: Profile) -> Bool { wanted(by: profile) || profile.appRules != nil }

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
        let what = rules.apps.map { a in
            "app rules, \(a.mode.rawValue)" + (rules.includeAll ? (a.mode == .include ? "; kill switch: the matched programs through the tunnel or nothing" : "; kill switch: everything else through the tunnel or nothing") : "")
        } ?? "kill switch: \(rules.includeAll ? "everything through the tunnel or nothing" : "the tunnel's routes only through the tunnel")"
        log("[#] nft: table inet \(rules.table) (\(what)\(excludeLocal ? ", local networks excepted" : ""))")
    }

    /// The tunnel's interface and routes changed: the table follows. A
    /// table that cannot follow is a failure of the tunnel (`onFailure`):
    /// the older table stays, closed, and the tunnel goes down with the
    /// reason, never left reading "on" while it blocks the tunnel itself.
    public func update(interface: String?, routes: [String]) {
        guard installed, failure == nil else { return }
        let wantedRoutes = enforceRoutes ? routes : []
        guard interface != rules.tunnelInterface || wantedRoutes != rules.enforcedRoutes else { return }
        let before = rules
        rules.tunnelInterface = interface
        rules.enforcedRoutes = wantedRoutes
        do {
            try apply()
            log("[#] nft: table inet \(rules.table) allows \(interface ?? "no interface")")
        } catch {
            rules = before
            failed("the kill switch could not follow the tunnel to \(interface ?? "no interface") (traffic stays blocked): \(KillSwitch.reason(error))")
        }
    }

    /// The app rules' marking changed (cgroups came or went, the tunnel's
    /// DNS): the table follows, in one transaction. A failure ends the tunnel
    /// as a failure to follow the tunnel does.
    /// `fatal: false`: a refusal only keeps the older table (false returned),
    /// for a caller that tries again.
    @discardableResult
    public func updateApps(fatal: Bool = true, _ change: (inout AppMarking) -> Void) -> Bool {
        guard var apps = rules.apps, failure == nil else { return false }
        change(&apps)
        guard apps != rules.apps else { return true }
        let before = rules
        rules.apps = apps
        guard installed else { return true }
        do {
            try apply()
            log("[#] nft: table inet \(rules.table) marks \(apps.cgroups.isEmpty ? "no cgroup" : apps.cgroups.map(\.nftPath).joined(separator: ", "))")
            return true
        } catch {
            rules = before
            if fatal { failed("the app rules could not follow (\(KillSwitch.reason(error)))") }
            return false
        }
    }

    /// The local subnets may have changed (a new network): the table follows.
    public func refreshLocalNetworks() {
        guard installed, excludeLocal, failure == nil else { return }
        let now = localNetworks(rules.tunnelInterface)
        guard now != rules.localSubnets else { return }
        let before = rules
        do {
            try apply()
            log("[#] nft: table inet \(rules.table) keeps local networks \(now.joined(separator: ", ")) reachable")
        } catch {
            rules = before
            failed("the kill switch could not follow the local networks (they stay blocked): \(KillSwitch.reason(error))")
        }
    }

    /// The first failure to follow the tunnel; the tunnel ends with it.
    public private(set) var failure: String?
    /// Told once, of the first failure (the supervisor stops the tunnel).
    public var onFailure: (String) -> Void = { _ in }

    func failed(_ why: String) {
        log("[!] \(why)")
        guard failure == nil else { return }
        failure = why
        onFailure(why)
    }

    static func reason(_ error: Error) -> String {
        (error as? VPNError).map { $0.message + ($0.hint.map { " (\($0))" } ?? "") } ?? "\(error)"
    }

    func apply() throws {
        rules.localSubnets = excludeLocal ? localNetworks(rules.tunnelInterface) : []
        try firewall.run(try rules.render())
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
