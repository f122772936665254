#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// One run of a private charon, driven by the supervisor's loop over vici:
/// charon in its own mount namespace (its run directory over /run, where its
/// compiled-in pid file and its vici socket go), the connection and the
/// secrets loaded over the socket, `initiate`, then `ike-updown` /
/// `child-updown` / `ike-rekey` and charon's log lines as events. The TUN is
/// charon's (kernel-libipsec); its addresses and routes are the settings
/// applier's. Every change has an undo step.
final class CharonTunnel: EndingTunnel {
    let context: TunnelContext
    let config: IKEv2Configuration
    let program: String
    let undo: UndoStack
    var system: TunnelSystem { context.system }
    var directory = ""
    var directoryFD: Int32 = -1
    var interface = ""
    var applier: SettingsApplier?
    var providerPid: pid_t = 0
    var vici: Int32 = -1
    var framer = VICI.Framer()
    /// Handlers of the requests sent, answered in order.
    var pending: [(command: String, handler: (VICI.Packet) -> Void)] = []
    var diagnosis = CharonDiagnosis()
    var stopping = false
    var established = false
    var caCertificate: String?
    var credentials: [(command: String, message: VICI.Message)] = []
    var identityCertificates: [String] = []
    var tokens: [String: EventLoop.Token] = [:]
    /// charon's TUN, by its pid (tests give their own).
    var findTun: (pid_t) -> String? = CharonLaunch.tunName(of:)
    static let exitTimeoutMs: Int64 = 5_000
    static let reasonWaitMs: Int64 = 200
    static let name = CharonLaunch.connectionName

    init(context: TunnelContext, config: IKEv2Configuration, program: String) {
        self.context = context
        self.config = config
        self.program = program
        undo = UndoStack(log: context.log)
    }

    // MARK: bring-up

    func start() {
        do {
            guard system.which(program, path: nil) != nil else {
                throw ProviderFailure(.pluginFailed, "charon is not installed (\(program)); apt-get install --no-install-recommends \(CharonProvider.packages)",
                              .providerFailed)
            }
            guard let unshare = system.which("unshare", path: nil) else {
                throw ProviderFailure(.pluginFailed, "unshare (util-linux) is not installed", .providerFailed)
            }
            try readCredentials()
            try makeDirectory()
            try spawn(unshare)
        } catch {
            return failStart(error)
        }
        context.transition(.connecting)
        tokens["socket"] = context.loop.after(50) { [weak self] in self?.connectVICI() }
        tokens["start"] = context.loop.after(context.startTimeoutMs) { [weak self] in self?.startTimedOut() }
    }

    /// The secrets, read now (checked as the store checks them) and held in
    /// memory only until they are sent over vici.
    func readCredentials() throws {
        let store = context.store, id = context.id
        if let fp = config.caFingerprint { caCertificate = try TrustStore(configDirectory: store.directory).certificate(fp) }
        let psk = try config.sharedSecretSecret.map { try store.secrets.read(id, name: $0) }
        // A password the start asked for (not stored) comes from it.
        let password = try context.credentials[.password].map { Array($0.utf8) }
            ?? config.passwordSecret.map { try store.secrets.read(id, name: $0) }
        var key: [UInt8]?
        if let name = config.identitySecret {
            let (certs, k) = CharonLaunch.splitIdentity(try store.secrets.read(id, name: name))
            guard !certs.isEmpty, k != nil else {
                throw ProviderFailure(.configurationFailed, "secret '\(name)' must hold the client certificate and its private key, both PEM", .configurationFailed)
            }
            identityCertificates = certs
            key = k
        }
        credentials = CharonLaunch.credentials(config, psk: psk, password: password, key: key)
    }

    /// 1. The run's private directory: strongswan.conf (no secrets); charon
    /// adds its pid file and vici socket there.
    func makeDirectory() throws {
        let dir = CharonLaunch.privateDirectory(context.runtime, context.id)
        try FileSystem.ensurePrivateDirectory(dir)
        directory = dir
        undo.push("remove \(dir)") {
            for f in ["strongswan.conf", "charon.pid", "charon.vici", "resolv.conf"] { unlink("\(dir)/\(f)") }
            rmdir(dir)
        }
        // The socket is reached through this fd: a deep run directory would
        // make the path longer than sun_path (108 bytes).
        directoryFD = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD < 0 { throw SystemError("open", path: dir, errno: .current) }
        let conf = CharonLaunch.strongswanConf(config, startTimeoutMs: context.startTimeoutMs)
        try AtomicFile.write(Array(conf.utf8), to: "\(dir)/strongswan.conf", mode: 0o600, durable: false)
    }

