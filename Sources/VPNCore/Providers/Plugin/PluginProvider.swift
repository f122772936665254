#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A third-party packet-tunnel provider found by its identifier
/// (NETunnelProviderProtocol.providerBundleIdentifier): a plugin whose
/// manifest says what to run and as whom. vpnctl makes the utun, hands it
/// over as fd 3 with a control socket as fd 4, and runs the plugin as its
/// unprivileged user; the plugin speaks JSON lines (vpnctl-provider(7)).
public struct PluginProvider: TunnelProvider {
    public static let kind = ProtocolConfiguration.Kind.provider
    public static let implementation = "plugin"
    public static let isBuiltInTransport = false
    let config: ProviderConfiguration
    /// Set by `preflight`, for `requirements`.
    let found = Found()

    final class Found {
        var manifest: PluginManifest?
    }

    public init?(profile: Profile) {
        guard case .provider(let c) = profile.protocol else { return nil }
        config = c
    }

    public var requirements: ProviderRequirements {
        ProviderRequirements(program: found.manifest?.executable ?? config.providerIdentifier, package: config.providerIdentifier)
    }

    /// The entitlement checks: the identifier installed, its manifest and
    /// executable root's alone, the capability declared, an unprivileged user.
    public func preflight(_ environment: ProviderEnvironment) throws {
        found.manifest = try PluginCatalog.standard(configDirectory: environment.configDirectory).plugin(config.providerIdentifier).manifest
    }

    public func makeTunnel(in context: TunnelContext) -> any ProviderTunnel {
        let identifier = config.providerIdentifier, directory = context.store.directory
        // Checked again in the supervisor: the files may have changed since `start` looked.
        return PluginTunnel(context: context, config: config) {
            try PluginCatalog.standard(configDirectory: directory).plugin(identifier)
        }
    }
}

/// One run of a plugin, on the supervisor's loop.
final class PluginTunnel: EndingTunnel {
    let context: TunnelContext
    let config: ProviderConfiguration
    let undo: UndoStack
    var system: TunnelSystem { context.system }
    var interface = ""
    var ifindex: Int32 = 0
    var applier: SettingsApplier?
    var control: Int32 = -1
    var buffer = PluginLineBuffer()
    var pid: pid_t = 0
    var stopping = false
    var name: String { "plugin '\(config.providerIdentifier)'" }
    var tokens: [String: EventLoop.Token] = [:]
    /// How long a plugin has to exit once told to stop.
    static let exitTimeoutMs: Int64 = 5_000

    /// The installed plugin, checked, its executable open.
    let lookup: () throws -> CheckedPlugin

    init(context: TunnelContext, config: ProviderConfiguration, lookup: @escaping () throws -> CheckedPlugin) {
        self.context = context
        self.config = config
        self.lookup = lookup
        undo = UndoStack(log: context.log)
    }

