#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The DNS a tunnel asks for: the provider's list (servers and search
/// domains mixed, as wg-quick's DNS= and OpenVPN's dhcp-options give them)
/// merged with the profile's `dnsSettings` (its servers replace the
/// provider's; domains add up).
public struct TunnelDNSConfig: Equatable, Sendable {
    public var servers: [String] = []
    public var searchDomains: [String] = []
    public var matchDomains: [String] = []

    public init(servers: [String] = [], searchDomains: [String] = [], matchDomains: [String] = []) {
        self.servers = servers
        self.searchDomains = searchDomains
        self.matchDomains = matchDomains
    }

    public var isEmpty: Bool { servers.isEmpty && searchDomains.isEmpty && matchDomains.isEmpty }

    /// Throws for a provider's entry that is neither an IP address nor a
    /// domain name (checked as a profile's dnsSettings are), whichever
    /// provider sent it: it would reach resolv.conf and resolvectl.
    public static func merge(provider: [String], profile: DNSSettings?) throws -> TunnelDNSConfig {
        if let bad = provider.first(where: { IPAddress($0) == nil && !isDomainName($0) }) {
            throw VPNError(.failure, "the provider's DNS setting '\(OpenVPNDirectives.shown(bad.escapingControls(keepLineBreaks: false)))' is neither an IP address nor a domain name; no DNS was applied") // English: the supervisor's, for its log and runtime record
        }
        var c = TunnelDNSConfig()
        var seen = Set<String>()
        func add(_ s: String, _ list: inout [String]) { if seen.insert(s).inserted { list.append(s) } }
        let providerServers = provider.filter { IPAddress($0) != nil }
        for s in (profile?.servers.isEmpty == false ? profile!.servers : providerServers) { add(s, &c.servers) }
        for d in provider where IPAddress(d) == nil { add(d, &c.searchDomains) }
        for d in profile?.searchDomains ?? [] { add(d, &c.searchDomains) }
        for d in profile?.matchDomains ?? [] { add(d, &c.matchDomains) }
        return c
    }
}

/// Which resolver serves this network namespace.
public enum ResolverBackend: String, Sendable {
    case resolved = "systemd-resolved"
    case resolvconf = "resolvconf"
    case file = "resolv.conf"

    /// What the choice is made from, read off the live system by `facts`.
    public struct Facts: Equatable, Sendable {
        public struct Resolved: Equatable, Sendable {
            public var pid: String
            public var executable: String
            public var netns: String?
            public init(pid: String, executable: String, netns: String?) {
                self.pid = pid
                self.executable = executable
                self.netns = netns
            }
        }
        public var ownNetns: String?
        /// The systemd-resolved processes (matched by executable, not by
        /// the kernel's 15-byte comm) and the namespace each serves.
        public var resolved: [Resolved] = []
        /// /run/systemd/resolve/ exists (resolved's runtime directory).
        public var resolvedDirectory = false
        public var resolvectl = false
        public var resolvconf = false
        /// /etc/resolv.conf's symlink target, as written.
        public var resolvConfTarget: String?
        /// /etc/resolv.conf (or its target) is a bind mount: a namespace's own file.
        public var resolvConfIsMount = false

        public init(ownNetns: String?, resolved: [Resolved] = [], resolvedDirectory: Bool = false, resolvectl: Bool = false,
                    resolvconf: Bool = false, resolvConfTarget: String? = nil, resolvConfIsMount: Bool = false) {
            self.ownNetns = ownNetns
            self.resolved = resolved
            self.resolvedDirectory = resolvedDirectory
            self.resolvectl = resolvectl
            self.resolvconf = resolvconf
            self.resolvConfTarget = resolvConfTarget
            self.resolvConfIsMount = resolvConfIsMount
        }
    }

