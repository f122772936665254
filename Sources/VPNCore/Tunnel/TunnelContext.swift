#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What a running provider tunnel is given (the NEPacketTunnelProvider's
/// world): the profile and its secrets, the system it changes, the event loop
/// it waits on, and one way to report: `transition`, `update` and `finish`.
/// It keeps the runtime record, writes it on every change and rings the
/// starting CLI's doorbell.
public final class TunnelContext {
    public let id: UUID
    public let profile: Profile
    public let store: PreferencesStore
    public let runtime: RuntimeStore
    public let system: TunnelSystem
    public let loop: EventLoop
    /// How long connecting may take before the start fails (for a
    /// persistent tunnel: before it says it is retrying).
    public let startTimeoutMs: Int64
    /// A server that does not answer does not end the tunnel (the profile's
    /// `persistent`, or `start --persist`).
    public var persistent = false
    /// The PATH providers are looked up in (nil: the default).
    public let searchPath: String?
    /// Where the provider's stdout and stderr go.
    public let outputFD: Int32
    let logLine: (String) -> Void
    let startedAtMs: Int64
    public private(set) var record: RuntimeRecord
    var doorbell: Int32
    /// 0 once the tunnel ended cleanly, 1 after a failure; nil while it runs.
    public private(set) var exitCode: Int32?
    /// Called once the write end of the provider's output can be closed.
    var onProviderSpawned: () -> Void = {}
    /// The tunnel's DNS on the system resolver (the settings applier applies it).
    public var dns: TunnelDNS?
    /// The kill switch, when the profile asks for one: it follows the
    /// record's interface and routes.
    public var killSwitch: KillSwitch?
    /// The profile's app rules while they are in place.
    public var appSession: AppSession?
    /// What the start asked for before the spawn (memory only).
    public var credentials = CredentialAnswers()
    /// The line to the start that spawned this supervisor, for what the
    /// provider asks on the way; nil (or closed) once nobody waits.
    public var credentialLine: CredentialLine?

    /// Asks the person who started the tunnel; `reply` gets nil when nobody can answer.
    public func ask(_ request: CredentialRequest, reply: @escaping (CredentialAnswers?) -> Void) {
        guard let line = credentialLine, !line.closed else { return reply(nil) }
        line.ask(request, on: loop, reply: reply)
    }

    public init(profile: Profile, store: PreferencesStore, runtime: RuntimeStore, system: TunnelSystem, loop: EventLoop,
                record: RuntimeRecord, startTimeoutMs: Int64, searchPath: String?, outputFD: Int32, doorbell: Int32 = -1,
                log: @escaping (String) -> Void) {
        id = profile.id
        self.profile = profile
        self.store = store
        self.runtime = runtime
        self.system = system
        self.loop = loop
        self.record = record
        self.startTimeoutMs = startTimeoutMs
        self.searchPath = searchPath
        self.outputFD = outputFD
        self.doorbell = doorbell
        logLine = log
        startedAtMs = loop.nowMs
    }

    public func log(_ line: String) { logLine(line) }

    /// What every provider's settings applier gets from the profile: where
    /// the DNS goes, and enforceRoutes' table.
    public func configure(_ applier: SettingsApplier) {
        applier.dns = dns
        if let apps = appSession { applier.routeTable = apps.table }
        if profile.enforceRoutes { applier.enforcedTable = SettingsApplier.enforcedTable(ifindex: applier.ifindex) }
    }

    /// The settings applier for the provider's interface, set up as the
    /// profile asks (`configure`): made here, a provider cannot forget the
    /// DNS or enforceRoutes (charon's and the plugins' appliers once did).
    public func makeApplier(interface: String, ifindex: Int32, undo: UndoStack) -> SettingsApplier {
        let applier = SettingsApplier(interface: interface, ifindex: ifindex, system: system, undo: undo, log: log)
        configure(applier)
        return applier
    }

    public var status: VPNStatus { record.status }

    /// Milliseconds since the supervisor started the tunnel.
    public var elapsedMs: Int64 { loop.nowMs - startedAtMs }

    /// The provider process is running: its pid goes into the record, and the
    /// supervisor's copy of its output pipe is closed.
    public func providerSpawned(_ pid: pid_t, startTime: UInt64?) {
        record.providerPid = pid
        record.providerStartTime = startTime
        onProviderSpawned()
    }

    /// Changes the record (interface, settings) without a transition; written
    /// with the next transition.
    public func update(_ change: (inout RuntimeRecord) -> Void) {
        change(&record)
        killSwitch?.update(interface: record.interface, routes: record.settings?.routes ?? [])
        if let apps = appSession {
            let servers = (try? TunnelDNSConfig.merge(provider: record.settings?.dns ?? [], profile: profile.dnsSettings).servers) ?? []
            apps.follow(dns: servers)
        }
    }