    /// 2. charon in a mount namespace of its own with the directory over
    /// /run, under the parent-death signal (unshare and sh exec, so the pid
    /// is charon's).
    func spawn(_ unshare: String) throws {
        let script = "mount --bind \"$1\" \(CharonLaunch.insideDirectory) && exec \"$2\""
        let argv = [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "vpnctl-charon", directory, program]
        do {
            providerPid = try system.spawnProvider(unshare, argv,
                                                   environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                                                 "STRONGSWAN_CONF": "\(CharonLaunch.insideDirectory)/strongswan.conf"],
                                                   passFDs: [], logFD: context.outputFD)
        } catch {
            throw ProviderFailure(.pluginFailed, "\(error)", .providerFailed)
        }
        let pid = providerPid
        context.log("[#] \(program) in a private mount namespace, \(directory) over /run (pid \(pid))")
        undo.push("stop charon \(pid)") { [system, context] in
            system.stopProvider(pid)
            context.log("[#] charon \(pid) stopped")
        }
        context.providerSpawned(pid, startTime: system.startTime(of: pid))
    }

    /// 3. charon's vici socket answers: its TUN exists (kernel-libipsec made
    /// it while loading); register for events, load, initiate.
    func connectVICI() {
        tokens["socket"] = nil
        guard context.exitCode == nil, !stopping else { return }
        guard let fd = try? UnixSocket.connect(to: "/proc/self/fd/\(directoryFD)/charon.vici") else {
            tokens["socket"] = context.loop.after(50) { [weak self] in self?.connectVICI() }
            return
        }
        vici = fd
        tokens["vici"] = context.loop.watch(fd) { [weak self] in self?.readVICI() }
        context.log("[#] vici \(directory)/charon.vici connected")
        do { try adoptInterface() } catch let f as ProviderFailure { return fail(f.error, f.stopReason) } catch {
            return fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
        for event in ["log", "ike-updown", "child-updown", "ike-rekey"] {
            send(VICI.Packet(.eventRegister, name: event)) { [weak self] reply in
                guard reply.type == .eventConfirm else {
                    self?.fail(ConnectionError(.pluginFailed, "charon refused to send '\(event)' events"), .providerFailed)
                    return
                }
            }
        }
        for (command, message) in credentials { request(command, message, what: "the profile's credentials") }
        credentials = []
        request("load-conn", CharonLaunch.connection(config, caCertificate: caCertificate, identity: identityCertificates), what: "the connection")
        let initiate = VICI.Message([("child", .text(Self.name)), ("ike", .text(Self.name)), ("timeout", .text("0")), ("init-limits", .text("no"))])
        send(.request("initiate", initiate)) { [weak self] reply in self?.initiated(reply) }
        context.log("[#] vici initiate \(Self.name) (\(config.serverAddress))")
    }

    func adoptInterface() throws {
        guard let name = findTun(providerPid) else {
            throw ProviderFailure(.pluginFailed, "charon holds no TUN device: its kernel-libipsec plugin did not load (see \(context.runtime.logPath(context.id)))",
                          .providerFailed)
        }
        interface = name
        let index = try system.ifindex(name)
        try system.markLink(name, InterfaceMark.of(context.id))
        applier = context.makeApplier(interface: name, ifindex: index, undo: undo)
        context.log("[#] tun \(name) (charon's, kernel-libipsec)")
        context.update {
            $0.interface = name
            $0.ifindex = index
        }
    }

    // MARK: vici

    func send(_ packet: VICI.Packet, _ handler: @escaping (VICI.Packet) -> Void) {
        guard vici >= 0 else { return }
        do {
            guard UnixSocket.sendAll(vici, try packet.encoded()) else {
                throw SystemError("write to", path: "charon's vici socket", errno: .current)
            }
        } catch {
            return fail(ConnectionError(.pluginFailed, "\(error)"), .providerFailed)
        }
        pending.append((packet.name ?? "\(packet.type)", handler))
    }

    /// A command whose failure ends the start, naming what charon refused.
    func request(_ command: String, _ message: VICI.Message, what: String) {
        send(.request(command, message)) { [weak self] reply in
            guard let self else { return }
            if reply.type == .cmdUnknown {
                return self.fail(ConnectionError(.pluginFailed, "charon does not know the vici command '\(command)'"), .providerFailed)
            }
            if let why = reply.message?.failure {
                self.fail(ConnectionError(.configurationFailed, "charon refused \(what) (\(command)): \(why.prefix(CharonDiagnosis.quoteLimit))"),
                          .configurationFailed)
            }
        }
    }

    func readVICI() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { read(vici, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        if n <= 0 {
            context.loop.cancel(tokens.removeValue(forKey: "vici"))
            close(vici)
            vici = -1
            if !stopping { fail(ConnectionError(.pluginFailed, "charon closed its vici connection" + reasonSuffix), .providerFailed) }
            else { end(error: nil, reason: .userInitiated) }
            return
        }
        framer.feed(Array(buffer[0..<n]))
        do {
            while let body = try framer.next() {
                handle(try VICI.Packet.decode(body))
                if context.exitCode != nil { return }
            }
        } catch {
            fail(ConnectionError(.pluginFailed, "charon's vici socket: \(error)"), .providerFailed)
        }
    }

    var reasonSuffix: String { diagnosis.lastReason.map { " (charon: \($0.prefix(CharonDiagnosis.quoteLimit)))" } ?? "" }

    func handle(_ packet: VICI.Packet) {
        switch packet.type {
        case .event:
            event(packet.name ?? "", packet.message ?? VICI.Message())
        case .cmdResponse, .cmdUnknown, .eventConfirm, .eventUnknown:
            guard !pending.isEmpty else { return context.log("[!] vici: a reply nobody asked for (\(packet.type))") }
            pending.removeFirst().handler(packet)
        case .cmdRequest, .eventRegister, .eventUnregister:
            context.log("[!] vici: charon sent a \(packet.type) packet")
        }
    }

    // MARK: events

    func event(_ name: String, _ m: VICI.Message) {
        switch name {
        case "log":
            guard let line = m["msg"]?.text else { return }
            if diagnosis.observe(line) { retransmitChanged() }
        case "child-updown":
            if m["up"]?.text == "yes" { childUp(m) } else if !stopping { down("the CHILD_SA went down") }
        case "ike-updown":
            if m["up"]?.text != "yes", !stopping { down("the IKE_SA went down") }
        case "ike-rekey":
            context.log("[*] IKE_SA rekeyed")
            // The CHILD_SA (the data path) is the same: not a reconnect.
            if context.status == .reasserting { context.transition(.connected, resumed: true) }
        default:
            break
        }
    }

    /// DPD, rekey or MOBIKE requests unanswered: reasserting until an answer.
    func retransmitChanged() {
        guard established, !stopping, context.exitCode == nil else { return }
        if diagnosis.retransmitting && context.status == .connected {
            context.log("[*] charon retransmits (\(diagnosis.lastReason ?? "")): reasserting")
            context.transition(.reasserting)
        } else if !diagnosis.retransmitting && context.status == .reasserting {
            context.transition(.connected, resumed: true)
        }
    }

    /// The CHILD_SA is installed: its virtual IP and the server's traffic
    /// selectors go on the TUN through the settings applier.
    func childUp(_ m: VICI.Message) {
        guard !stopping, let ike = m.entries.first(where: { if case .section = $0.value { return true } else { return false } })?.value.section else { return }
        let vips = ike["local-vips"]?.texts ?? []
        let child = ike["child-sas"]?.section?.entries.first?.value.section
        let remote = child?["remote-ts"]?.texts ?? []
        var settings = TunnelNetworkSettings()
        settings.addresses = vips.map { $0.contains(":") ? "\($0)/128" : "\($0)/32" }
        // A full tunnel's selector (0.0.0.0/0, ::/0) is routed by
        // kernel-libipsec itself, whatever install_routes says: its two halves
        // on charon's TUN and a host route to the peer, so that charon's own
        // packets do not loop (vpnctl adding 0.0.0.0/0 failed with "object
        // exists" beside the machine's default route, and so did the halves).
        // They go with the TUN when charon ends; vpnctl routes the rest.
        let selectors = remote.compactMap(CIDR.init)
        var seen = Set<String>()
        settings.routes = selectors.filter { $0.prefixLength > 0 }.map(\.network.description).filter { seen.insert($0).inserted }
        let charonsOwn = selectors.filter { $0.prefixLength == 0 }.flatMap(WireGuardTunnel.routePrefixes).filter { seen.insert($0).inserted }
        settings.mtu = config.mtu ?? 1400
        // The DNS charon's resolve plugin wrote (the server's configuration
        // attributes) goes on the resolver with the profile's dnsSettings.
        if let text = try? FileSystem.readFileIfPresent("\(directory)/resolv.conf") {
            settings.dns = CharonLaunch.nameservers(String(decoding: text, as: UTF8.self))
        }
        do {
            try applier?.apply(settings)
            context.update { [applier] in
                $0.settings = applier?.applied
                $0.settings?.routes += charonsOwn
            }
        } catch {
            return fail(ConnectionError(.configurationFailed, "cannot apply the tunnel's settings: \(error)"), .configurationFailed)
        }
        context.loop.cancel(tokens.removeValue(forKey: "start"))
        if established { context.log("[*] CHILD_SA up again") }
        established = true
        context.log("[*] CHILD_SA installed: virtual IP \(vips.joined(separator: ", ")), remote \(remote.joined(separator: ", "))")
        context.transition(.connected)
    }

    /// charon sends its log lines as events of their own, which may come
    /// after the updown event they explain: the failure waits a moment for them.
    func down(_ what: String) {
        guard context.exitCode == nil, tokens["down"] == nil else { return }
        context.log("[*] \(what)")
        tokens["down"] = context.loop.after(Self.reasonWaitMs) { [weak self] in
            guard let self else { return }
            self.fail(self.diagnosis.downError(connected: self.established), self.established ? .providerFailed : .connectionFailed)
        }
    }

    func initiated(_ reply: VICI.Packet) {
        guard let why = reply.message?.failure, !stopping, context.exitCode == nil else { return }
        context.loop.cancel(tokens["down"])
        tokens["down"] = context.loop.after(Self.reasonWaitMs) { [weak self] in
            guard let self else { return }
            if let e = self.diagnosis.fatal { return self.fail(e, .connectionFailed) }
            self.fail(ConnectionError(.negotiationFailed, "charon: \(why.prefix(CharonDiagnosis.quoteLimit))" + self.reasonSuffix), .connectionFailed)
        }
    }

    func startTimedOut() {
        guard context.status == .connecting, !stopping else { return }
        guard vici >= 0 else {
            return fail(ConnectionError(.pluginFailed, "charon did not open its vici socket within \(context.startTimeoutMs / 1000) s (see \(context.runtime.logPath(context.id)))"),
                        .providerFailed)
        }
        fail(diagnosis.fatal ?? ConnectionError(.serverNotResponding, "no IKE_SA with \(config.serverAddress) within \(context.startTimeoutMs / 1000) s" + reasonSuffix),
             .connectionFailed)
    }

    func stop(reason: StopReason) {
        guard !stopping else { return }
        stopping = true
        context.transition(.disconnecting)
        guard vici >= 0, established, pending.isEmpty else {
            if !pending.isEmpty { context.log("[*] charon is still answering '\(pending[0].command)'; stopping it without a terminate") }
            return end(error: nil, reason: reason)
        }
        context.log("[#] vici terminate \(Self.name)")
        // The server hears of it (an IKE DELETE), then charon is stopped by the undo steps.
        let message = VICI.Message([("ike", .text(Self.name)), ("timeout", .text("2000"))])
        send(.request("terminate", message)) { [weak self] _ in self?.end(error: nil, reason: reason) }
        tokens["exit"] = context.loop.after(Self.exitTimeoutMs) { [weak self] in
            self?.context.log("[!] charon did not finish terminating within \(Self.exitTimeoutMs / 1000) s")
            self?.end(error: nil, reason: reason)
        }
    }

    func childExited(_ pid: pid_t, _ status: ExitStatus) {
        guard pid == providerPid, context.exitCode == nil else { return }
        providerPid = 0
        if stopping { return end(error: nil, reason: .userInitiated) }
        fail(ConnectionError(.pluginFailed, "charon (pid \(pid)) \(status)" + reasonSuffix + " (see \(context.runtime.logPath(context.id)))"),
             .providerFailed)
    }

    /// charon's TUN gone under it ends the tunnel.
    func networkChanged() {
        guard !interface.isEmpty, !stopping, context.exitCode == nil else { return }
        let index = try? system.ifindex(interface)
        guard index != context.record.ifindex else { return }
        fail(ConnectionError(.pluginFailed, "interface \(interface) \(index == nil ? "was deleted" : "was replaced") under charon; the tunnel ended"),
             .providerFailed)
    }

    // MARK: the end

    func releaseAtEnd() {
        stopping = true
        credentials = []
        if vici >= 0 { close(vici); vici = -1 }
        if directoryFD >= 0 { close(directoryFD); directoryFD = -1 }
    }
}
