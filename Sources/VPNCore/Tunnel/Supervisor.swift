#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The tunnel supervisor: one detached process per running profile. It loads
/// the profile, finds its provider and runs the provider's tunnel on one
/// event loop over a signalfd (stop signals, and SIGCHLD: the one place
/// children are reaped), a netlink monitor, the provider's output pipe and
/// the provider's own fds and timers. Single-threaded, so that the
/// provider's parent-death signal is tied to this (the only) thread.
public final class Supervisor {
    public struct Options {
        public var configDirectory: String
        public var runDirectory: String
        public var startTimeout: Int64
        public var path: String?
        /// The starting CLI's doorbell (`Doorbell`): rung on every transition,
        /// closed once the start has an outcome (connected or disconnected).
        public var notifyFD: Int32
        /// Recorded with every transition: who started the tunnel.
        public var startedBy: StartOrigin?
        /// `start --persist`: persistent for this run, whatever the profile says.
        public var persistent = false
        /// The starting CLI's credential line (`CredentialLine`), or -1.
        public var credentialsFD: Int32 = -1
        public init(configDirectory: String, runDirectory: String, startTimeout: Int64, path: String?,
                    notifyFD: Int32 = -1, startedBy: StartOrigin? = nil) {
            self.notifyFD = notifyFD
            self.startedBy = startedBy
            self.configDirectory = configDirectory
            self.runDirectory = runDirectory
            self.startTimeout = startTimeout
            self.path = path
        }
    }

    let id: UUID
    let options: Options
    let runtime: RuntimeStore
    /// The supervisor's stderr, opened on the log file by `start`.
    let logFD: Int32
    let logFile: BoundedLog
    let makeSystem: () throws -> TunnelSystem
    let reapChildren: () -> [(pid: pid_t, status: ExitStatus)]
    /// The system resolver and nftables: real in the product, nil (DNS only
    /// recorded, no kill switch possible) unless a test gives its own.
    let systemResolver: Bool
    let makeFirewall: ((String) throws -> FirewallPort)?

    public convenience init(id: UUID, options: Options) {
        self.init(id: id, options: options, logFD: 2, system: { try KernelTunnelSystem() }, reap: ChildReaper.reapAll,
                  systemResolver: true, firewall: { try NftFirewall(searchPath: options.path, scratch: $0) })
    }

    /// For unit tests: a log of their own instead of stderr, a fake system,
    /// and a reaper that cannot take the test process's other children.
    init(id: UUID, options: Options, logFD: Int32, system: @escaping () throws -> TunnelSystem,
         reap: @escaping () -> [(pid: pid_t, status: ExitStatus)], systemResolver: Bool = false,
         firewall: ((String) throws -> FirewallPort)? = nil) {
        self.id = id
        self.options = options
        runtime = RuntimeStore(directory: options.runDirectory)
        self.logFD = logFD
        logFile = BoundedLog(path: runtime.logPath(id), fd: logFD)
        makeSystem = system
        reapChildren = reap
        self.systemResolver = systemResolver
        makeFirewall = firewall
    }

    /// The profile's name once it is read (for the journal's lines).
    var profileName: String?

    /// A line of the tunnel's log (the run dir's logs/ID.log). What an
    /// administrator must see also goes to syslog, which is the journal
    /// under systemd (attributed to the unit that started the supervisor):
    /// each transition, and each failure as an error.
    func log(_ line: String) {
        logFile.write(line)
        let failed = line.hasPrefix("[!]") || (line.hasPrefix("[*] ") && line.contains(" -> disconnected: "))
        guard failed || (line.hasPrefix("[*] ") && line.contains(" -> ")) else { return }
        let who = profileName.map { "'\($0.escapingControls(keepLineBreaks: false))'" } ?? id.lowercasedString
        Journal.syslog(failed ? .error : .info, "tunnel \(who): \(line.escapingControls(keepLineBreaks: false))")
    }

