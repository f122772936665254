#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// One interface in one sample: its counters and what kind of link it is.
public struct InterfaceSample: Equatable, Sendable {
    public var counters: InterfaceCounters
    public var facts: InterfaceFacts.Facts

    public init(counters: InterfaceCounters, facts: InterfaceFacts.Facts) {
        self.counters = counters
        self.facts = facts
    }
}

/// Where counters come from. The use case asks for all interfaces, or for a
/// few by name; a fake answers from a script.
public protocol InterfaceSampler {
    /// Every interface, in the kernel's order.
    func sampleAll() throws -> [InterfaceSample]
    /// The named interfaces that exist (a cheap path for a few names); nil
    /// when this sampler has no such path.
    func sample(named names: [String]) throws -> [InterfaceSample]?
}

/// The kernel's counters. Live, one RTM_GETLINK dump carries every link's
/// name, ifindex, type, kind and IFLA_STATS64 (the numbers /proc/net/dev
/// prints, from the same dev_get_stats()), so nothing is asked per
/// interface. With another file (VPNCTL_PROC_NET_DEV), the counters are
/// that file's and the facts come from one dump without statistics.
public struct KernelInterfaceSampler: InterfaceSampler {
    public let procNetDevPath: String

    public init(procNetDevPath: String = ProcNetDev.defaultPath) {
        self.procNetDevPath = procNetDevPath
    }

    var isLive: Bool { procNetDevPath == ProcNetDev.defaultPath }

    public func sampleAll() throws -> [InterfaceSample] {
        if isLive {
            let facts = InterfaceFacts(links: [])
            var samples: [InterfaceSample] = []
            try kernel {
                try LinkDump.forEach { l in
                    if let c = l.counters { samples.append(InterfaceSample(counters: c, facts: facts.facts(of: l))) }
                }
            }
            return samples
        }
        let counters: [InterfaceCounters]
        do { counters = try ProcNetDev.read(path: procNetDevPath) } catch let e as ProcNetDev.ParseError {
            throw VPNError(.failure, "\(procNetDevPath): \(e)")
        } catch {
            throw VPNError.from(error)
        }
        let facts = InterfaceFacts(links: (try? LinkDump.all(counters: false)) ?? [])
        return counters.map { InterfaceSample(counters: $0, facts: facts.facts($0.name)) }
    }

    /// Up to 8 names, one RTM_GETLINK request each (with 10,000 interfaces a
    /// dump costs the kernel 25 ms to print all of them for one line).
    public func sample(named names: [String]) throws -> [InterfaceSample]? {
        guard isLive, !names.isEmpty, names.count <= 8 else { return nil }
        let facts = InterfaceFacts(links: [])
        var found: [InterfaceSample] = []
        for name in names {
            guard let l = try? LinkDump.link(named: name, counters: true), let c = l.counters else { continue }
            found.append(InterfaceSample(counters: c, facts: facts.facts(of: l)))
        }
        return found
    }

    func kernel<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw VPNError.from(error) }
    }
}

/// One row of `stats`: an interface, its owner, and, when watching, its rates.
public struct StatsRow: Equatable, Sendable {
    public var counters: InterfaceCounters
    public var facts: InterfaceFacts.Facts
    public var profile: String?
    public var resetDetected = false
    public var rxRate: Double? = nil
    public var txRate: Double? = nil

    public init(counters: InterfaceCounters, facts: InterfaceFacts.Facts, profile: String? = nil) {
        self.counters = counters
        self.facts = facts
        self.profile = profile
    }
}

/// The bytes of one profile's session: counters since it connected, unless
/// the interface was recreated since (then unknown).
public struct StatsSession: Equatable, Sendable {
    public let profile: String
    public let interface: String
    public let rxBytes: UInt64?
    public let txBytes: UInt64?
    public let since: Date?
    public let resetDetected: Bool
}

