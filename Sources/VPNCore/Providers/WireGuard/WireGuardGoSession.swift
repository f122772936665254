#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// One run of wireguard-go, driven by the supervisor's loop. WireGuard has no
/// connected state of its own: a timer reads the peers over UAPI and
/// `WireGuardHealth` decides (often while connecting and reasserting, once a
/// second otherwise); a network change looks at the path at once.
final class WireGuardGoSession: ProviderTunnel {
    let context: TunnelContext
    let config: WireGuardConfiguration
    let program: String
    var tunnel: WireGuardTunnel?
    var health = WireGuardHealth()
    var lastKickMs: Int64 = 0
    /// How long between handshake kicks while connecting: 1 s, then, for a
    /// persistent tunnel past its start timeout, doubling up to 30 s.
    var kickIntervalMs: Int64 = 1000
    static let longestKickIntervalMs: Int64 = 30_000
    var pathProblem: String? = nil
    var checkPath = true
    var tick: EventLoop.Token? = nil
    /// Set once the interface is gone: the end, unless wireguard-go's exit comes first.
    var goneTick: EventLoop.Token? = nil
    static let exitGraceMs: Int64 = 300

    init(context: TunnelContext, config: WireGuardConfiguration, program: String) {
        self.context = context
        self.config = config
        self.program = program
    }

    func start() {
        guard let wg = context.system.which(program, path: context.searchPath) else {
            return context.finish(error: ConnectionError(.pluginFailed, "\(program) is not installed"), reason: .providerFailed)
        }
        let tunnel = WireGuardTunnel(profileID: context.id, config: config, system: context.system, log: context.log)
        tunnel.configureApplier = context.configure
        do {
            if let killSwitch = context.killSwitch {
                // wireguard-go marks its sockets (SO_MARK): the profile's fwmark, or the kill switch's.
                if let own = config.fwmark.flatMap(Fwmark.init)?.value, own != 0 {
                    try killSwitch.useMark(own)
                } else {
                    tunnel.killSwitchMark = killSwitch.mark
                }
            }
            let secrets = context.store.secrets
            let privateKey = String(decoding: try secrets.read(context.id, name: config.privateKeySecret ?? ""), as: UTF8.self)
            var psks: [String: String] = [:]
            for p in config.peers {
                if let s = p.presharedKeySecret { psks[s] = String(decoding: try secrets.read(context.id, name: s), as: UTF8.self) }
            }
            try tunnel.start(wireguardGo: wg, logFD: context.outputFD, privateKey: privateKey, presharedKeys: psks)
        } catch let f as ProviderFailure {
            return context.finish(error: f.error, reason: f.stopReason)
        } catch {
            return context.finish(error: ConnectionError(.configurationFailed, "\(error)"), reason: .configurationFailed)
        }
        self.tunnel = tunnel
        context.providerSpawned(tunnel.providerPid, startTime: context.system.startTime(of: tunnel.providerPid))
        context.update {
            $0.interface = tunnel.interface
            $0.ifindex = tunnel.ifindex
            $0.settings = tunnel.settings
        }
        context.transition(.connecting)
        lastKickMs = context.loop.nowMs
        observe()
    }

    func stop(reason: StopReason) {
        end(error: nil, reason: reason)
    }

    func childExited(_ pid: pid_t, _ status: ExitStatus) {
        guard let tunnel, pid == tunnel.providerPid else { return }
        context.log("[!] wireguard-go \(status)")
        // Its tun deleted under it, wireguard-go exits by itself: the deletion
        // is the cause. (The supervisor holds the tun too, so the interface
        // goes only when deleted from outside.)
        let interfaceGone = goneTick != nil || (try? context.system.ifindex(tunnel.interface)) != tunnel.ifindex
        if interfaceGone, case .exited = status {
            return end(error: ConnectionError(.pluginFailed, "interface \(tunnel.interface) was deleted (wireguard-go then \(status))"),
                       reason: .providerFailed)
        }
        // Its socket removed, wireguard-go ends its tunnel and exits: the removal is the cause.
        if let lost = tunnel.uapiSocketLoss, case .exited = status {
            return end(error: ConnectionError(.pluginFailed, "wireguard-go stopped: \(lost); it then \(status)"), reason: .providerFailed)
        }
        end(error: ConnectionError(.pluginFailed, "wireguard-go (pid \(pid)) \(status)"), reason: .providerFailed)
    }

    func networkChanged() {
        guard let tunnel else { return }
        checkPath = true
        if (try? context.system.ifindex(tunnel.interface)) != tunnel.ifindex {
            // wireguard-go killed: the kernel removes its tun before the exit is
            // reaped, so wait a moment for the exit, which names the cause.
            guard goneTick == nil else { return }
            goneTick = context.loop.after(Self.exitGraceMs) { [weak self] in
                guard let self else { return }
                self.end(error: ConnectionError(.pluginFailed, "interface \(tunnel.interface) was deleted (wireguard-go still runs)"),
                         reason: .providerFailed)
            }
            return
        }
        observe()
    }

