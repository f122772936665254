#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A profile's status as derived from its runtime record and the live system.
public struct DerivedStatus: Codable, Equatable, Sendable {
    public var id: UUID
    public var name: String
    public var status: VPNStatus
    public var interface: String?
    public var connectedSince: Date?
    public var lastDisconnectError: ConnectionError?
    public var stopReason: StopReason?
    public var supervisorAlive: Bool
    /// Behind a reference: the record is most of a status's size.
    @Boxed public var record: RuntimeRecord?

    public var isActive: Bool { [.connecting, .connected, .reasserting, .disconnecting].contains(status) }

    /// A running persistent tunnel: a server that does not answer does not end it.
    public var isPersistent: Bool { isActive && record?.persistent == true }

    /// What a persistent tunnel past its start timeout waits for; nil once connected.
    public var retrying: String? { status == .connecting || status == .reasserting ? record?.retrying : nil }

    /// DNS servers and domains the tunnel's settings carry (recorded, not yet
    /// applied to the system resolver); empty unless the tunnel is up.
    public var dns: [String] { isActive ? record?.settings?.dns ?? [] : [] }

    /// The DNS in effect on the system resolver, and which backend holds it.
    public var resolver: ResolverRecord? { isActive ? record?.resolver : nil }

    /// The DNS a dead supervisor left on the system resolver (names still go
    /// to the gone tunnel's servers): what `stop` or the next `start` takes back.
    public var staleResolver: ResolverRecord? {
        guard !supervisorAlive, let r = record, r.status != .disconnected else { return nil }
        return r.resolver
    }

    /// The kill switch: nil (none), "on" while the tunnel runs, or blocking
    /// while it is down (fail closed, until `stop`).
    public var killSwitch: KillSwitchState? {
        guard record?.killSwitch != nil else { return nil }
        if killSwitchTablePresent == false { return .missing }
        return isActive ? .on : .blocking
    }

    /// Whether the kill switch's table was found in nftables (nil: not
    /// looked for, as in the waits; `status` looks).
    public var killSwitchTablePresent: Bool? = nil

    /// Routes out of another interface that take traffic off this tunnel's
    /// routes ("128.0.0.0/1 dev eth0"): blocked by a kill switch that is on,
    /// a leak without one. `status` looks; empty otherwise.
    public var bypassRoutes: [String] = []

    /// A running tunnel's newest handshake and its interface's counters.
    /// `status` looks; nil otherwise.
    public var activity: TunnelActivity? = nil

    public enum KillSwitchState: String, Codable, Sendable {
        case on, blocking, missing
        public var text: String {
            switch self {
            case .on: return "on"
            case .blocking: return "blocking: kill switch active, tunnel down"
            case .missing: return "MISSING: the kill switch's nftables table is gone (a firewall reload?); nothing is blocked"
            }
        }
    }

    public init(id: UUID, name: String, status: VPNStatus, interface: String? = nil, connectedSince: Date? = nil,
                lastDisconnectError: ConnectionError? = nil, stopReason: StopReason? = nil, supervisorAlive: Bool,
                record: RuntimeRecord? = nil) {
        self.id = id
        self.name = name
        self.status = status
        self.interface = interface
        self.connectedSince = connectedSince
        self.lastDisconnectError = lastDisconnectError
        self.stopReason = stopReason
        self.supervisorAlive = supervisorAlive
        self.record = record
    }
}

/// vpnctl marks every interface it creates with an alias naming the profile,
/// and deletes an interface it finds later only when the mark is there.
public enum InterfaceMark {
    public static func of(_ id: UUID) -> String { "vpnctl:\(id.lowercasedString)" }
}

/// The controller's side of tunnels: it derives status, spawns supervisors
/// and waits for them, and cleans up after dead ones. It owns nothing: the
/// supervisor holds the tunnel.
public struct TunnelController {
    public let runtime: RuntimeStore
    public let configDirectory: String
    /// Processes, the log and netlink: the system, or a unit test's fake.
    public let host: any SupervisorHost
    /// The vpnctl that runs `__supervise`: this executable, unless it is
    /// another front end (vpnctl-dbus runs the vpnctl beside it).
    public var supervisorExecutable: String? = nil

    /// `files` holds the run directory: the system's, or a unit test's `MemoryFiles`.
    public init(configDirectory: String, runDirectory: String, host: any SupervisorHost = SystemSupervisorHost(),
                files: any Files = SystemFiles()) {
        self.configDirectory = configDirectory
        runtime = RuntimeStore(directory: runDirectory, files: files)
        self.host = host
    }

