#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What a provider asks to be applied to its tunnel (the
/// NEPacketTunnelNetworkSettings analogue). Prefixes are network prefixes
/// ("198.19.0.0/24"); addresses keep their host part ("198.19.0.2/24").
public struct TunnelNetworkSettings: Equatable, Sendable {
    public var addresses: [String] = []
    public var mtu: Int? = nil
    /// Through the tunnel, in `table`.
    public var routes: [String] = []
    /// Kept out of the tunnel, each on the route it had before.
    public var excludedRoutes: [ExcludedRoute] = []
    public var table: UInt32 = 254
    public var dns: [String] = []

    public init() {}

    /// A full tunnel: the routes cover a whole address family (a /0, or the
    /// two /1 halves that win over the default route without replacing it).
    public var routesEverything: Bool {
        let set = Set(routes.compactMap(CIDR.init).map(\.network.description))
        return set.contains("0.0.0.0/0") || set.contains("::/0")
            || set.isSuperset(of: ["0.0.0.0/1", "128.0.0.0/1"]) || set.isSuperset(of: ["::/1", "8000::/1"])
    }

    public struct ExcludedRoute: Equatable, Sendable {
        public var prefix: String
        public var ifindex: Int32
        public var gateway: String?
        public init(prefix: String, ifindex: Int32, gateway: String?) {
            self.prefix = prefix
            self.ifindex = ifindex
            self.gateway = gateway
        }
    }
}

/// The one settings applier: addresses, MTU, link up, excluded and included
/// routes, then the DNS, through the system port, each change with its undo
/// step. Applied again (a reconnect's push), it keeps what is asked again,
/// adds what is new and withdraws what is no longer asked for. A route the
/// kernel already holds for the same prefix on the same link (the subnet
/// route of an address, or ours from an earlier push) is not an error.
///
/// Each call is all or nothing, for every provider: the resolver is touched
/// only once every address and route step has succeeded (and the kill
/// switch follows the record, which the provider updates after the call
/// returns); a failure undoes this call's earlier steps, newest first (what
/// it withdrew is put back), leaves what earlier calls applied as it was,
/// and is thrown to the provider.
public final class SettingsApplier {
    let interface: String
    let ifindex: Int32
    let system: TunnelSystem
    let undo: UndoStack
    let log: (String) -> Void
    /// What is applied now (read by the record), shared with the undo steps.
    public private(set) var applied = AppliedSettings()
    var ours = Set<String>()
    var enforcedExcluded = Set<String>()
    /// Where the DNS goes (nil: recorded only).
    public var dns: TunnelDNS?
    /// enforceRoutes: the tunnel's routes also go into this table, with a
    /// rule to it for each, ahead of the main table, so that they win over
    /// more specific routes of the underlay (nil: routes in `table` only).
    public var enforcedTable: UInt32?
    /// The rules' priority: ahead of main (32766), behind local (0).
    public static let enforcedRulePriority: UInt32 = 5208
    /// App rules: the tunnel's routes go into this table, whatever the
    /// provider asks (nil: the settings' own table).
    public var routeTable: UInt32?

    func table(_ settings: TunnelNetworkSettings) -> UInt32 { routeTable ?? settings.table }

    /// The table enforceRoutes uses for a tunnel on `ifindex`.
    /// One table per interface: 0x766e0000 + ifindex, and for an ifindex
    /// past 16 bits (a host that has made and deleted many interfaces)
    /// 0x80000000 + ifindex, so that two tunnels never share one.
    public static func enforcedTable(ifindex: Int32) -> UInt32 {
        let i = UInt32(bitPattern: max(ifindex, 0))
        return i < 0x1_0000 ? 0x766e_0000 | i : 0x8000_0000 | i
    }

    public init(interface: String, ifindex: Int32, system: TunnelSystem, undo: UndoStack, log: @escaping (String) -> Void) {
        self.interface = interface
        self.ifindex = ifindex
        self.system = system
        self.undo = undo
        self.log = log
    }

    /// One change of the call in progress: `lasting` ones join the tunnel's
    /// undo stack when the call succeeds; the others (putting back what the
    /// call withdrew) only run when it fails.
    struct Change {
        let description: String
        let lasting: Bool
        let undo: () throws -> Void
    }
    /// The changes of the call in progress (nil between calls).
    var changes: [Change]?

    func push(_ description: String, lasting: Bool = true, _ undo: @escaping () throws -> Void) {
        if changes != nil {
            changes!.append(Change(description: description, lasting: lasting, undo: undo))
        } else if lasting {
            self.undo.push(description, undo: undo)
        }
    }