/// What `stats` shows: named interfaces, every interface, or the tunnels and
/// the links under them; which profile owns which interface; and, for
/// `--profile`, that profile's session.
public struct StatsSelection: Sendable {
    public var interfaces: [String]
    public var all: Bool
    public var owners: [String: String]
    public var session: DerivedStatus?
    /// Links that carry a default route: the underlay the tunnels run over,
    /// shown whatever their class (a veth or a bridge is the way out of a
    /// container or a namespace, and on-demand calls it ethernet).
    public var underlay: Set<String> = []

    public init(interfaces: [String] = [], all: Bool = false, owners: [String: String] = [:], session: DerivedStatus? = nil) {
        self.interfaces = interfaces
        self.all = all
        self.owners = owners
        self.session = session
    }

    /// The interfaces with a default route (IPv4 or IPv6) in this namespace.
    public static func defaultRouteLinks(_ routes: [KernelRoute] = KernelRoutes.current()) -> Set<String> {
        Set(routes.filter { $0.prefixLength == 0 }.map(\.interface))
    }

    /// Whether `stats` without `--all` or names shows this interface.
    public func showsByDefault(_ name: String, _ kind: InterfaceClass) -> Bool {
        StatsSelection.defaultClasses.contains(kind) || underlay.contains(name)
    }

    /// The classes shown without `--all`.
    public static let defaultClasses: Set<InterfaceClass> = [.tunnel, .ethernet, .wifi, .cellular]
}

/// One sample, rendered as a table, JSON or Prometheus by the front end.
public struct StatsSnapshot: Sendable {
    public var rows: [StatsRow]
    public var session: StatsSession?
    public var sampledAt: Date
    /// Without names or `--all`: the interfaces left out (loopback,
    /// virtual links that carry no default route), so that an empty table
    /// can say what it did not show.
    public var hidden: [String] = []
}

/// Why `stats` could not show what was asked for.
public enum StatsError: Error, Equatable, Sendable {
    /// No interface by that name; `similar` holds up to three close names.
    case noSuchInterface(String, similar: [String])
    /// The profile is not up, so it has no tunnel interface.
    case notConnected(profile: String, status: VPNStatus)
}

/// `stats`: samples interface counters, names their owners, and, while
/// watching, turns consecutive samples into rates. Nothing here prints.
public struct StatsUseCase {
    public let sampler: InterfaceSampler

    public init(sampler: InterfaceSampler) {
        self.sampler = sampler
    }

    /// Which running profile holds which interface.
    public static func owners(of profiles: [Profile], controller: TunnelController) -> [String: String] {
        var owners: [String: String] = [:]
        for p in profiles {
            if let d = try? controller.derive(p), d.isActive, let i = d.interface { owners[i] = p.name }
        }
        return owners
    }

    /// The selection for `--profile`: its tunnel interface and session.
    public static func selection(for status: DerivedStatus) throws -> StatsSelection {
        guard status.isActive, let interface = status.interface else {
            throw StatsError.notConnected(profile: status.name, status: status.status)
        }
        return StatsSelection(interfaces: [interface], owners: [interface: status.name], session: status)
    }

    /// One sample of what `selection` names. While watching, a named
    /// interface may vanish for a moment (deleted and recreated): with
    /// `tolerateMissing` that sample skips it, and its return is a reset.
    public func snapshot(_ selection: StatsSelection, tolerateMissing: Bool = false, at date: Date = Date()) throws -> StatsSnapshot {
        let (rows, hidden) = try select(selection, tolerateMissing: tolerateMissing)
        return StatsSnapshot(rows: rows, session: StatsUseCase.session(selection.session, rows), sampledAt: date, hidden: hidden)
    }