    /// Status is derived every time; nothing is remembered from an earlier run.
    /// `recorded`: the run directory's record files, listed once for many
    /// profiles (see `RuntimeStore.recordFileNames`); a profile with none
    /// there is disconnected without a look for its file.
    public func derive(_ profile: Profile, recorded: Set<String>? = nil) throws -> DerivedStatus {
        let unrecorded = recorded.map { !$0.contains(profile.id.lowercasedString + ".json") } ?? false
        guard !unrecorded, let r = try runtime.read(profile.id) else {
            return DerivedStatus(id: profile.id, name: profile.name, status: .disconnected, supervisorAlive: false)
        }
        let alive = TunnelController.isSupervisor(r, host: host)
        var d = DerivedStatus(id: profile.id, name: profile.name, status: r.status, interface: r.interface,
                              connectedSince: r.connectedSince, lastDisconnectError: r.lastDisconnectError,
                              stopReason: r.stopReason, supervisorAlive: alive, record: r)
        if r.status == .disconnected {
            d.interface = nil
            d.connectedSince = nil
            return d
        }
        if !alive {
            // A record that says connected while its supervisor is dead is a lie.
            d.status = .disconnected
            d.connectedSince = nil
            d.stopReason = .providerFailed
            d.lastDisconnectError = ConnectionError(.pluginFailed,
                "the tunnel supervisor (pid \(r.supervisorPid.map(String.init) ?? "?")) is gone; it was \(r.status.name)")
            return d
        }
        // A tunnel in another network namespace (`ip netns exec NS vpnctl
        // start`) has its link there, where only its supervisor sees it; a
        // look here would find another link of the name, or none.
        if let name = r.interface, let index = r.ifindex, r.status == .connected || r.status == .reasserting,
           let pid = r.supervisorPid, host.sharesNetworkNamespace(with: pid) {
            let live = (try? host.linkIndex(named: name)) ?? nil
            if live != index { d.status = .disconnecting }
        }
        return d
    }

    /// A record proves its supervisor only when the recorded pid is alive,
    /// started at the recorded time, and runs `__supervise` for this profile:
    /// anything less may be a recycled pid or a forged record.
    public static func isSupervisor(_ r: RuntimeRecord, host: any SupervisorHost = SystemSupervisorHost()) -> Bool {
        guard let pid = r.supervisorPid, host.isAlive(pid, startTime: r.supervisorStartTime),
              let argv = host.commandLine(of: pid) else { return false }
        return argv.contains("__supervise") && argv.last == r.id.lowercasedString
    }

    /// Removes what a dead supervisor left: its provider, interface, UAPI
    /// socket and excluded routes. Returns what was removed. A process is
    /// signalled only when its pid and start time match the record, and an
    /// interface is deleted only when it carries this profile's mark.
    @discardableResult
    public func cleanUpAfterDeadSupervisor(_ status: DerivedStatus) -> [String] {
        guard let r = status.record, !status.supervisorAlive, r.status != .disconnected else { return [] }
        var done: [String] = []
        if let pid = r.providerPid, host.isAlive(pid, startTime: r.providerStartTime) {
            host.signal(pid, SIGKILL)
            done.append("killed provider pid \(pid)")
        }
        if let name = r.interface, InterfaceName.isValid(name) {
            if let link = try? host.linkAlias(named: name), link.index == r.ifindex {
                if link.alias == InterfaceMark.of(r.id) {
                    try? host.deleteLink(name)
                    done.append("deleted interface \(name)")
                } else {
                    done.append("left interface \(name) alone (vpnctl did not create it: no mark)")
                }
            }
            for excluded in r.settings?.excludedRoutes ?? [] {
                if (try? host.deleteRoute(excluded, table: 254)) != nil { done.append("deleted route \(excluded)") }
            }
            // enforceRoutes: the rules, and the excluded routes' copies in its table.
            if let t = r.settings?.enforcedTable {
                for prefix in r.settings?.enforcedRoutes ?? [] {
                    if (try? host.deleteRule(to: prefix, table: t, priority: SettingsApplier.enforcedRulePriority)) != nil {
                        done.append("deleted rule to \(prefix) table \(t)")
                    }
                }
                for excluded in r.settings?.excludedRoutes ?? [] { _ = try? host.deleteRoute(excluded, table: t) }
            }
        }
        if let apps = r.apps { done += cleanUpApps(apps, id: r.id, excluded: r.settings?.excludedRoutes ?? []) }
        done += ProviderRegistry.cleanUp(after: r, runtime: runtime)
        if let resolver = r.resolver {
            done += TunnelDNS.undo(resolver, id: r.id, runDirectory: runtime.directory, searchPath: nil)
        }
        var updated = r
        updated.resolver = nil
        updated.apps = nil
        updated.status = .disconnected
        updated.connectedSince = nil
        updated.stopReason = .providerFailed
        updated.lastDisconnectError = status.lastDisconnectError
        updated.updatedAt = Date()
        try? runtime.write(updated)
        try? runtime.appendEvent(TransitionEvent(time: updated.updatedAt, id: r.id.lowercasedString, name: r.name,
                                                 status: "disconnected", previous: r.status.name, interface: r.interface,
                                                 error: updated.lastDisconnectError), id: r.id)
        return done
    }

