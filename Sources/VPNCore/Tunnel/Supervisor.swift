#if canImport(Glibc)
import Glibc
#endif
import CVPNShims
import FoundationEssentials
import VPNSystem

/// The tunnel supervisor: one detached process per running profile. It makes
/// and configures the utun, starts and watches the provider, rewrites the
/// runtime record on every transition and tears everything down on SIGTERM or
/// when the provider fails. Single-threaded: one poll loop over a signalfd, a
/// netlink monitor, the provider's output pipe and a timer, so that the
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
        public init(configDirectory: String, runDirectory: String, startTimeout: Int64, path: String?,
                    notifyFD: Int32 = -1) {
            self.notifyFD = notifyFD
            self.configDirectory = configDirectory
            self.runDirectory = runDirectory
            self.startTimeout = startTimeout
            self.path = path
        }
    }

    let id: UUID
    let options: Options
    let runtime: RuntimeStore
    var record: RuntimeRecord
    /// The supervisor's stderr, opened on the log file by `start`.
    let logFD: Int32
    let logFile: BoundedLog
    let monotonicStart = monotonicMilliseconds()
    var doorbell: Int32

    public init(id: UUID, options: Options) {
        self.id = id
        self.options = options
        runtime = RuntimeStore(directory: options.runDirectory)
        record = RuntimeRecord(id: id, name: "", status: .disconnected)
        logFD = 2
        logFile = BoundedLog(path: runtime.logPath(id), fd: logFD)
        doorbell = options.notifyFD
    }

    func log(_ line: String) {
        logFile.write(line)
    }

    /// The provider's stdout and stderr, drained into the log by the loops.
    func providerOutput() -> ProviderOutput? {
        do { return try ProviderOutput(log: logFile) } catch {
            log("[!] \(error); the provider's output goes to the log file directly, uncapped")
            return nil
        }
    }

    /// Connected after reasserting is a reconnect: a new session, with its own
    /// `connectedSince` and counters, counted in `reconnects` and noted in the
    /// event log.
    func transition(_ status: VPNStatus, error: ConnectionError? = nil, stopReason: StopReason? = nil) {
        let previous = record.status
        record.status = status
        record.updatedAt = Date()
        if let error { record.lastDisconnectError = error }
        if let stopReason { record.stopReason = stopReason }
        var note: String? = nil
        let reconnect = status == .connected && previous == .reasserting && record.connectedSince != nil
        if reconnect {
            let n = (record.reconnects ?? 0) + 1
            record.reconnects = n
            note = "reconnected (reconnect \(n) since start); a new session begins"
        }
        if status == .connected && (record.connectedSince == nil || reconnect) {
            record.connectedSince = Date()
            // Kept so that `stats --profile` can show this session's bytes. One
            // link over netlink, not all of /proc/net/dev, on the way to connected.
            if let name = record.interface, let c = try? NetlinkRouteSocket().counters(named: name)?.counters {
                record.rxBytesAtConnect = c.rxBytes
                record.txBytesAtConnect = c.txBytes
            }
        }
        if status == .disconnected { record.connectedSince = nil }
        do {
            try runtime.write(record)
            if previous != status {
                try runtime.appendEvent(TransitionEvent(time: record.updatedAt, id: id.uuidString.lowercased(), name: record.name,
                                                        status: status.name, previous: previous.name,
                                                        interface: record.interface, error: error, note: note), id: id)
            }
        } catch {
            log("[!] cannot write the runtime record: \(error)")
        }
        if doorbell >= 0 {
            Doorbell.ring(doorbell)
            if status == .connected || status == .disconnected {
                close(doorbell)
                doorbell = -1
            }
        }
        if previous != status {
            log("[*] \(previous.name) -> \(status.name)\(error.map { ": \($0.name): \($0.message)" } ?? "")\(note.map { ": \($0)" } ?? "")")
        }
    }

    /// Runs until the tunnel is down. Returns the process exit status.
    public func run() -> Int32 {
        defer { logFile.flushRepeats() }
        let signalFD = vpn_supervisor_signalfd()
        if signalFD < 0 { log("[!] signalfd: \(Errno(-signalFD))"); return 1 }
        guard let lock = try? FileLock.tryLock(path: "\(options.runDirectory)/\(id.uuidString.lowercased()).lock") else {
            log("[!] another supervisor runs this profile")
            return 1
        }
        defer { withExtendedLifetime(lock) {} }
        record.supervisorPid = getpid()
        record.supervisorStartTime = Processes.startTime(of: getpid())
        record.lastDisconnectError = nil
        record.stopReason = nil
        record.reconnects = nil

        let store = PreferencesStore(directory: options.configDirectory)
        let profile: Profile
        do {
            guard let p = try store.load().first(where: { $0.id == id }) else {
                record.name = id.uuidString.lowercased()
                transition(.disconnected, error: ConnectionError(.configurationNotFound, "the profile was removed"), stopReason: .configurationRemoved)
                return 1
            }
            profile = p
        } catch {
            transition(.disconnected, error: ConnectionError(.configurationFailed, "\(error)"), stopReason: .configurationFailed)
            return 1
        }
        record.name = profile.name
        transition(.connecting)
        let provider: any TunnelProvider
        do { provider = try ProviderRegistry.provider(for: profile) } catch {
            transition(.disconnected, error: ConnectionError(.pluginDisabled, "\(error)"), stopReason: .configurationFailed)
            return 1
        }
        return provider.run(in: self, store: store, signalFD: signalFD)
    }

    func runWireGuard(_ config: WireGuardConfiguration, program: String, store: PreferencesStore, signalFD: Int32) -> Int32 {
        guard let wg = Processes.which(program, path: options.path) else {
            transition(.disconnected, error: ConnectionError(.pluginFailed, "\(program) is not installed"), stopReason: .providerFailed)
            return 1
        }
        let system: KernelTunnelSystem
        do { system = try KernelTunnelSystem() } catch {
            transition(.disconnected, error: ConnectionError(.configurationFailed, "\(error)"), stopReason: .configurationFailed)
            return 1
        }
        let tunnel = WireGuardTunnel(profileID: id, config: config, system: system, log: log)
        let output = providerOutput()
        defer { output?.drain() }
        do {
            let privateKey = String(decoding: try store.secrets.read(id, name: config.privateKeySecret ?? ""), as: UTF8.self)
            var psks: [String: String] = [:]
            for p in config.peers {
                if let s = p.presharedKeySecret { psks[s] = String(decoding: try store.secrets.read(id, name: s), as: UTF8.self) }
            }
            try tunnel.start(wireguardGo: wg, logFD: output?.writeFD ?? logFD, privateKey: privateKey, presharedKeys: psks)
            output?.closeWriteEnd()
        } catch let f as WireGuardTunnel.Failure {
            record.interface = nil
            transition(.disconnected, error: f.error, stopReason: f.stopReason)
            return 1
        } catch {
            transition(.disconnected, error: ConnectionError(.configurationFailed, "\(error)"), stopReason: .configurationFailed)
            return 1
        }
        record.interface = tunnel.interface
        record.ifindex = tunnel.ifindex
        record.providerPid = tunnel.providerPid
        record.providerStartTime = Processes.startTime(of: tunnel.providerPid)
        record.settings = tunnel.settings
        transition(.connecting)

        let monitor = try? NetlinkMonitor()
        var health = WireGuardHealth()
        var lastKick = monotonicMilliseconds()
        var pathProblem: String? = nil
        var checkPath = true

        func finish(_ status: VPNStatus = .disconnected, error: ConnectionError?, reason: StopReason) -> Int32 {
            if record.status != .disconnecting { transition(.disconnecting) }
            output?.drain()
            tunnel.stop()
            transition(.disconnected, error: error, stopReason: reason)
            return error == nil ? 0 : 1
        }

        while true {
            let connecting = record.status == .connecting
            // Fixed slots: 0 signals, 1 netlink, 2 provider output (-1 is skipped by poll).
            let fds: [Int32] = [signalFD, monitor?.fd ?? -1, output?.pollFD ?? -1]
            // Reasserting: look often, so that connected is read soon after packets flow again.
            let ready = pollReadable(fds, timeoutMs: connecting ? 5 : record.status == .reasserting ? 100 : 1000)
            if ready.contains(2) { output?.drain() }
            if ready.contains(0) {
                var stop = false
                while true {
                    let sig = vpn_signalfd_read(signalFD)
                    if sig <= 0 { break }
                    if sig == SIGCHLD {
                        if let status = Processes.reap(tunnel.providerPid) {
                            let how = status > 128 ? "was killed by signal \(status - 128)" : "exited with status \(status)"
                            log("[!] wireguard-go \(how)")
                            return finish(error: ConnectionError(.pluginFailed, "wireguard-go (pid \(tunnel.providerPid)) \(how)"), reason: .providerFailed)
                        }
                    } else {
                        stop = true
                    }
                }
                if stop {
                    transition(.disconnecting)
                    return finish(error: nil, reason: .userInitiated)
                }
            }
            if ready.contains(1) {
                monitor?.drain()
                checkPath = true
                if (try? system.ifindex(tunnel.interface)) != tunnel.ifindex {
                    return finish(error: ConnectionError(.pluginFailed, "interface \(tunnel.interface) was deleted"), reason: .providerFailed)
                }
            }
            let now = monotonicMilliseconds()
            if checkPath || !connecting {
                pathProblem = self.pathProblem(tunnel, system)
                checkPath = false
            }
            guard let peers = try? tunnel.status() else { continue }
            var newestHandshake: Int64 = 0
            var rx: UInt64 = 0, tx: UInt64 = 0
            for p in peers {
                newestHandshake = max(newestHandshake, p.lastHandshakeSec * 1000 + p.lastHandshakeNsec / 1_000_000)
                rx += p.rxBytes
                tx += p.txBytes
            }
            let wallNow = Int64(Date().timeIntervalSince1970 * 1000)
            let age: Int64? = newestHandshake > 0 ? max(0, wallNow - newestHandshake) : nil
            let verdict = health.observe(nowMs: now, handshakeEpoch: newestHandshake, handshakeAgeMs: age,
                                         rxBytes: rx, txBytes: tx, pathProblem: pathProblem)
            switch verdict {
            case .connecting:
                if now - monotonicStart > options.startTimeout * 1000 {
                    let who = tunnel.peers.map { "peer \($0.publicKey) at \($0.endpoint)" }.joined(separator: ", ")
                    let why = pathProblem.map { " (\($0))" } ?? ""
                    return finish(error: ConnectionError(.serverNotResponding,
                                                         "no handshake within \(options.startTimeout) s from \(who)\(why)"),
                                  reason: .connectionFailed)
                }
                if now - lastKick > 1000 {
                    tunnel.kickHandshake()
                    lastKick = now
                }
            case .connected:
                if record.status == .connecting { tunnel.restoreKeepalive() }
                if record.status != .connected {
                    if record.status == .reasserting { log("[*] path restored") }
                    transition(.connected)
                }
            case .reasserting(let why):
                if record.status != .reasserting {
                    log("[*] path broken: \(why)")
                    transition(.reasserting)
                }
            }
        }
    }

    /// Is the way to each endpoint evidently broken?
    func pathProblem(_ tunnel: WireGuardTunnel, _ system: KernelTunnelSystem) -> String? {
        for p in tunnel.peers {
            guard let route = system.route(to: p.endpointAddress) else {
                return "no route to the endpoint \(p.endpoint)"
            }
            if route.outputInterfaceIndex == tunnel.ifindex {
                return "the route to the endpoint \(p.endpoint) goes into the tunnel itself"
            }
            if let link = try? system.netlink.linkInfo(index: route.outputInterfaceIndex), !link.info.isUp || !link.info.hasCarrier {
                return "link \(link.name) to the endpoint \(p.endpoint) is down"
            }
        }
        return nil
    }
}