    /// Undoes everything the bring-up made, then reports the end.
    func end(error: ConnectionError?, reason: StopReason) {
        guard context.exitCode == nil else { return }  // ended once already
        context.loop.cancel(tick)
        context.loop.cancel(goneTick)
        if context.status != .disconnecting { context.transition(.disconnecting) }
        tunnel?.stop()
        context.finish(error: error, reason: reason)
    }

    /// Reads the peers, decides, and looks again after an interval that
    /// depends on the state.
    func observe() {
        context.loop.cancel(tick)
        guard let tunnel, context.exitCode == nil else { return }
        let connecting = context.status == .connecting
        if checkPath || !connecting {
            pathProblem = Self.pathProblem(tunnel, context.system)
            checkPath = false
        }
        do {
            decide(try tunnel.status(), tunnel)
        } catch {
            context.log("[!] reading the peers from wireguard-go failed: \(error)")
        }
        guard context.exitCode == nil else { return }
        // Checked here, not only after a good read: a wireguard-go whose UAPI
        // never answers must time out too.
        if context.status == .connecting && context.elapsedMs > context.startTimeoutMs {
            guard context.persistent else { return timedOut(tunnel) }
            keepTrying(tunnel)
        }
        let retrying = context.record.retrying != nil
        let interval: Int64 = context.status == .connecting ? (retrying ? 250 : 5) : context.status == .reasserting ? 100 : 1000
        tick = context.loop.after(interval) { [weak self] in self?.observe() }
    }

    func decide(_ peers: [WireGuardUAPI.PeerStatus], _ tunnel: WireGuardTunnel) {
        var newestHandshake: Int64 = 0
        var rx: UInt64 = 0, tx: UInt64 = 0
        for p in peers {
            newestHandshake = max(newestHandshake, p.lastHandshakeSec * 1000 + p.lastHandshakeNsec / 1_000_000)
            rx += p.rxBytes
            tx += p.txBytes
        }
        let now = context.loop.nowMs
        let wallNow = Int64(Date().timeIntervalSince1970 * 1000)
        let age: Int64? = newestHandshake > 0 ? max(0, wallNow - newestHandshake) : nil
        switch health.observe(nowMs: now, handshakeEpoch: newestHandshake, handshakeAgeMs: age, rxBytes: rx, txBytes: tx,
                              pathProblem: pathProblem) {
        case .connecting:
            if now - lastKickMs > kickIntervalMs {
                tunnel.kickHandshake()
                lastKickMs = now
                if context.record.retrying != nil {
                    kickIntervalMs = min(kickIntervalMs * 2, Self.longestKickIntervalMs)
                    checkPath = true
                }
            }
        case .connected:
            if context.status == .connecting { tunnel.restoreKeepalive() }
            if context.record.retrying != nil {
                context.log("[*] the server answered: connected after \(context.elapsedMs / 1000) s")
                kickIntervalMs = 1000
                context.persist { $0.retrying = nil }
            }
            if context.status != .connected {
                if context.status == .reasserting { context.log("[*] path restored") }
                context.transition(.connected)
            }
        case .reasserting(let why):
            if context.status != .reasserting {
                context.log("[*] path broken: \(why)")
                context.transition(.reasserting)
            }
        }
    }

    func timedOut(_ tunnel: WireGuardTunnel) {
        end(error: ConnectionError(.serverNotResponding, noHandshake(tunnel)), reason: .connectionFailed)
    }

    /// "no handshake within 20 s from peer KEY at HOST:PORT (why)".
    func noHandshake(_ tunnel: WireGuardTunnel) -> String {
        let who = tunnel.peers.map { "peer \($0.publicKey) at \($0.endpoint)" }.joined(separator: ", ")
        let why = pathProblem.map { " (\($0))" } ?? ""
        return "no handshake within \(context.startTimeoutMs / 1000) s from \(who)\(why)"
    }

    /// A persistent tunnel past its start timeout: it stays, connecting,
    /// and says (once, in the record and the log) what it waits for; the
    /// path is looked at again with each kick, so the reason follows it.
    func keepTrying(_ tunnel: WireGuardTunnel) {
        let reason = noHandshake(tunnel)
        guard context.record.retrying != reason else { return }
        if context.record.retrying == nil {
            context.log("[*] \(reason); persistent: trying again until the server answers or 'vpnctl stop'")
        }
        context.persist { $0.retrying = reason }
    }

    /// Is the way to each endpoint evidently broken?
    static func pathProblem(_ tunnel: WireGuardTunnel, _ system: TunnelSystem) -> String? {
        for p in tunnel.peers {
            guard let route = system.route(to: p.endpointAddress) else {
                return "no route to the endpoint \(p.endpoint)"
            }
            if route.outputInterfaceIndex == tunnel.ifindex {
                return "the route to the endpoint \(p.endpoint) goes into the tunnel itself"
            }
            if let link = system.linkState(index: route.outputInterfaceIndex), !link.usable {
                return "link \(link.name) to the endpoint \(p.endpoint) is down"
            }
        }
        return nil
    }
}