    /// systemd-resolved only when one runs in *this* network namespace (over
    /// D-Bus, the host's would set DNS on whichever of its links has the
    /// tunnel's ifindex) with its runtime directory in place; resolvconf
    /// only when /etc/resolv.conf is its file and not a namespace's own bind
    /// mount (`ip netns exec`); otherwise the file itself. The reason says
    /// which facts decided, for `start --verbose` and `status --json`.
    public static func choose(_ f: Facts) -> (backend: ResolverBackend, reason: String) {
        let here = f.resolved.first { r in f.ownNetns != nil && r.netns == f.ownNetns }
        if let r = here, f.resolvedDirectory, f.resolvectl {
            return (.resolved, "systemd-resolved (pid \(r.pid), \(r.executable)) serves this network namespace")
        }
        // A sandboxed service (vpnctl-agent.service, without CAP_SYS_PTRACE)
        // cannot read another user's /proc/PID/ns/net: there, resolved serves
        // this namespace when /etc/resolv.conf is its own file, reached by a
        // symlink (not a namespace's bind mount), and no resolved is known
        // to serve only another namespace.
        if here == nil, f.resolvedDirectory, f.resolvectl, !f.resolvConfIsMount,
           let t = f.resolvConfTarget, ResolvConf.normalized(t.hasPrefix("/") ? t : "/etc/" + t).hasPrefix(ResolvConf.resolvedDirectory + "/"),
           let r = f.resolved.first(where: { $0.netns == nil }), !f.resolved.contains(where: { $0.netns != nil }) {
            return (.resolved, "/etc/resolv.conf is systemd-resolved's (\(t)) and systemd-resolved (pid \(r.pid)) runs; its network namespace cannot be read from here")
        }
        if f.resolvconf, !f.resolvConfIsMount, let t = f.resolvConfTarget,
           t.hasPrefix("/run/resolvconf/") || t.hasPrefix("/etc/resolvconf/run/") || t.hasPrefix("../run/resolvconf/") {
            return (.resolvconf, "/etc/resolv.conf is resolvconf's file (\(t))")
        }
        var why: String
        if let r = here {
            why = f.resolvectl ? "systemd-resolved (pid \(r.pid)) runs here but /run/systemd/resolve/ is missing"
                               : "systemd-resolved (pid \(r.pid)) runs here but resolvectl is not installed"
        } else if let r = f.resolved.first, !f.resolved.contains(where: { $0.netns != nil }) {
            why = "systemd-resolved (pid \(r.pid)) runs, in a network namespace that cannot be read from here, and /etc/resolv.conf is not its file"
        } else if !f.resolved.isEmpty {
            why = "systemd-resolved runs only in another network namespace"
        } else {
            why = "no systemd-resolved runs"
        }
        if f.resolvConfIsMount { why += "; /etc/resolv.conf is this namespace's own file (a bind mount)" }
        else if let t = f.resolvConfTarget { why += "; /etc/resolv.conf links to \(t)" }
        return (.file, why)
    }

    /// The facts of this process's namespace, from the live system.
    public static func facts(searchPath: String?) -> Facts {
        let target = NetworkNamespace.readLink(ResolvConf.systemPath)
        return Facts(ownNetns: NetworkNamespace.current(),
                     resolved: NetworkNamespace.processes(named: "systemd-resolved").map {
                         Facts.Resolved(pid: $0.pid, executable: $0.executable, netns: NetworkNamespace.of($0.pid))
                     },
                     resolvedDirectory: (try? FileSystem.followedInfo(ResolvConf.resolvedDirectory))??.isDirectory == true,
                     resolvectl: Processes.which("resolvectl", path: searchPath) != nil,
                     resolvconf: Processes.which("resolvconf", path: searchPath) != nil,
                     resolvConfTarget: target,
                     resolvConfIsMount: NetworkNamespace.isMountPoint(ResolvConf.systemPath)
                         || target.map { NetworkNamespace.isMountPoint($0) } == true)
    }

    /// The backend for this process's namespace, and why.
    public static func detect(searchPath: String?) -> (backend: ResolverBackend, reason: String) {
        choose(facts(searchPath: searchPath))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line breaks.
    var trimmedWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}

/// resolv.conf text.
public enum ResolvConf {
    public static let systemPath = "/etc/resolv.conf"
    /// systemd-resolved's runtime directory: its stub and upstream files.
    public static let resolvedDirectory = "/run/systemd/resolve"

    /// Why the resolv.conf backend must not write `path`: its symlinks lead
    /// into resolved's runtime directory (resolved rewrites those files and
    /// would drop the tunnel's DNS without a word, and on a host whose
    /// resolved serves another namespace it is that namespace's resolver),
    /// unless the file they end at is a bind mount of a namespace's own.
    /// Nil when the file may be written.
    public static func refusal(_ path: String) -> String? {
        var current = path
        var chain: [String] = []
        for _ in 0..<8 {
            guard let target = NetworkNamespace.readLink(current) else { break }
            let dir = current.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
            current = target.hasPrefix("/") ? target : dir + "/" + target
            chain.append(current)
        }
        guard let inResolved = chain.map(normalized).first(where: { $0.hasPrefix(resolvedDirectory + "/") }),
              !NetworkNamespace.isMountPoint(current) else { return nil }
        return "\(path) links into systemd-resolved's files (\(inResolved)) but systemd-resolved does not serve this network namespace: vpnctl does not write into them (resolved would drop the tunnel's DNS on its next rewrite). Run systemd-resolved here, or give this namespace a resolv.conf of its own (/etc/netns/<name>/resolv.conf)" // English: the supervisor's, for its log and runtime record
    }