    /// Runs until the tunnel is down. Returns the process exit status.
    public func run() -> Int32 {
        defer { logFile.flushRepeats() }
        let signals: SignalQueue
        do { signals = try SignalQueue() } catch { log("[!] \(error)"); return 1 }
        guard let lock = try? runtime.files.tryLock("\(options.runDirectory)/\(id.lowercasedString).lock") else {
            log("[!] another supervisor runs this profile")
            return 1
        }
        defer { withExtendedLifetime(lock) {} }
        var record = RuntimeRecord(id: id, name: id.lowercasedString, status: .disconnected)
        record.supervisorPid = getpid()
        record.supervisorStartTime = Processes.startTime(of: getpid())
        record.startedBy = options.startedBy
        // A kill switch a failed run left blocking stays named in the record
        // until this run replaces it (or `stop` removes it).
        if let old = try? runtime.read(id), let ks = old.killSwitch { record.killSwitch = ks }
        let store = PreferencesStore(directory: options.configDirectory)
        let loop = EventLoop()
        let output = providerOutput()
        let system: TunnelSystem
        do { system = try makeSystem() } catch {
            return refuse(record, ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
        let profile: Profile
        do {
            guard let p = try store.load().first(where: { $0.id == id }) else {
                return refuse(record, ConnectionError(.configurationNotFound, "the profile was removed"), .configurationRemoved)
            }
            profile = p
        } catch {
            return refuse(record, ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
        record.name = profile.name
        profileName = profile.name
        let context = TunnelContext(profile: profile, store: store, runtime: runtime, system: system, loop: loop, record: record,
                                    startTimeoutMs: options.startTimeout * 1000, searchPath: options.path,
                                    outputFD: output?.writeFD ?? logFD, doorbell: options.notifyFD, log: log)
        context.onProviderSpawned = { output?.closeWriteEnd() }
        if options.credentialsFD >= 0 {
            let line = CredentialLine(fd: options.credentialsFD)
            context.credentials = line.initialAnswers()
            context.credentialLine = line
        }
        if options.persistent || profile.persistent {
            context.persistent = true
            context.persist { $0.persistent = true }
        }
        context.transition(.connecting)
        let provider: any TunnelProvider
        do { provider = try ProviderRegistry.provider(for: profile) } catch {
            context.finish(error: ConnectionError(.pluginDisabled, "\(error)"), reason: .configurationFailed)
            return 1
        }
        // Include mode leaves the system resolver alone: only the matched
        // programs' queries go to the tunnel's servers (AppSession.follow).
        if systemResolver && profile.appRules?.mode != .include {
            context.dns = TunnelDNS(id: id, name: profile.name, profile: profile.dnsSettings, runDirectory: options.runDirectory,
                                    searchPath: options.path, log: log) { [context] r in context.persist { $0.resolver = r } }
        }
        // The kill switch goes in before the provider starts.
        guard installKillSwitch(profile, context) else { return 1 }
        guard startApps(profile, context, loop) else {
            endKillSwitch(context)
            return 1
        }
        let tunnel = provider.makeTunnel(in: context)
        // A kill switch that cannot follow the tunnel ends it: blocked and
        // down with the reason, never "on" while it blocks the tunnel too.
        context.killSwitch?.onFailure = { [context] why in context.fail(ConnectionError(.configurationFailed, why)) }
        context.onFault = { [loop] in _ = loop.after(0) { tunnel.stop(reason: .configurationFailed) } }
        watch(signals, tunnel, loop)
        var bypass: [String] = []
        let monitor = watchNetwork(tunnel, loop) { [self] in
            context.killSwitch?.refreshLocalNetworks()
            bypass = noteBypass(context, known: bypass)
        }
        if let output { watchOutput(output, loop) }
        tunnel.start()
        loop.run()
        output?.drain()
        withExtendedLifetime(monitor) {}
        endApps(context)
        endKillSwitch(context)
        return context.exitCode ?? 1
    }

    /// The profile's kill switch in place, named in the record; false (the
    /// run finished with the reason) when it cannot be. True without one.
    func installKillSwitch(_ profile: Profile, _ context: TunnelContext) -> Bool {
        guard KillSwitch.tableWanted(by: profile) else { return true }
        do {
            guard let makeFirewall else { throw VPNError(.failure, "no firewall in this build") } // English: goes into the runtime record
            let killSwitch = KillSwitch(profile: profile, firewall: try makeFirewall("\(options.runDirectory)/\(id.lowercasedString).nft"), log: log)
            try killSwitch.install()
            context.killSwitch = killSwitch
            context.persist { $0.killSwitch = killSwitch.record }
            return true
        } catch {
            let e = error as? VPNError
            context.finish(error: ConnectionError(.configurationFailed, "cannot put the kill switch in place: \(e?.message ?? "\(error)")"
                                                  + (e?.hint.map { " (\($0))" } ?? "")), reason: .configurationFailed)
            return false
        }
    }

    /// The profile's app rules in place (rules, cgroup, marks), and a check
    /// every second for cgroups that came or went; false (the run finished
    /// with the reason) when they cannot be. True without app rules.
    func startApps(_ profile: Profile, _ context: TunnelContext, _ loop: EventLoop) -> Bool {
        guard let rules = profile.appRules, let killSwitch = context.killSwitch else { return true }
        do {
            let session = AppSession(profile: profile, rules: rules, tree: try AppSession.tree(), system: context.system,
                                     killSwitch: killSwitch, mayStart: { uid in
                let name = UserDatabase.userName(uid)
                let gid = UserDatabase.primaryGroup(uid) ?? uid
                let caller = Caller(uid: uid, gid: gid, userName: name, groupNames: UserDatabase.groupNames(uid: uid, gid: gid, userName: name))
                // Exclude mode goes around the tunnel (and its kill switch): the stop right too.
                let policy = AccessPolicy()
                return policy.decide(caller, .start, profile: profile).allowed
                    && (rules.mode == .include || policy.decide(caller, .stop, profile: profile).allowed)
            }, log: log)
            context.appSession = session
            try session.install()
            context.persist { $0.apps = session.record }
            func tick() {
                _ = loop.after(1000) {
                    let before = session.covered
                    session.refresh()
                    if session.covered != before { context.persist { $0.apps = session.record } }
                    tick()
                }
            }
            tick()
            return true
        } catch {
            context.appSession?.end()
            context.appSession = nil
            let e = error as? VPNError
            context.finish(error: ConnectionError(.configurationFailed, "cannot put the app rules in place: \(e?.message ?? "\(error)")"),
                           reason: .configurationFailed)
            return false
        }
    }

    func endApps(_ context: TunnelContext) {
        guard let session = context.appSession else { return }
        session.end()
        context.persist { $0.apps = nil }
    }

    /// Says once in the log each route that takes traffic off the tunnel
    /// (status says it on every call); returns the routes seen now.
    func noteBypass(_ context: TunnelContext, known: [String]) -> [String] {
        guard !context.profile.enforceRoutes, context.profile.appRules == nil, let i = context.record.interface, let routes = context.record.settings?.routes,
              !routes.isEmpty else { return [] }
        let now = TunnelBypass.current(interface: i, tunnelRoutes: routes, servers: context.profile.protocol.model.serverHosts)
        for r in now where !known.contains(r) {
            log("[!] route \(r) takes traffic off the tunnel" + (context.profile.includeAllNetworks ? "; the kill switch blocks it" : ": it leaks"))
        }
        return now
    }

    /// A stop the user asked for takes the kill switch away; a failure
    /// leaves it blocking until `vpnctl stop` (fail closed).
    func endKillSwitch(_ context: TunnelContext) {
        guard let killSwitch = context.killSwitch, killSwitch.installed else { return }
        // A table for app rules alone blocks nothing: it goes with the tunnel.
        guard context.record.stopReason == .userInitiated || !KillSwitch.wanted(by: context.profile) else {
            log("[*] the kill switch stays (table inet \(killSwitch.rules.table)): traffic is blocked until 'vpnctl stop \(context.profile.name)'")
            return
        }
        do {
            try killSwitch.remove()
            context.persist { $0.killSwitch = nil }
        } catch {
            log("[!] cannot remove the kill switch: \(error); 'vpnctl stop' tries again")
        }
    }

    /// A start refused before there is a tunnel: the record says why.
    func refuse(_ record: RuntimeRecord, _ error: ConnectionError, _ reason: StopReason) -> Int32 {
        var r = record
        r.status = .disconnected
        r.lastDisconnectError = error
        r.stopReason = reason
        r.updatedAt = Date()
        do { try runtime.write(r) } catch { log("[!] cannot write the runtime record: \(error)") }
        log("[*] disconnected: \(error.name): \(error.message)")
        if options.notifyFD >= 0 {
            Doorbell.ring(options.notifyFD)
            close(options.notifyFD)
        }
        return 1
    }

    /// Stop signals ask the tunnel to stop; SIGCHLD reaps every ended child
    /// here and tells the tunnel.
    func watch(_ signals: SignalQueue, _ tunnel: any ProviderTunnel, _ loop: EventLoop) {
        var stopping = false
        loop.watch(signals.fd) { [self] in
            for sig in signals.drain() {
                if sig == SIGCHLD {
                    for (pid, status) in reapChildren() { tunnel.childExited(pid, status) }
                } else if !stopping {
                    stopping = true
                    log("[*] signal \(sig): stopping")
                    tunnel.stop(reason: .userInitiated)
                }
            }
        }
    }

    /// Links, addresses and routes: a deleted utun, a changed path.
    func watchNetwork(_ tunnel: any ProviderTunnel, _ loop: EventLoop, also: @escaping () -> Void = {}) -> NetlinkMonitor? {
        let monitor: NetlinkMonitor
        do { monitor = try NetlinkMonitor() } catch {
            log("[!] \(error); network changes are noticed only by the provider's own checks")
            return nil
        }
        loop.watch(monitor.fd) {
            monitor.drain()
            tunnel.networkChanged()
            also()
        }
        return monitor
    }

    func watchOutput(_ output: ProviderOutput, _ loop: EventLoop) {
        var token: EventLoop.Token? = nil
        token = loop.watch(output.readFD) {
            output.drain()
            if output.closed { loop.cancel(token) }
        }
    }

    /// The provider's stdout and stderr, drained into the log by the loop.
    func providerOutput() -> ProviderOutput? {
        do { return try ProviderOutput(log: logFile) } catch {
            log("[!] \(error); the provider's output goes to the log file directly, uncapped")
            return nil
        }
    }
}
