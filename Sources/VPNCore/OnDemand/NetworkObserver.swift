#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The live `NetworkSnapshot` of this network namespace: the default routes
/// from /proc/net, the primary link's kernel facts (RTM_GETLINK, sysfs) and
/// the resolver's file; while a tunnel's DNS is in that file, the text it
/// replaced (the tunnel's own search domains are not the network's).
public struct NetworkObserver {
    public var runDirectory: String
    public var resolvConfPath: String
    public var sysfs: String

    /// systemd-resolved's resolv.conf with the upstream servers and domains.
    public static let resolvedPath = "/run/systemd/resolve/resolv.conf"

    public init(runDirectory: String, resolvConfPath: String = ResolvConf.systemPath, sysfs: String = "/sys/class/net") {
        self.runDirectory = runDirectory
        self.resolvConfPath = resolvConfPath
        self.sysfs = sysfs
    }

    /// `tunnels`: the interfaces of vpnctl's own tunnels, never primary.
    public func snapshot(tunnels: Set<String>) -> NetworkSnapshot {
        func text(_ path: String) -> String {
            String(decoding: ((try? FileSystem.readFileIfPresent(path, followSymlinks: true)) ?? nil) ?? [], as: UTF8.self)
        }
        let routes = DefaultRoutes.parseIPv4(text("/proc/net/route")) + DefaultRoutes.parseIPv6(text("/proc/net/ipv6_route"))
        var primary: NetworkSnapshot.PrimaryInterface?
        if let name = DefaultRoutes.primary(routes, ignore: { tunnels.contains($0) || $0.hasPrefix("utun") }),
           let link = try? LinkDump.link(named: name, counters: false) {
            let uevent = text("\(sysfs)/\(name)/uevent")
            let devtype = uevent.split(separator: "\n").first { $0.hasPrefix("DEVTYPE=") }.map { String($0.dropFirst(8)) }
            var st = stat()
            let wireless = lstat("\(sysfs)/\(name)/wireless", &st) == 0 || lstat("\(sysfs)/\(name)/phy80211", &st) == 0
            let type = OnDemandLinkClass.classify(arphrd: link.type, kind: link.kind, wireless: wireless, devtype: devtype)
            primary = .init(name: name, ifindex: link.ifindex, type: type,
                            ssid: type == .wifi ? WirelessSSID.ssid(ifindex: link.ifindex) : nil)
        }
        let resolver: String
        if let netns = NetworkNamespace.current(),
           let t = try? ResolvConfStack(runDirectory: runDirectory, path: resolvConfPath, netns: netns).underlayText() {
            resolver = t
        } else {
            resolver = text(resolvConfPath)
        }
        var facts = ResolvConfFacts.parse(resolver)
        // systemd-resolved's stub names itself; its own file has the real servers.
        if facts.servers.allSatisfy({ $0.hasPrefix("127.0.0.53") || $0 == "127.0.0.54" }), !facts.servers.isEmpty,
           let upstream = try? FileSystem.readFileIfPresent(Self.resolvedPath, followSymlinks: true) {
            facts = ResolvConfFacts.parse(String(decoding: upstream, as: UTF8.self))
        }
        return NetworkSnapshot(primary: primary, searchDomains: facts.searchDomains, dnsServers: facts.servers)
    }
}

/// Which profiles' on-demand is paused (by `vpnctl stop` or `ondemand
/// pause`): a file in the run dir, so that it outlives an agent restart and
/// not a reboot. Rewritten atomically; readable by everyone (status shows it).
public struct OnDemandPauses {
    public let runDirectory: String

    public init(runDirectory: String) { self.runDirectory = runDirectory }

    public var path: String { "\(runDirectory)/ondemand.json" }

    public func paused() throws -> Set<UUID> {
        guard let bytes = try FileSystem.readFileIfPresent(path, limit: 4 << 20) else { return [] }
        let r = try JSONReader(parsing: bytes)
        return Set(try r.optional("paused")?.array().map { try $0.uuid() } ?? [])
    }

    public func isPaused(_ id: UUID) -> Bool { ((try? paused()) ?? []).contains(id) }