    /// `a/./b`, `a//b` and `a/x/../b` as `a/b` (no symlinks followed).
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for p in path.split(separator: "/") {
            if p == "." { continue }
            if p == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(p)
        }
        return "/" + parts.joined(separator: "/")
    }
    /// glibc reads at most three nameservers.
    public static let maximumServers = 3

    /// The file a tunnel asks for: its servers (or, with none, the original's),
    /// its search domains, and the original's `options` lines. Match domains
    /// cannot be expressed: every name goes to the tunnel's servers.
    public static func render(_ c: TunnelDNSConfig, profile: String, original: String) -> String {
        let lines = original.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map { $0.trimmedWhitespace }
        func words(_ l: String) -> [String] { l.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
        let originalServers = lines.filter { words($0).first == "nameserver" }
        var out = ["# written by vpnctl for the tunnel '\(profile.escapingControls(keepLineBreaks: false))'; the original comes back when it stops"]
        if c.servers.isEmpty {
            out += originalServers
        } else {
            out += c.servers.prefix(maximumServers).map { "nameserver \($0)" }
        }
        if !c.searchDomains.isEmpty { out.append("search " + c.searchDomains.joined(separator: " ")) }
        out += lines.filter { words($0).first == "options" }
        return out.joined(separator: "\n") + "\n"
    }
}

/// The resolv.conf backend's state in one network namespace: the file's
/// original text and a stack of the tunnels' texts (the most recent wins;
/// when it stops, the one below comes back; when the last one stops, the
/// original). Kept in the run dir, changed only under its lock; the file is
/// rewritten in place (a bind-mounted resolv.conf cannot be renamed over).
public struct ResolvConfStack: Sendable {
    public struct Entry: Encodable, Equatable, Sendable {
        public var id: String
        public var text: String
    }
    struct State: Encodable, Equatable {
        var path: String
        var netns: String
        var original: String
        var entries: [Entry]
    }

    public let runDirectory: String
    public let path: String
    public let netns: String

    public init(runDirectory: String, path: String = ResolvConf.systemPath, netns: String) {
        self.runDirectory = runDirectory
        self.path = path
        self.netns = netns
    }

    /// "net:[4026531840]" -> "4026531840".
    var key: String { String(netns.filter(\.isNumber)) }
    public var statePath: String { "\(runDirectory)/resolv-\(key).json" }
    var lockPath: String { "\(runDirectory)/resolv-\(key).lock" }

    /// Puts `id`'s text on top and into the file; returns what the file held before.
    @discardableResult
    public func push(id: UUID, text make: (String) -> String) throws -> String {
        let lock = try FileLock(path: lockPath)
        defer { withExtendedLifetime(lock) {} }
        let current = try readFile()
        var state = try readState() ?? State(path: path, netns: netns, original: current, entries: [])
        // Someone else (DHCP, an administrator) wrote the file since: what
        // they wrote is what comes back at the end.
        if state.entries.last.map({ $0.text != current }) ?? false { state.original = current }
        if state.entries.isEmpty { state.original = current }
        let text = make(state.original)
        state.entries.removeAll { $0.id == id.lowercasedString }
        state.entries.append(Entry(id: id.lowercasedString, text: text))
        try writeFile(text)
        try writeState(state)
        return current
    }

    /// Takes `id` off the stack; when it was on top, the file gets the text
    /// below it (or the original) back, unless someone else changed the file
    /// meanwhile. Returns what happened, in words; nil when `id` had nothing here.
    @discardableResult
    public func pop(id: UUID) throws -> String? {
        let lock = try FileLock(path: lockPath)
        defer { withExtendedLifetime(lock) {} }
        guard var state = try readState(), let mine = state.entries.last(where: { $0.id == id.lowercasedString }) else { return nil }
        let wasTop = state.entries.last?.id == mine.id
        state.entries.removeAll { $0.id == mine.id }
        var done: String
        if wasTop {
            let current = try readFile()
            if current != mine.text {
                done = L("\(path) was changed by someone else since vpnctl wrote it; left as it is")
            } else if let below = state.entries.last {
                try writeFile(below.text)
                done = L("\(path): the DNS of the tunnel below (\(below.id)) restored")
            } else {
                try writeFile(state.original)
                done = L("\(path) restored")
            }
        } else {
            done = L("\(path): a later tunnel's DNS stays in effect")
        }
        if state.entries.isEmpty {
            try FileSystem.remove(statePath)
        } else {
            try writeState(state)
        }
        return done
    }