    func start() {
        let plugin: CheckedPlugin
        do {
            plugin = try lookup()
        } catch let e as VPNError {
            return context.finish(error: ConnectionError(.pluginDisabled, e.message + (e.hint.map { " (\($0))" } ?? "")), reason: .providerDisabled)
        } catch {
            return context.finish(error: ConnectionError(.pluginDisabled, "\(error)"), reason: .providerDisabled)
        }
        do {
            try makeInterface()
            try spawn(plugin)
        } catch let e as SystemError {
            return fail(ConnectionError(.pluginFailed, "\(name): \(e)"), .providerFailed)
        } catch {
            return fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
        context.transition(.connecting)
        tokens["control"] = context.loop.watch(control) { [weak self] in self?.readControl() }
        tokens["start"] = context.loop.after(context.startTimeoutMs) { [weak self] in
            guard let self, self.context.status == .connecting else { return }
            self.fail(ConnectionError(.pluginFailed, "\(self.name) did not report connected within \(self.context.startTimeoutMs / 1000) s"),
                      .providerFailed)
        }
        send(PluginMessage.start(providerConfiguration: config.providerConfiguration, serverAddress: config.serverAddress,
                                 interface: interface))
    }

    func makeInterface() throws {
        guard let name = InterfaceNames.chooseFree(system) else {
            throw VPNError(.configurationInvalid, L("no free utunN name"))
        }
        let fd = try system.createTun(name)
        interface = name
        context.log("[#] tun \(name) created")
        undo.push("delete link \(name)") { [system, context] in
            try system.deleteLink(name)
            context.log("[#] link \(name) deleted")
        }
        tunFD = fd
        try system.markLink(name, InterfaceMark.of(context.id))
        ifindex = try system.ifindex(name)
        applier = context.makeApplier(interface: name, ifindex: ifindex, undo: undo)
        context.update {
            $0.interface = name
            $0.ifindex = self.ifindex
        }
    }

    var tunFD: Int32 = -1

    /// The plugin, as its user, with the tun as fd 3 and its end of the
    /// control socket as fd 4; neither stays open here but ours. The file
    /// run is the one the catalog's walk checked and holds open (by its fd,
    /// not its path looked up again).
    func spawn(_ plugin: CheckedPlugin) throws {
        let user = plugin.user
        defer { if tunFD >= 0 { system.closeFD(tunFD); tunFD = -1 } }
        let (ours, theirs) = try system.socketPair()
        defer { system.closeFD(theirs) }
        control = ours
        undo.push("close the control socket") { [self] in
            if control >= 0 { system.closeFD(control); control = -1 }
        }
        let exe = plugin.manifest.executable, checked = plugin.executable
        pid = try system.spawnProvider(checked, [exe], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"],
                                       passFDs: [tunFD, theirs], logFD: context.outputFD, as: user)
        let pid = self.pid
        let ran = checked.resolved == exe ? "" : " (\(checked.resolved))"
        let script = checked.interpreter.map { " run by \($0)" } ?? ""
        context.log("[#] \(exe)\(ran)\(script) as \(user.name) (uid \(user.uid)) (pid \(pid))")
        undo.push("stop \(name) \(pid)") { [system, context] in
            system.stopProvider(pid)
            context.log("[#] plugin \(pid) stopped")
        }
        context.providerSpawned(pid, startTime: system.startTime(of: pid))
        _ = fcntl(ours, F_SETFL, fcntl(ours, F_GETFL) | O_NONBLOCK)
    }

    func send(_ line: String) {
        guard control >= 0 else { return }
        // Never waits: a plugin that lets its control socket fill up has stopped reading.
        if !UnixSocket.sendAll(control, Array((line + "\n").utf8), flags: Int32(MSG_DONTWAIT)) && !stopping {
            let e = Errno.current
            fail(ConnectionError(.pluginFailed, "\(name) does not read its control socket (\(e == Errno(EAGAIN) ? "its buffer is full" : "\(e)"))"),
                 .providerFailed)
        }
    }

    // MARK: events

    func readControl() {
        var chunk = [UInt8](repeating: 0, count: 16384)
        var closed = false
        while control >= 0 {
            let received = UnixSocket.receive(control, into: &chunk)
            if received == .closed { closed = true; break }
            guard case .bytes(let n) = received else { break }
            do {
                for line in try buffer.append(chunk[0..<n]) {
                    handle(try PluginMessage.parse(line))
                    if context.exitCode != nil { return }
                }
            } catch let p as PluginProblem {
                return fail(ConnectionError(.pluginFailed, "\(name) sent \(p); it was stopped"), .providerFailed)
            } catch {
                return fail(ConnectionError(.pluginFailed, "\(name): \(error)"), .providerFailed)
            }
        }
        if closed {
            context.loop.cancel(tokens.removeValue(forKey: "control"))
            // Its exit (SIGCHLD) says how it ended; a plugin that closed the
            // socket but lives on is ended.
            if !stopping {
                tokens["closed"] = context.loop.after(1000) { [weak self] in
                    guard let self else { return }
                    self.fail(ConnectionError(.pluginFailed, "\(self.name) closed its control socket"), .providerFailed)
                }
            }
        }
    }

    func handle(_ m: PluginMessage) {
        guard !stopping else { return }
        switch m {
        case .status(let s):
            guard s != (pendingStatus ?? context.status) else { return }
            if s == .connected { context.loop.cancel(tokens.removeValue(forKey: "start")) }
            if s == .connecting && context.status != .connecting { return }  // only before the first connected
            report(s)
        case .error(let kind, let message):
            context.log("[!] \(name) cancelled the tunnel: \(kind.name)")
            fail(ConnectionError(kind, message.isEmpty ? "\(name) reported \(kind.name)" : String(message.prefix(1000))), .providerFailed)
        case .setTunnelNetworkSettings(let id, let s):
            apply(s, id: id)
        case .secret(let id, let key):
            answerSecret(key, id: id)
        }
    }

    /// A plugin's status changes, at most `flapLimit` a second: past that
    /// they are coalesced until the second is over, and then only the last
    /// one is made, its event saying how many were not (so that a plugin
    /// flapping thousands of times a second cannot flood the record, the
    /// events and every `status --watch`).
    static let flapLimit = 10
    static let flapWindowMs: Int64 = 1000
    var flapWindowStart: Int64 = .min
    var flapCount = 0
    var coalesced = 0
    var pendingStatus: VPNStatus?

    func report(_ s: VPNStatus) {
        let now = context.loop.nowMs
        if flapWindowStart == .min || now - flapWindowStart >= Self.flapWindowMs {
            flapWindowStart = now
            flapCount = 0
        }
        flapCount += 1
        guard flapCount > Self.flapLimit else {
            // A newer status than the one that waited: that one is dropped too.
            let note = pendingStatus == nil ? nil : coalescedNote(coalesced)
            if pendingStatus != nil {
                context.loop.cancel(tokens.removeValue(forKey: "flap"))
                pendingStatus = nil
                coalesced = 0
            }
            context.log("[*] \(name) reports \(s.name)")
            guard s != context.status else { return }
            return context.transition(s, note: note)
        }
        pendingStatus = s
        coalesced += 1
        if tokens["flap"] == nil {
            if coalesced == 1 { context.log("[!] \(name) changes its status more than \(Self.flapLimit) times a second; coalescing") }
            tokens["flap"] = context.loop.after(max(1, flapWindowStart + Self.flapWindowMs - now)) { [weak self] in self?.flushStatus() }
        }
    }

    // English: for the event log and the supervisor's log.
    func coalescedNote(_ n: Int) -> String { "\(n) status change\(n == 1 ? "" : "s") coalesced (more than \(Self.flapLimit) a second)" }

    /// The end of a flapping second: the last status asked for, with a note.
    func flushStatus() {
        tokens["flap"] = nil
        guard let s = pendingStatus, !stopping, context.exitCode == nil else { return }
        pendingStatus = nil
        let n = coalesced
        coalesced = 0
        flapWindowStart = context.loop.nowMs
        flapCount = 1
        let note = coalescedNote(n)
        context.log("[*] \(name) reports \(s.name) (\(note))")
        guard s != context.status else {
            return context.log("[*] \(name) is \(s.name) again after \(note)")
        }
        context.transition(s, note: note)
    }

    func apply(_ s: PluginMessage.Settings, id: Int?) {
        var wanted = TunnelNetworkSettings()
        wanted.addresses = s.addresses.compactMap { CIDR($0)?.description }
        wanted.routes = s.routes.compactMap { CIDR($0)?.network.description }
        wanted.dns = s.dns
        wanted.mtu = s.mtu
        for p in s.excludedRoutes.compactMap(CIDR.init) {
            // Kept on the route it has now, outside the tunnel.
            guard let before = system.route(to: p.network.address), before.outputInterfaceIndex != ifindex else { continue }
            wanted.excludedRoutes.append(.init(prefix: p.network.description, ifindex: before.outputInterfaceIndex,
                                               gateway: before.gateway.flatMap { IPAddress(bytes: $0)?.description }))
        }
        do {
            // All or nothing: a refusal has undone this call's steps (the DNS never came).
            try applier?.apply(wanted)
            settingsApplied = true
            context.update { [applier] in $0.settings = applier?.applied }
            send(PluginMessage.settingsReply(id: id, error: nil))
        } catch {
            context.log("[!] \(name)'s settings were not applied (nothing of them is left): \(error)")
            send(PluginMessage.settingsReply(id: id, error: "\(error)"))
            // Without a first set of settings there is no tunnel to keep:
            // the start fails with the reason, and everything is undone.
            if !settingsApplied {
                fail(ConnectionError(.configurationFailed, "\(name)'s settings were refused: \(error)"), .configurationFailed)
            }
        }
    }

    /// A settings call has succeeded once; later refusals leave those settings in place.
    var settingsApplied = false

    /// Only the profile's own secrets, by providerConfiguration key.
    func answerSecret(_ key: String, id: Int?) {
        guard let secretName = config.secrets[key] else {
            context.log("[!] \(name) asked for a secret the profile does not have: \(PluginMessage.shown(key))")
            let known = config.secrets.keys.sorted()
            return send(PluginMessage.secretReply(id: id, name: key, value: nil,
                                                  error: "the profile has no secret '\(key)' (its secrets: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"))
        }
        do {
            let value = String(decoding: try context.store.secrets.read(context.id, name: secretName), as: UTF8.self)
            send(PluginMessage.secretReply(id: id, name: key, value: value, error: nil))
        } catch {
            send(PluginMessage.secretReply(id: id, name: key, value: nil, error: "cannot read the secret '\(secretName)': \(error)"))
        }
    }

    func stop(reason: StopReason) {
        guard !stopping, context.exitCode == nil else { return }
        stopping = true
        context.loop.cancel(tokens.removeValue(forKey: "start"))
        context.transition(.disconnecting)
        send(PluginMessage.stop(reason))
        tokens["exit"] = context.loop.after(Self.exitTimeoutMs) { [weak self] in
            guard let self else { return }
            self.context.log("[!] \(self.name) did not exit within \(Self.exitTimeoutMs / 1000) s of stop")
            self.end(error: nil, reason: reason)
        }
        stopReason = reason
    }

    var stopReason: StopReason = .userInitiated

    func childExited(_ pid: pid_t, _ status: ExitStatus) {
        guard pid == self.pid, context.exitCode == nil else { return }
        self.pid = 0
        if stopping { return end(error: nil, reason: stopReason) }
        // What it said before it ended (an `error`) can be read after its exit is seen.
        readControl()
        guard context.exitCode == nil else { return }
        context.log("[!] \(name) \(status)")
        fail(ConnectionError(.pluginFailed, "\(name) (pid \(pid)) \(status)"), .providerFailed)
    }

    func networkChanged() {
        guard !interface.isEmpty, context.exitCode == nil else { return }
        guard (try? system.ifindex(interface)) != ifindex, tokens["deleted"] == nil else { return }
        // The plugin holds the only other fd of the tun: when it dies the
        // kernel deletes the link, and that can be seen before its exit is.
        // Its exit, if it comes, is the better reason.
        tokens["deleted"] = context.loop.after(250) { [weak self] in
            guard let self else { return }
            self.fail(ConnectionError(.pluginFailed, "interface \(self.interface) was deleted under \(self.name)"), .providerFailed)
        }
    }

    // MARK: the end

    /// Nothing but its timers and undo steps (they stop the plugin, if it
    /// still runs, and delete the utun).
    func releaseAtEnd() {}
}