    /// Pauses or resumes one profile; returns whether anything changed.
    @discardableResult
    public func set(_ id: UUID, paused: Bool) throws -> Bool {
        // Nothing to change needs no lock (nor a run dir).
        if try self.paused().contains(id) == paused { return false }
        let lock = try FileLock(path: "\(runDirectory)/ondemand.lock")
        defer { withExtendedLifetime(lock) {} }
        var all = try self.paused()
        let changed = paused ? all.insert(id).inserted : all.remove(id) != nil
        guard changed else { return false }
        struct File: Encodable { var schemaVersion = 1; let paused: [String] }
        let bytes = Array(try RuntimeStore.makeEncoder().encode(File(paused: all.map(\.lowercasedString).sorted()))) + [0x0A]
        try AtomicFile.write(bytes, to: path, mode: 0o644, durable: true)
        return true
    }
}

/// What the agent last decided for each profile, for `status` and `ondemand
/// status`: a file in the run dir (0644), rewritten when a decision changes.
public struct OnDemandReport: Equatable, Sendable {
    public struct Entry: Encodable, Equatable, Sendable {
        public var id: UUID
        /// connect, disconnect, ignore, none (no rule matched) or paused.
        public var decision: String
        public var rule: Int?
        public var reason: String
        /// A pitfall seen at run time (a probe that always answers).
        public var note: String?

        public init(id: UUID, decision: String, rule: Int?, reason: String, note: String? = nil) {
            self.id = id
            self.decision = decision
            self.rule = rule
            self.reason = reason
            self.note = note
        }

        enum CodingKeys: String, CodingKey { case id, decision, rule, reason, note }
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id.lowercasedString, forKey: .id)
            try c.encode(decision, forKey: .decision)
            try c.encodeIfPresent(rule, forKey: .rule)
            try c.encode(reason, forKey: .reason)
            try c.encodeIfPresent(note, forKey: .note)
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public static func path(runDirectory: String) -> String { "\(runDirectory)/ondemand-agent.json" }

    public static func read(runDirectory: String) throws -> OnDemandReport? {
        guard let bytes = try FileSystem.readFileIfPresent(path(runDirectory: runDirectory), limit: 4 << 20) else { return nil }
        let r = try JSONReader(parsing: bytes)
        return OnDemandReport(entries: try r.optional("profiles")?.array().map { e in
            Entry(id: try e.required("id").uuid(), decision: try e.string("decision") ?? "none", rule: try e.int("rule"),
                  reason: try e.string("reason") ?? "", note: try e.string("note"))
        } ?? [])
    }

    public func write(runDirectory: String) throws {
        struct File: Encodable { var schemaVersion = 1; let profiles: [Entry] }
        let bytes = Array(try RuntimeStore.makeEncoder().encode(File(profiles: entries))) + [0x0A]
        try AtomicFile.write(bytes, to: Self.path(runDirectory: runDirectory), mode: 0o644, durable: false)
    }

    public func entry(_ id: UUID) -> Entry? { entries.first { $0.id == id } }
}

/// Watches for the run-time probe pitfall: a rule (not connect) whose probe
/// has answered at every evaluation for `minimumMs` matches always, so no
/// rule after it ever starts the tunnel.
public struct ProbeStreaks: Sendable {
    /// Since when each rule's probe has answered at every evaluation.
    var answeringSince: [Int: Int64] = [:]
    public static let minimumMs: Int64 = 30_000

    public init() {}

    /// Counts this evaluation (at `nowMs`); returns the note to show, if any.
    public mutating func record(_ e: OnDemandEvaluation, nowMs: Int64) -> String? {
        var note: String?
        for r in e.rules where r.evaluated {
            guard let probe = r.conditions.first(where: { $0.condition == "probeURL" }) else { continue }
            guard probe.matched else { answeringSince[r.number] = nil; continue }
            let since = answeringSince[r.number] ?? nowMs
            answeringSince[r.number] = since
            if r.action != .connect, nowMs - since >= Self.minimumMs, note == nil {
                note = "rule \(r.number)'s probe has answered at every evaluation for \(Self.minimumMs / 1000) s or more: "
                    + "the rule always matches, so no later rule starts the tunnel"
            }
        }
        return note
    }
}