    /// The resolver text of the network underneath the tunnels: the
    /// original while a tunnel's text is in the file, else the file.
    public func underlayText() throws -> String {
        let current = try readFile()
        if let state = try readState(), let top = state.entries.last, top.text == current { return state.original }
        return current
    }

    func readFile() throws -> String {
        // followSymlinks: /etc/resolv.conf is often a link (to resolved's stub, or resolvconf's file).
        String(decoding: try FileSystem.readFileIfPresent(path, followSymlinks: true, limit: 1 << 20) ?? [], as: UTF8.self)
    }

    /// In place: the same inode (a bind mount stays a bind mount), written
    /// first and truncated after, so that a reader never sees it empty.
    func writeFile(_ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        if fd < 0 { throw SystemError("open", path: path, errno: .current) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(done)) }
            if n < 0 { if errno == EINTR { continue }; throw SystemError("write", path: path, errno: .current) }
            done += n
        }
        if ftruncate(fd, off_t(bytes.count)) != 0 { throw SystemError("truncate", path: path, errno: .current) }
    }

    func readState() throws -> State? {
        guard let bytes = try FileSystem.readFileIfPresent(statePath, limit: 4 << 20) else { return nil }
        let r = JSONReader(try JSONSyntax.parse(bytes))
        return State(path: try r.string("path") ?? path, netns: try r.string("netns") ?? netns,
                     original: try r.string("original") ?? "",
                     entries: try r.optional("entries")?.array().map { Entry(id: try $0.string("id") ?? "", text: try $0.string("text") ?? "") } ?? [])
    }

    func writeState(_ s: State) throws {
        let bytes = Array(try RuntimeStore.makeEncoder().encode(s)) + [0x0A]
        try AtomicFile.write(bytes, to: statePath, mode: 0o600, durable: true)
    }
}

/// One tunnel's DNS on the system resolver, for the tunnel's lifetime.
/// Applied (again) by the settings applier; taken back by its undo step, or
/// by `TunnelDNS.cleanUp` from the record after a dead supervisor.
public final class TunnelDNS {
    let id: UUID
    let name: String
    let profile: DNSSettings?
    let runDirectory: String
    let searchPath: String?
    let log: (String) -> Void
    /// Told of every change, so the record holds what to undo at once.
    let onChange: (ResolverRecord?) -> Void
    public private(set) var record: ResolverRecord?
    /// The record was applied for a full tunnel (`~.` on resolved).
    var routesEveryName = false
    var backend: ResolverBackend?
    /// Why `backend` was chosen (nil when a test set it).
    var reason: String?
    /// For tests: the file the resolv.conf backend rewrites.
    var filePath = ResolvConf.systemPath

    public init(id: UUID, name: String, profile: DNSSettings?, runDirectory: String, searchPath: String?,
                log: @escaping (String) -> Void, onChange: @escaping (ResolverRecord?) -> Void) {
        self.id = id
        self.name = name
        self.profile = profile
        self.runDirectory = runDirectory
        self.searchPath = searchPath
        self.log = log
        self.onChange = onChange
    }