    /// The app rules a dead supervisor left: its mark rules, the excluded
    /// routes in its table (the tunnel's own went with the interface), and
    /// its cgroup when nobody is in it.
    func cleanUpApps(_ apps: AppRoutingRecord, id: UUID, excluded: [String]) -> [String] {
        var done: [String] = []
        // The mark, table and cgroup are the profile's own, worked out from its
        // id: a record never names another's (or a wildcard 0 to RTM_DELRULE).
        let mark = AppRouting.mark(for: id)
        for rule in MarkRule.rules(mode: apps.mode, mark: mark, table: mark) {
            if (try? host.deleteMarkRule(rule)) != nil { done.append("deleted rule \(rule.description)") }
        }
        for prefix in excluded { _ = try? host.deleteRoute(prefix, table: mark) }
        for file in apps.sysctls where file == AppSession.srcValidMark && (try? AppSession.writeSysctl(file, "0")) != nil {
            done.append("set net.ipv4.conf.all.src_valid_mark back to 0")
        }
        if apps.ownedCgroup != nil, let tree = CgroupTree.current() {
            let owned = AppRouting.ownedCgroup(for: id)
            if tree.removeDirectory(owned) {
                tree.removeDirectory("/vpnctl")
                done.append("removed cgroup \(owned)")
            }
        }
        return done
    }

    /// Removes the kill switch a record names (a dead supervisor's, or one a
    /// failed tunnel left blocking), in this network namespace only, and
    /// writes the record without it. Returns what was done.
    @discardableResult
    public func removeKillSwitch(_ profile: Profile, searchPath: String?) -> [String] {
        guard let r = try? runtime.read(profile.id), let ks = r.killSwitch, !TunnelController.isSupervisor(r, host: host) else { return [] }
        let (done, removed) = KillSwitch.remove(ks, id: r.id) {
            try NftFirewall(searchPath: searchPath, scratch: "\(runtime.directory)/\(r.id.lowercasedString).nft")
        }
        if removed {
            var updated = r
            updated.killSwitch = nil
            try? runtime.write(updated)
        }
        return [done]
    }