    /// Runs one call all or nothing: on a failure its changes are undone,
    /// newest first, and what is recorded as applied is what it was before.
    func transaction(_ body: () throws -> Void) throws {
        guard changes == nil else { return try body() }
        let before = (applied, ours, enforcedExcluded)
        changes = []
        do {
            try body()
        } catch {
            let made = changes ?? []
            changes = nil
            if !made.isEmpty { log("[!] settings refused (\(error)): undoing the \(made.count) change\(made.count == 1 ? "" : "s") of this call") }
            for c in made.reversed() {
                do { try c.undo() } catch { log("[!] undo '\(c.description)' failed: \(error)") }
            }
            (applied, ours, enforcedExcluded) = before
            throw error
        }
        let made = changes ?? []
        changes = nil
        for c in made where c.lasting { undo.push(c.description, undo: c.undo) }
    }

    /// Everything in `settings`, withdrawing what an earlier apply had and
    /// this one has not; the DNS last.
    public func apply(_ settings: TunnelNetworkSettings) throws {
        let settings = withSubnets(settings)
        try transaction {
            withdraw(keeping: settings)
            try addInterface(settings)
            try addRoutes(settings)
            try addDNS(settings)
        }
    }

    /// enforceRoutes: each excluded route, then each of the tunnel's, in the
    /// enforced table, and a rule sending the tunnel's prefixes there.
    func enforceRoutes(_ settings: TunnelNetworkSettings) throws {
        guard let t = enforcedTable else { return }
        if applied.enforcedTable == nil {
            applied.enforcedTable = t
            push("forget table \(t)") { [self] in applied.enforcedTable = nil }
        }
        for x in settings.excludedRoutes where !enforcedExcluded.contains(x.prefix) {
            try system.addRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: t)
            enforcedExcluded.insert(x.prefix)
            push("delete route \(x.prefix) table \(t)") { [self] in
                try system.deleteRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: t)
            }
        }
        for prefix in settings.routes + kernelRoutes(settings).sorted() where !applied.enforcedRoutes.contains(prefix) {
            do {
                try system.addRoute(prefix, ifindex: ifindex, gateway: nil, table: t)
            } catch let e as NetlinkError where e.alreadyExists {}
            try system.changeRule(to: prefix, table: t, priority: SettingsApplier.enforcedRulePriority, add: true)
            applied.enforcedRoutes.append(prefix)
            log("[#] rule to \(prefix) table \(t) (enforceRoutes: the tunnel's route wins)")
            push("delete rule to \(prefix)") { [self] in
                guard applied.enforcedRoutes.contains(prefix) else { return }
                applied.enforcedRoutes.removeAll { $0 == prefix }
                try system.changeRule(to: prefix, table: t, priority: SettingsApplier.enforcedRulePriority, add: false)
                log("[#] rule to \(prefix) table \(t) deleted")
            }
        }
    }

    /// Addresses, MTU and link up: what must come before the provider is
    /// configured (all or nothing; no DNS yet: `applyDNS` after the routes).
    public func applyInterface(_ settings: TunnelNetworkSettings) throws {
        try transaction { try addInterface(settings) }
    }

    func addInterface(_ settings: TunnelNetworkSettings) throws {
        for a in settings.addresses {
            do {
                // App rules: the subnet is routed only in the tunnel's table, like every other route of it.
                if routeTable != nil { try system.addAddressWithoutPrefixRoute(a, ifindex: ifindex) } else { try system.addAddress(a, ifindex: ifindex) }
                log("[#] address \(a) dev \(interface)")
            } catch let e as NetlinkError where e.alreadyExists {
                // Added again after a reconnect took nothing away.
            }
            guard !applied.addresses.contains(a) else { continue }
            applied.addresses.append(a)
            push("delete address \(a)") { [self] in
                guard applied.addresses.contains(a) else { return }
                try system.deleteAddress(a, ifindex: ifindex)
                log("[#] address \(a) deleted")
            }
        }
        if let mtu = settings.mtu {
            try system.setMTU(interface, mtu)
            if let old = applied.mtu, old != mtu {
                push("mtu back to \(old)", lasting: false) { [self] in try system.setMTU(interface, old) }
            }
            applied.mtu = mtu
            log("[#] link \(interface) mtu \(mtu)")
        }
        try system.setUp(interface)
        log("[#] link \(interface) up")
    }

    /// The tunnel's DNS on the system resolver, taken back by the undo
    /// step: the last step, once the addresses and routes are in place.
    public func applyDNS(_ settings: TunnelNetworkSettings) throws {
        try transaction { try addDNS(settings) }
    }

    func addDNS(_ settings: TunnelNetworkSettings) throws {
        guard let dns else {
            applied.dns = settings.dns
            return
        }
        let had = dns.record != nil
        if try dns.apply(settings.dns, interface: interface, fullTunnel: settings.routesEverything), !had {
            push("restore DNS") { dns.remove() }
        }
        applied.dns = settings.dns
    }

    /// Excluded routes first (so that nothing meant to stay out is ever
    /// routed in), then the tunnel's own (all or nothing).
    public func applyRoutes(_ settings: TunnelNetworkSettings) throws {
        let settings = withSubnets(settings)
        try transaction { try addRoutes(settings) }
    }

    /// App rules: the addresses bring no prefix route (see addInterface), so
    /// their subnets are routes of the tunnel's table like the others.
    func withSubnets(_ settings: TunnelNetworkSettings) -> TunnelNetworkSettings {
        guard routeTable != nil else { return settings }
        var s = settings
        for prefix in AppRouting.subnets(of: s.addresses) where !s.routes.contains(prefix) { s.routes.append(prefix) }
        return s
    }

    func addRoutes(_ settings: TunnelNetworkSettings) throws {
        let table = table(settings)
        for x in settings.excludedRoutes where !applied.excludedRoutes.contains(x.prefix) {
            try system.addRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: table)
            applied.excludedRoutes.append(x.prefix)
            log("[#] route \(x.prefix)\(x.gateway.map { " via \($0)" } ?? "") (excluded from the tunnel)")
            push("delete route \(x.prefix)") { [self] in
                try system.deleteRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: table)
                log("[#] route \(x.prefix) deleted")
            }
        }
        let kernel = kernelRoutes(settings)
        for prefix in settings.routes {
            if kernel.contains(prefix) {
                if !applied.routes.contains(prefix) { applied.routes.append(prefix) }
                log("[#] route \(prefix) dev \(interface) (the kernel's, from the address)")
                continue
            }
            guard try addRoute(prefix, table: table) else {
                if !applied.routes.contains(prefix) { applied.routes.append(prefix) }
                continue
            }
            guard !applied.routes.contains(prefix) else { continue }
            applied.routes.append(prefix)
            ours.insert(prefix)
            push("delete route \(prefix)") { [self] in
                guard applied.routes.contains(prefix) else { return }
                try system.deleteRoute(prefix, ifindex: ifindex, gateway: nil, table: table)
                log("[#] route \(prefix) deleted")
            }
        }
        try enforceRoutes(settings)
    }

    /// Adds a route through the tunnel; false when the kernel already has it
    /// on this link. Already there on another link is the error it is.
    func addRoute(_ prefix: String, table: UInt32) throws -> Bool {
        do {
            try system.addRoute(prefix, ifindex: ifindex, gateway: nil, table: table)
            log("[#] route \(prefix) dev \(interface)\(table == 254 ? "" : " table \(table)")")
            return true
        } catch let e as NetlinkError where e.alreadyExists {
            if table == 254, let address = CIDR(prefix)?.network.address,
               system.route(to: address)?.outputInterfaceIndex == ifindex {
                return false
            }
            throw e
        }
    }

    /// An address with a prefix ("10.8.0.2/24") brought the kernel's own
    /// route to its subnet on this link (table main).
    func kernelRoutes(_ settings: TunnelNetworkSettings) -> Set<String> {
        guard table(settings) == 254 else { return [] }
        return Set(AppRouting.subnets(of: settings.addresses))
    }

    /// Withdraws routes and addresses no longer asked for; gone already (the
    /// kernel drops routes with a link) is as good. Each withdrawal is put
    /// back if the call fails.
    func withdraw(keeping settings: TunnelNetworkSettings) {
        let table = table(settings)
        for r in applied.routes where !settings.routes.contains(r) {
            applied.routes.removeAll { $0 == r }
            guard ours.remove(r) != nil else { continue }
            do {
                try system.deleteRoute(r, ifindex: ifindex, gateway: nil, table: table)
                push("put back route \(r)", lasting: false) { [self] in
                    try system.addRoute(r, ifindex: ifindex, gateway: nil, table: table)
                    log("[#] route \(r) dev \(interface) (put back)")
                }
            } catch {
                log("[!] route \(r), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] route \(r) withdrawn")
        }
        if let t = applied.enforcedTable {
            let keep = Set(settings.routes).union(kernelRoutes(settings))
            for r in applied.enforcedRoutes where !keep.contains(r) {
                applied.enforcedRoutes.removeAll { $0 == r }
                do {
                    try system.changeRule(to: r, table: t, priority: SettingsApplier.enforcedRulePriority, add: false)
                    push("put back rule to \(r)", lasting: false) { [self] in
                        try system.changeRule(to: r, table: t, priority: SettingsApplier.enforcedRulePriority, add: true)
                    }
                } catch {
                    log("[!] rule to \(r), no longer pushed, was not there to delete: \(error)")
                }
                do {
                    try system.deleteRoute(r, ifindex: ifindex, gateway: nil, table: t)
                    push("put back route \(r) table \(t)", lasting: false) { [self] in
                        try system.addRoute(r, ifindex: ifindex, gateway: nil, table: t)
                    }
                } catch {
                    log("[!] route \(r) table \(t), no longer pushed, was not there to delete: \(error)")
                }
            }
        }
        for a in applied.addresses where !settings.addresses.contains(a) {
            applied.addresses.removeAll { $0 == a }
            do {
                try system.deleteAddress(a, ifindex: ifindex)
                push("put back address \(a)", lasting: false) { [self] in
                    try system.addAddress(a, ifindex: ifindex)
                    log("[#] address \(a) dev \(interface) (put back)")
                }
            } catch {
                log("[!] address \(a), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] address \(a) withdrawn")
        }
    }
}