    func select(_ selection: StatsSelection, tolerateMissing: Bool) throws -> (rows: [StatsRow], hidden: [String]) {
        let wanted = selection.interfaces
        guard !wanted.isEmpty else {
            let owned = !selection.owners.isEmpty
            var rows: [StatsRow] = [], hidden: [String] = []
            for s in try sampler.sampleAll() {
                guard selection.all || selection.showsByDefault(s.counters.name, s.facts.kind) else {
                    hidden.append(s.counters.name)
                    continue
                }
                rows.append(StatsRow(counters: s.counters, facts: s.facts, profile: owned ? selection.owners[s.counters.name] : nil))
            }
            return (rows, hidden)
        }
        var samples = try sampler.sample(named: wanted) ?? []
        if samples.count != wanted.count { samples = try sampler.sampleAll() }
        var byName: [String: InterfaceSample] = [:]
        for s in samples { byName[s.counters.name] = s }
        let rows: [StatsRow] = try wanted.compactMap { name in
            guard let s = byName[name] else {
                if tolerateMissing { return nil }
                throw StatsError.noSuchInterface(name, similar: Suggest.closest(to: name, among: samples.map(\.counters.name), limit: 3))
            }
            return StatsRow(counters: s.counters, facts: s.facts, profile: selection.owners[name])
        }
        return (rows, [])
    }

    /// The session's bytes: the counters less those recorded at connect,
    /// unknown when the interface was recreated or its counters went back.
    static func session(_ status: DerivedStatus?, _ rows: [StatsRow]) -> StatsSession? {
        guard let status, let row = rows.first(where: { $0.counters.name == status.interface }) else { return nil }
        let r = status.record
        let reset = r?.ifindex != row.facts.ifindex
            || (r?.rxBytesAtConnect ?? 0) > row.counters.rxBytes || (r?.txBytesAtConnect ?? 0) > row.counters.txBytes
        return StatsSession(profile: status.name, interface: row.counters.name,
                            rxBytes: reset ? nil : r?.rxBytesAtConnect.map { row.counters.rxBytes - $0 },
                            txBytes: reset ? nil : r?.txBytesAtConnect.map { row.counters.txBytes - $0 },
                            since: status.connectedSince, resetDetected: reset)
    }
}

/// Consecutive samples for `stats --watch`: each one carries rates against
/// the one before, or a reset when the interface was recreated (new
/// ifindex) or a counter went back. A rate is never negative.
public struct StatsWatch {
    public let useCase: StatsUseCase
    public let selection: StatsSelection
    /// Milliseconds on a monotonic clock.
    public var clock: () -> Int64 = monotonicMilliseconds
    public var date: () -> Date = { Date() }
    var previous: [String: (ifindex: Int32?, counters: InterfaceCounters, at: Int64)] = [:]
    public private(set) var isFirst = true

    public init(useCase: StatsUseCase, selection: StatsSelection) {
        self.useCase = useCase
        self.selection = selection
    }

    /// One tick: the sample, when it was taken (monotonic ms), and whether it
    /// is the first (no rates yet).
    public struct Tick: Sendable {
        public var snapshot: StatsSnapshot
        public var at: Int64
        public var isFirst: Bool
    }

    public mutating func next() throws -> Tick {
        let at = clock()
        var snapshot = try useCase.snapshot(selection, tolerateMissing: !isFirst)
        StatsWatch.applyRates(&snapshot.rows, previous: &previous, at: at)
        snapshot.sampledAt = date()
        snapshot.session = StatsUseCase.session(selection.session, snapshot.rows)
        let tick = Tick(snapshot: snapshot, at: at, isFirst: isFirst)
        isFirst = false
        return tick
    }

    static func applyRates(_ rows: inout [StatsRow], previous: inout [String: (ifindex: Int32?, counters: InterfaceCounters, at: Int64)],
                           at: Int64) {
        for i in rows.indices {
            let c = rows[i].counters
            if let p = previous[c.name] {
                let reset = p.ifindex != rows[i].facts.ifindex || c.rxBytes < p.counters.rxBytes || c.txBytes < p.counters.txBytes
                    || c.rxPackets < p.counters.rxPackets || c.txPackets < p.counters.txPackets
                rows[i].resetDetected = reset
                let seconds = Double(at - p.at) / 1000
                if !reset && seconds > 0 {
                    rows[i].rxRate = Double(c.rxBytes - p.counters.rxBytes) / seconds
                    rows[i].txRate = Double(c.txBytes - p.counters.txBytes) / seconds
                }
            }
            previous[c.name] = (rows[i].facts.ifindex, c, at)
        }
    }
}
