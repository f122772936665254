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
/// routes, through the system port, each change with its undo step. Applied
/// again (a reconnect's push), it keeps what is asked again, adds what is new
/// and withdraws what is no longer asked for. A route the kernel already
/// holds for the same prefix on the same link (the subnet route of an
/// address, or ours from an earlier push) is not an error.
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

    /// The table enforceRoutes uses for a tunnel on `ifindex`.
    public static func enforcedTable(ifindex: Int32) -> UInt32 { 0x766e_0000 | UInt32(UInt16(truncatingIfNeeded: ifindex)) }

    public init(interface: String, ifindex: Int32, system: TunnelSystem, undo: UndoStack, log: @escaping (String) -> Void) {
        self.interface = interface
        self.ifindex = ifindex
        self.system = system
        self.undo = undo
        self.log = log
    }

    /// Everything in `settings`, withdrawing what an earlier apply had and
    /// this one has not.
    public func apply(_ settings: TunnelNetworkSettings) throws {
        withdraw(keeping: settings)
        try applyInterface(settings)
        try applyRoutes(settings)
    }

    /// enforceRoutes: each excluded route, then each of the tunnel's, in the
    /// enforced table, and a rule sending the tunnel's prefixes there.
    func enforceRoutes(_ settings: TunnelNetworkSettings) throws {
        guard let t = enforcedTable else { return }
        if applied.enforcedTable == nil {
            applied.enforcedTable = t
            undo.push("forget table \(t)") { [self] in applied.enforcedTable = nil }
        }
        for x in settings.excludedRoutes where !enforcedExcluded.contains(x.prefix) {
            try system.addRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: t)
            enforcedExcluded.insert(x.prefix)
            undo.push("delete route \(x.prefix) table \(t)") { [self] in
                try system.deleteRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: t)
            }
        }
        for prefix in settings.routes + kernelRoutes(settings).sorted() where !applied.enforcedRoutes.contains(prefix) {
            do {
                try system.addRoute(prefix, ifindex: ifindex, gateway: nil, table: t)
            } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {}
            try system.changeRule(to: prefix, table: t, priority: SettingsApplier.enforcedRulePriority, add: true)
            applied.enforcedRoutes.append(prefix)
            log("[#] rule to \(prefix) table \(t) (enforceRoutes: the tunnel's route wins)")
            undo.push("delete rule to \(prefix)") { [self] in
                guard applied.enforcedRoutes.contains(prefix) else { return }
                applied.enforcedRoutes.removeAll { $0 == prefix }
                try system.changeRule(to: prefix, table: t, priority: SettingsApplier.enforcedRulePriority, add: false)
                log("[#] rule to \(prefix) table \(t) deleted")
            }
        }
    }

    /// Addresses, MTU and link up: what must come before the provider is
    /// configured.
    public func applyInterface(_ settings: TunnelNetworkSettings) throws {
        for a in settings.addresses {
            do {
                try system.addAddress(a, ifindex: ifindex)
                log("[#] address \(a) dev \(interface)")
            } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {
                // Added again after a reconnect took nothing away.
            }
            guard !applied.addresses.contains(a) else { continue }
            applied.addresses.append(a)
            undo.push("delete address \(a)") { [self] in
                guard applied.addresses.contains(a) else { return }
                try system.deleteAddress(a, ifindex: ifindex)
                log("[#] address \(a) deleted")
            }
        }
        if let mtu = settings.mtu {
            try system.setMTU(interface, mtu)
            applied.mtu = mtu
            log("[#] link \(interface) mtu \(mtu)")
        }
        try system.setUp(interface)
        log("[#] link \(interface) up")
        applied.dns = settings.dns
        try applyDNS(settings)
    }

    /// The tunnel's DNS on the system resolver, taken back by the undo step.
    func applyDNS(_ settings: TunnelNetworkSettings) throws {
        guard let dns else { return }
        let had = dns.record != nil
        if try dns.apply(settings.dns, interface: interface), !had {
            undo.push("restore DNS") { dns.remove() }
        }
    }

    /// Excluded routes first (so that nothing meant to stay out is ever
    /// routed in), then the tunnel's own.
    public func applyRoutes(_ settings: TunnelNetworkSettings) throws {
        let table = settings.table
        for x in settings.excludedRoutes where !applied.excludedRoutes.contains(x.prefix) {
            try system.addRoute(x.prefix, ifindex: x.ifindex, gateway: x.gateway, table: table)
            applied.excludedRoutes.append(x.prefix)
            log("[#] route \(x.prefix)\(x.gateway.map { " via \($0)" } ?? "") (excluded from the tunnel)")
            undo.push("delete route \(x.prefix)") { [self] in
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
            undo.push("delete route \(prefix)") { [self] in
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
        } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {
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
        guard settings.table == 254 else { return [] }
        return Set(settings.addresses.compactMap(CIDR.init)
            .filter { $0.prefixLength < ($0.address.isIPv6 ? 128 : 32) }.map { $0.network.description })
    }

    /// Withdraws routes and addresses no longer asked for; gone already (the
    /// kernel drops routes with a link) is as good.
    func withdraw(keeping settings: TunnelNetworkSettings) {
        for r in applied.routes where !settings.routes.contains(r) {
            applied.routes.removeAll { $0 == r }
            guard ours.remove(r) != nil else { continue }
            do { try system.deleteRoute(r, ifindex: ifindex, gateway: nil, table: settings.table) } catch {
                log("[!] route \(r), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] route \(r) withdrawn")
        }
        if let t = applied.enforcedTable {
            let keep = Set(settings.routes).union(kernelRoutes(settings))
            for r in applied.enforcedRoutes where !keep.contains(r) {
                applied.enforcedRoutes.removeAll { $0 == r }
                do { try system.changeRule(to: r, table: t, priority: SettingsApplier.enforcedRulePriority, add: false) } catch {
                    log("[!] rule to \(r), no longer pushed, was not there to delete: \(error)")
                }
                try? system.deleteRoute(r, ifindex: ifindex, gateway: nil, table: t)
            }
        }
        for a in applied.addresses where !settings.addresses.contains(a) {
            applied.addresses.removeAll { $0 == a }
            do { try system.deleteAddress(a, ifindex: ifindex) } catch {
                log("[!] address \(a), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] address \(a) withdrawn")
        }
    }
}
