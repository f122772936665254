#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A running profile's app rules (see `AppRouting`), kept by its supervisor:
/// put in place before the provider starts, the covered cgroups looked for
/// again every second (a unit that starts later is covered within that
/// second; `vpnctl run` starts its command only once its cgroup is covered:
/// at once in vpnctl's own cgroup, within that second in a new systemd
/// scope), and taken down when the tunnel ends.
public final class AppSession {
    let profile: Profile
    let rules: AppRules
    let tree: CgroupTree
    let system: TunnelSystem
    let killSwitch: KillSwitch
    let log: (String) -> Void
    let mayStart: (UInt32) -> Bool
    public let mark: UInt32
    public let table: UInt32
    var installedRules: [MarkRule] = []
    /// The sysctl files this session turned on (turned off again at the end).
    var sysctls: [String] = []
    public private(set) var covered: [String] = []
    public private(set) var ownedCgroup: String?
    /// Exclude mode: the underlay's own DNS servers, before the tunnel's.
    var underlayDNS: [String] = []
    /// What nft's levels add to the paths' own (a cgroup namespace's depth).
    var levelOffset = 0

    public init(profile: Profile, rules: AppRules, tree: CgroupTree, system: TunnelSystem, killSwitch: KillSwitch,
                mayStart: @escaping (UInt32) -> Bool, log: @escaping (String) -> Void) {
        self.profile = profile
        self.rules = rules
        self.tree = tree
        self.system = system
        self.killSwitch = killSwitch
        self.mayStart = mayStart
        self.log = log
        mark = AppRouting.mark(for: profile.id)
        table = mark
    }

    /// The cgroup2 tree, or the error that says why app rules cannot work here.
    public static func tree() throws -> CgroupTree {
        guard let tree = CgroupTree.current() else {
            throw VPNError(.failure, "cgroup2 is not mounted (per-app rules match programs by their cgroup v2)") // English: the supervisor's
        }
        guard tree.nftPath("/") != nil else {
            throw VPNError(.failure, "cgroup2 is mounted at \(tree.mountPoint), and nft finds cgroups only under /sys/fs/cgroup") // English: the supervisor's
        }
        return tree
    }

    public var record: AppRoutingRecord {
        AppRoutingRecord(mode: rules.mode, mark: mark, table: table, covered: covered, ownedCgroup: ownedCgroup,
                         cgroupMount: tree.mountPoint, families: [4, 6], sysctls: sysctls)
    }

    /// The routing rules, the owned cgroup and the first marks: before the
    /// provider starts (`end` takes them away, after a failure too).
    public func install() throws {
        underlayDNS = AppSession.nameservers(ResolvConf.systemPath)
        levelOffset = try CgroupLevels.offset(tree: tree, firewall: killSwitch.firewall, log: log)
        if !AppRouting.systemdManagesCgroups {
            let owned = AppRouting.ownedCgroup(for: profile.id)
            try tree.makeDirectory(owned)
            ownedCgroup = owned
            log("[#] cgroup \(owned) (vpnctl run puts programs here)")
        }
        for rule in MarkRule.rules(mode: rules.mode, mark: mark, table: table) {
            try system.changeMarkRule(rule, add: true)
            installedRules.append(rule)
            log("[#] rule \(rule.description)")
        }
        // Strict reverse-path filtering must look a reply up with its mark
        // (loose filtering, systemd's default, passes it anyway).
        for file in [AppSession.srcValidMark] where AppSession.strictReversePathFilter() && AppSession.readSysctl(file) == "0" {
            try AppSession.writeSysctl(file, "1")
            sysctls.append(file)
            log("[#] sysctl \(String(file.dropFirst(10).map { $0 == "/" ? "." : $0 })) = 1")
        }
        refresh()
    }

    /// The cgroups covered now; the table follows when they changed.
    /// nft looks each path up when it loads the table, so a cgroup that went
    /// away between the look and the load makes it refuse: the table stays as
    /// it was and the next look tries again; three refusals in a row end the
    /// tunnel (as any table that cannot follow it does).
    public func refresh() {
        guard killSwitch.failure == nil else { return }
        let now = AppRouting.covered(rules, profile: profile, tree: tree, mayStart: mayStart)
        let ok = killSwitch.updateApps(fatal: refusals >= 2) { m in
            m.cgroups = now.compactMap { p in tree.nftPath(p).map { AppMarking.Cgroup(level: CgroupTree.level(p) + levelOffset, nftPath: $0) } }
        }
        if ok {
            covered = now
            refusals = 0
        } else {
            refusals += 1
            log("[!] nft refused the covered cgroups (\(refusals) in a row); looking again in a second")
        }
    }
    var refusals = 0

    /// The tunnel's DNS servers: where the matched programs' queries go
    /// (include), or what the bypassing programs' queries are taken away
    /// from, to the underlay's servers (exclude).
    public func follow(dns: [String]) {
        killSwitch.updateApps { m in
            switch rules.mode {
            case .include:
                m.dnsTo = dns
                m.dnsFrom = []
            case .exclude:
                m.dnsTo = underlayDNS
                m.dnsFrom = underlayDNS.isEmpty ? [] : dns
            }
        }
    }

    /// At the end: the rules, the sysctls back, and the owned cgroup if
    /// nobody is in it.
    public func end() {
        for rule in installedRules.reversed() {
            do {
                try system.changeMarkRule(rule, add: false)
                log("[#] rule \(rule.description) deleted")
            } catch { log("[!] cannot delete rule \(rule.description): \(error)") }
        }
        installedRules = []
        for file in sysctls {
            do { try AppSession.writeSysctl(file, "0") } catch { log("[!] cannot set \(file) back to 0: \(error)") }
        }
        if !sysctls.isEmpty { log("[#] sysctl net.ipv4.conf.all.src_valid_mark = 0 (as it was)") }
        sysctls = []
        if let owned = ownedCgroup {
            if tree.removeDirectory(owned) {
                _ = tree.removeDirectory("/vpnctl")
                log("[#] cgroup \(owned) removed")
            } else {
                log("[*] cgroup \(owned) kept: programs still run in it (they use no tunnel now)")
            }
        }
    }

    /// Whether rp_filter is strict (1) for any interface here (the kernel
    /// uses the higher of `all` and the interface's own).
    static func strictReversePathFilter() -> Bool {
        let dir = "/proc/sys/net/ipv4/conf"
        return ((try? FileSystem.listAll(dir)) ?? ["all"]).contains { readSysctl("\(dir)/\($0)/rp_filter") == "1" }
    }

    static func readSysctl(_ path: String) -> String? {
        (try? FileSystem.readFileIfPresent(path, followSymlinks: true)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self).trimmedWhitespace }
    }

    /// The one sysctl app rules turn on (a record names no other file).
    public static let srcValidMark = "/proc/sys/net/ipv4/conf/all/src_valid_mark"

    public static func writeSysctl(_ path: String, _ value: String) throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", path: path, errno: .current) }
        defer { close(fd) }
        let bytes = Array((value + "\n").utf8)
        if bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) != bytes.count {
            throw SystemError("write", path: path, errno: .current)
        }
    }

    /// The nameservers a resolv.conf names, loopback ones left out (a local
    /// stub cannot be told which program asked).
    static func nameservers(_ path: String) -> [String] {
        guard let bytes = (try? FileSystem.readFileIfPresent(path, followSymlinks: true)) ?? nil else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", let ip = IPAddress(String(words[1])) else { return nil }
            let text = String(words[1])
            return text.hasPrefix("127.") || text == "::1" ? nil : ip.description
        }
    }
}