    /// Applies the provider's DNS (merged with the profile's) for `interface`.
    /// Returns false when there was nothing to apply. A full tunnel without
    /// match domains sends every name to the tunnel's servers: on
    /// systemd-resolved that takes the routing domain `~.`, or resolved keeps
    /// asking the other links' servers too (outside the tunnel).
    @discardableResult
    public func apply(_ providerDNS: [String], interface: String, fullTunnel: Bool = false) throws -> Bool {
        let config = try TunnelDNSConfig.merge(provider: providerDNS, profile: profile)
        guard !config.isEmpty else {
            if record != nil { remove() }
            return false
        }
        let everyName = fullTunnel && config.matchDomains.isEmpty && !config.servers.isEmpty
        if let record, record.servers == config.servers, record.searchDomains == config.searchDomains,
           record.matchDomains == config.matchDomains, everyName == routesEveryName { return true }
        if backend == nil {
            let (chosen, why) = ResolverBackend.detect(searchPath: searchPath)
            backend = chosen
            reason = why
            log("[#] DNS backend: \(chosen.rawValue) (\(why))")
        }
        let backend = self.backend ?? .file
        var r = ResolverRecord(backend: backend.rawValue)
        r.reason = reason
        r.servers = config.servers
        r.searchDomains = config.searchDomains
        r.matchDomains = config.matchDomains
        r.netns = NetworkNamespace.current()
        switch backend {
        case .resolved:
            r.interface = interface
            try resolvectl(["dns", interface] + config.servers)
            try resolvectl(["domain", interface] + config.searchDomains + config.matchDomains.map { "~" + $0 } + (everyName ? ["~."] : []))
            // Split DNS: only the match domains go to this link.
            try resolvectl(["default-route", interface, config.matchDomains.isEmpty ? "yes" : "no"])
            if everyName { r.note = "full tunnel: every name goes to the tunnel's servers (routing domain ~.)" } // English: the runtime record's, shown by status
            log("[#] resolvectl dns \(interface) \(config.servers.joined(separator: " "))" + (everyName ? ", domain ~. (full tunnel)" : ""))
        case .resolvconf:
            let key = "\(interface).vpnctl"
            r.interface = key
            let text = ResolvConf.render(config, profile: name, original: "")
            let file = "\(runDirectory)/\(id.lowercasedString).resolvconf"
            try AtomicFile.write(Array(text.utf8), to: file, mode: 0o600, durable: false)
            defer { unlink(file) }
            guard let prog = Processes.which("resolvconf", path: searchPath) else { throw VPNError(.failure, "resolvconf is gone") } // English: the supervisor's, for its log and runtime record
            let res = try Command.run("/bin/sh", ["sh", "-c", "exec \"$0\" -a \"$1\" < \"$2\"", prog, key, file])
            if !res.succeeded { throw VPNError(.failure, "resolvconf -a \(key) failed: \(res.output.trimmedWhitespace)") } // English: the supervisor's
            log("[#] resolvconf -a \(key)")
        case .file:
            guard let netns = r.netns else { throw VPNError(.failure, "cannot read this process's network namespace") } // English: the supervisor's
            if let refusal = ResolvConf.refusal(filePath) { throw VPNError(.failure, refusal) }
            r.path = filePath
            if !config.matchDomains.isEmpty {
                r.note = "split DNS needs systemd-resolved; every name goes to the tunnel's servers"
            }
            try ResolvConfStack(runDirectory: runDirectory, path: filePath, netns: netns)
                .push(id: id) { ResolvConf.render(config, profile: name, original: $0) }
            log("[#] \(filePath) rewritten in place: nameserver \(config.servers.joined(separator: " "))"
                + (config.searchDomains.isEmpty ? "" : ", search \(config.searchDomains.joined(separator: " "))"))
        }
        record = r
        routesEveryName = everyName
        onChange(r)
        return true
    }

    /// Takes the tunnel's DNS back.
    public func remove() {
        guard let r = record else { return }
        for line in TunnelDNS.undo(r, id: id, runDirectory: runDirectory, searchPath: searchPath) { log("[#] \(line)") }
        record = nil
        onChange(nil)
    }

    func resolvectl(_ args: [String]) throws {
        guard let prog = Processes.which("resolvectl", path: searchPath) else { throw VPNError(.failure, "resolvectl is not installed") } // English: the supervisor's
        let res = try Command.run(prog, [prog] + args)
        if !res.succeeded {
            throw VPNError(.failure, "resolvectl \(args.joined(separator: " ")) failed: \(res.output.trimmedWhitespace)") // English: the supervisor's
        }
    }

    /// Undoes what `r` says was applied, in this namespace only. Returns
    /// what was done (or why not), in words.
    public static func undo(_ r: ResolverRecord, id: UUID, runDirectory: String, searchPath: String?) -> [String] {
        let here = NetworkNamespace.current()
        if let there = r.netns, there != here {
            return [L("DNS left alone: it was applied in network namespace \(there), this is \(here ?? "?"); stop the profile there")]
        }
        switch ResolverBackend(rawValue: r.backend) {
        case .resolved:
            guard let i = r.interface, let prog = Processes.which("resolvectl", path: searchPath) else { return [] }
            _ = try? Command.run(prog, [prog, "revert", i])
            return ["resolvectl revert \(i)"]
        case .resolvconf:
            guard let key = r.interface, let prog = Processes.which("resolvconf", path: searchPath) else { return [] }
            _ = try? Command.run(prog, [prog, "-d", key])
            return ["resolvconf -d \(key)"]
        case .file:
            guard let netns = r.netns else { return [] }
            let stack = ResolvConfStack(runDirectory: runDirectory, path: r.path ?? ResolvConf.systemPath, netns: netns)
            do {
                return try stack.pop(id: id).map { [$0] } ?? []
            } catch {
                return ["[!] " + L("cannot restore \(stack.path): \(error)")]
            }
        case nil:
            return []
        }
    }
}