    /// Spawns the detached supervisor for `profile`; returns its pid and the
    /// listening end of a doorbell it rings on every transition (the caller
    /// closes it). `executable` is vpnctl itself (a unit test's is not).
    /// `credentials`: the supervisor's end of the credential line (fd 4 in it), if any.
    public func spawnSupervisor(_ profile: Profile, timeout: Int, path: String?, startedBy: StartOrigin? = nil,
                                persistent: Bool = false, credentials: Int32? = nil,
                                executable: String? = nil) throws -> (pid: pid_t, doorbell: Int32) {
        try runtime.prepare()
        let logFD: Int32
        do { logFD = try host.openLog(runtime.logPath(profile.id)) } catch {
            throw VPNError(.configurationReadWriteFailed, L("cannot open \(runtime.logPath(profile.id)): \(error)"))
        }
        defer { close(logFD) }
        let exe = executable ?? supervisorExecutable ?? Processes.currentExecutable()
        var env = ["PATH": path ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
        env["LANG"] = "C"
        if let plugins = getenv("VPNCTL_PROVIDERS_DIR") { env["VPNCTL_PROVIDERS_DIR"] = String(cString: plugins) }
        do {
            let bell = try Doorbell.pair()
            defer { close(bell.ringer) }
            do {
                // The ringer becomes fd 3 in the supervisor.
                var argv = [exe, "__supervise", "--config-dir", configDirectory, "--run-dir", runtime.directory,
                            "--timeout", String(timeout), "--notify-fd", "3"]
                if let o = startedBy { argv += ["--on-demand-rule", String(o.rule), "--on-demand-reason", o.reason] }
                if persistent { argv.append("--persist") }
                if credentials != nil { argv += ["--credentials-fd", "4"] }
                // The id stays last: that is how a live supervisor is recognised.
                let pid = try host.spawnSupervisor(exe, argv + [profile.id.lowercasedString], environment: env,
                                                   passFDs: [bell.ringer] + (credentials.map { [$0] } ?? []), logFD: logFD)
                return (pid, bell.listener)
            } catch {
                close(bell.listener)
                throw error
            }
        } catch {
            throw VPNError(.failure, L("cannot start the tunnel supervisor: \(error)"))
        }
    }

    /// Waits, event-driven, until `done` says so or `timeoutMs` passes; the
    /// status is derived afresh on every wake. Wakes come from the pidfd of
    /// the supervisor and from `doorbell` (a supervisor this process started)
    /// or else, when `watchRecords`, inotify on the run dir. Without either,
    /// only the supervisor's exit (or the 250 ms tick) wakes it: right for a
    /// stop, which is done only when the supervisor is gone. `onWake` runs on
    /// every wake.
    /// `line`: the credential line of a supervisor this process started;
    /// each question on it is answered with `answer` while the wait goes on.
    public func wait(for profile: Profile, timeoutMs: Int64, supervisor: pid_t?, doorbell: Int32? = nil,
                     watchRecords: Bool = true, line: CredentialLine? = nil,
                     answer: (CredentialRequest) -> CredentialAnswers? = { _ in nil },
                     onWake: () -> Void = {}, done: (DerivedStatus) -> Bool) throws -> DerivedStatus? {
        try runtime.prepare()
        let exitWatch = supervisor.flatMap { host.watchExit(of: $0) }
        let pidfd = exitWatch?.fd ?? -1
        var bell = doorbell ?? -1
        let watch = bell < 0 && (watchRecords || pidfd < 0)
            ? try DirectoryWatch([runtime.directory], mask: DirectoryWatch.replacements) : nil
        var deadline = monotonicMilliseconds() + timeoutMs
        var supervisorGone = false
        while true {
            let d = try derive(profile)
            if done(d) { return d }
            // Once the supervisor has exited nothing else will change.
            if supervisorGone { return d }
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { return nil }
            let asks = line.flatMap { $0.closed ? nil : $0.fd } ?? -1
            let fds = [bell >= 0 ? bell : watch?.fd ?? -1, pidfd, asks]
            let ready = pollReadable(fds, timeoutMs: Int32(min(left, 250)))
            if ready.contains(1) { supervisorGone = true }
            if ready.contains(2), let line {
                // The time a person takes to answer is not the tunnel's.
                let asked = monotonicMilliseconds()
                let request = line.serve(answer)
                deadline += monotonicMilliseconds() - asked
                // A sign-in in a browser: the supervisor waits for it up to
                // the request's time, and so does this.
                if let request, request.url != nil {
                    deadline = max(deadline, monotonicMilliseconds() + Int64(request.timeoutSeconds + 5) * 1000)
                }
            }
            if ready.contains(0) {
                // At the end of the line the supervisor's exit and the tick remain.
                if bell >= 0 { if !Doorbell.drain(bell) { bell = -1 } } else { watch?.drain() }
            }
            onWake()
        }
    }
}

/// `vpnctl block`: a profile's kill switch without its tunnel, for boot
/// (vpnctl-block@.service runs it before the network comes up). The table
/// is the one the profile's supervisor installs (the same name, replaced in
/// one transaction when the tunnel starts), so there is never a moment
/// without it; the runtime record names it, so that status says traffic is
/// blocked and `stop` (or `disable`) lifts it.
extension TunnelController {
    public enum BlockOutcome: Equatable, Sendable {
        /// The table is in place (`table`), named in the runtime record.
        case blocked(table: String)
        /// The profile asks for no kill switch (includeAllNetworks and enforceRoutes are off).
        case noKillSwitch
        /// A supervisor runs the profile: its own table is in place.
        case running
    }

    public func block(_ profile: Profile, searchPath: String?, log: @escaping (String) -> Void) throws -> BlockOutcome {
        guard KillSwitch.wanted(by: profile) else { return .noKillSwitch }
        try runtime.prepare()
        var record = (try? runtime.read(profile.id)) ?? RuntimeRecord(id: profile.id, name: profile.name, status: .disconnected)
        if TunnelController.isSupervisor(record, host: host) { return .running }
        let killSwitch = KillSwitch(profile: profile, firewall: try NftFirewall(searchPath: searchPath,
                                                                              scratch: "\(runtime.directory)/\(profile.id.lowercasedString).nft"),
                                    log: log)
        try killSwitch.install()
        record.name = profile.name
        record.killSwitch = killSwitch.record
        try runtime.write(record)
        return .blocked(table: killSwitch.rules.table)
    }
}