    /// Changes the record and writes it at once, without a transition: for
    /// what a clean-up must find even if the supervisor dies the next moment.
    public func persist(_ change: (inout RuntimeRecord) -> Void) {
        update(change)
        do { try runtime.write(record) } catch { log("[!] cannot write the runtime record: \(error)") }
    }

    /// Connected after reasserting is a reconnect: a new session, with its own
    /// `connectedSince` and counters, counted in `reconnects` and noted in the
    /// event log. `resumed`: the same security associations carried on (an
    /// IKEv2 peer answered again after retransmits): the session goes on.
    /// `note` goes into the event (a provider's own remark, such as
    /// transitions it coalesced).
    public func transition(_ status: VPNStatus, error: ConnectionError? = nil, stopReason: StopReason? = nil, resumed: Bool = false,
                           note remark: String? = nil) {
        let previous = record.status
        record.status = status
        record.updatedAt = Date()
        if let error { record.lastDisconnectError = error }
        if let stopReason { record.stopReason = stopReason }
        var note: String? = remark
        let reconnect = status == .connected && previous == .reasserting && record.connectedSince != nil && !resumed
        if resumed && status == .connected && previous == .reasserting {
            note = "the peer answers again; the same session goes on"
        }
        if reconnect {
            let n = (record.reconnects ?? 0) + 1
            record.reconnects = n
            note = "reconnected (reconnect \(n) since start); a new session begins" + (remark.map { "; \($0)" } ?? "")
        }
        if status == .connected && (record.connectedSince == nil || reconnect) {
            record.connectedSince = Date()
            // Kept so that `stats --profile` can show this session's bytes.
            if let name = record.interface, let c = system.counters(name) {
                record.rxBytesAtConnect = c.rxBytes
                record.txBytesAtConnect = c.txBytes
            }
        }
        if status == .disconnected { record.connectedSince = nil }
        write(previous: previous, error: error, note: note)
        ringDoorbell()
        if previous != status {
            log("[*] \(previous.name) -> \(status.name)\(error.map { ": \($0.name): \($0.message)" } ?? "")\(note.map { ": \($0)" } ?? "")")
        }
    }

    func write(previous: VPNStatus, error: ConnectionError?, note: String?) {
        do {
            try runtime.write(record)
            if previous != record.status {
                try runtime.appendEvent(TransitionEvent(time: record.updatedAt, id: id.lowercasedString, name: record.name,
                                                        status: record.status.name, previous: previous.name,
                                                        interface: record.interface, error: error, note: note), id: id)
            }
        } catch {
            log("[!] cannot write the runtime record: \(error)")
        }
    }

    func ringDoorbell() {
        guard doorbell >= 0 else { return }
        Doorbell.ring(doorbell)
        if record.status == .connected || record.status == .disconnected {
            close(doorbell)
            doorbell = -1
        }
    }

    /// What failed outside the provider while the tunnel ran (the kill
    /// switch could not follow it): the tunnel is stopped and ends with this.
    public private(set) var fault: ConnectionError?
    /// Called once, on the first fault (the supervisor stops the tunnel).
    public var onFault: () -> Void = {}

    public func fail(_ error: ConnectionError) {
        guard fault == nil, exitCode == nil else { return }
        fault = error
        log("[!] \(error.name): \(error.message); stopping the tunnel")
        onFault()
    }

    /// The tunnel is down (the provider has undone what it made):
    /// disconnected with `error` (nil for a clean stop) and `reason`; the
    /// loop ends. A fault stands in for a clean stop's missing error.
    public func finish(error: ConnectionError?, reason: StopReason) {
        guard exitCode == nil else { return }
        let error = error ?? fault
        let reason = fault != nil && error == fault ? StopReason.configurationFailed : reason
        transition(.disconnected, error: error, stopReason: reason)
        exitCode = error == nil ? 0 : 1
        loop.stop()
    }
}

/// A provider's running tunnel, driven by the supervisor's one event loop.
/// Each method runs on the loop; the tunnel reports through its context and
/// calls `context.finish` exactly once, when everything it made is undone.
public protocol ProviderTunnel: AnyObject {
    /// Brings the tunnel up (or fails and finishes). Waits are done by
    /// registering fds and timers on `context.loop`, never by blocking.
    func start()
    /// The supervisor was told to stop (SIGTERM, SIGINT, SIGHUP).
    func stop(reason: StopReason)
    /// A child of the supervisor ended (reaped by the supervisor).
    func childExited(_ pid: pid_t, _ status: ExitStatus)
    /// Links, addresses or routes changed (netlink).
    func networkChanged()
}
