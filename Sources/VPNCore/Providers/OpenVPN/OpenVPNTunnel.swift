#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// One run of openvpn, driven by the supervisor's loop: a persistent utun
/// openvpn attaches to by name, a management socket it connects back to, and
/// the settings it pushes applied by the settings applier. Every change has
/// an undo step; a failure at any step unwinds all of them.
final class OpenVPNTunnel: EndingTunnel {
    let context: TunnelContext
    let config: OpenVPNConfiguration
    let program: String
    let undo: UndoStack
    var system: TunnelSystem { context.system }
    var interface = ""
    var applier: SettingsApplier?
    var listenFD: Int32 = -1
    var management: Int32 = -1
    var reader: LineReader?
    var providerPid: pid_t = 0
    var auth: OpenVPNAuth?
    /// A question to the person is out; openvpn's `Need 'Auth'` waits for it.
    var asking = false
    var loginWanted = false
    /// When the start's time runs out (the loop's clock); a question to the
    /// person stops it, and what was left of it goes on after the answer.
    var startDeadlineMs: Int64 = 0
    var startLeftMs: Int64 = 0
    var diagnosis = OpenVPNDiagnosis()
    var session = OpenVPNSession()
    var env: [String: String] = [:]
    var upDown = ""
    /// The server's redirect-gateway of the current session (its PUSH_REPLY).
    var pushedRedirect: RedirectGateway?
    /// Watches and timers to cancel when the tunnel ends.
    var tokens: [String: EventLoop.Token] = [:]
    /// How long openvpn has to connect to its management socket, and to exit
    /// once told to.
    static let acceptTimeoutMs: Int64 = 10_000
    static let exitTimeoutMs: Int64 = 5_000

    init(context: TunnelContext, config: OpenVPNConfiguration, program: String) {
        self.context = context
        self.config = config
        self.program = program
        undo = UndoStack(log: context.log)
    }

    /// The profile's verb (vpnctl writes 3 unless it says otherwise).
    var verbosity: Int {
        config.options.compactMap { OpenVPNDirectives.tokenize($0) }.last { $0.first == "verb" && $0.count == 2 }.flatMap { Int($0[1]) } ?? 3
    }

    var remote: String { config.remotes.map { "\($0.host):\($0.port)/\($0.proto)" }.joined(separator: ", ") }

    // MARK: bring-up

    func start() {
        do {
            guard let path = system.which(program, path: context.searchPath) else {
                throw ProviderFailure(.pluginFailed, "\(program) is not installed", .providerFailed)
            }
            try makeInterface()
            let configPath = try writeRunFiles()
            // The stored password, unless the start asked for it (not stored).
            let store = context.store, id = context.id
            let stored = try config.passwordSecret.flatMap { name in
                context.credentials[.password] == nil || store.secrets.exists(id, name: name)
                    ? String(decoding: try store.secrets.read(id, name: name), as: UTF8.self) : nil
            }
            if config.username != nil {
                auth = OpenVPNAuth(config: config, answers: context.credentials, storedPassword: stored)
                diagnosis.tunnelDecidesAuth = true
            }
            try spawn(path, configPath)
        } catch {
            return failStart(error)
        }
        context.transition(.connecting)
        tokens["listen"] = context.loop.watch(listenFD) { [weak self] in self?.acceptManagement() }
        tokens["accept"] = context.loop.after(Self.acceptTimeoutMs) { [weak self] in
            self?.fail(ConnectionError(.pluginFailed, "openvpn did not connect to its management socket"), .providerFailed)
        }
        armStartTimer(context.startTimeoutMs)
    }

    func armStartTimer(_ ms: Int64) {
        context.loop.cancel(tokens["start"])
        startDeadlineMs = context.loop.nowMs + ms
        tokens["start"] = context.loop.after(ms) { [weak self] in self?.startTimedOut() }
    }

    /// 1. The persistent tun openvpn attaches to by name.
    func makeInterface() throws {
        guard let name = InterfaceNames.chooseFree(system) else {
            throw ProviderFailure(.configurationFailed, "no free utunN name", .configurationFailed)
        }
        try system.createPersistentTun(name)
        interface = name
        context.log("[#] tun \(name) created (persistent)")
        undo.push("delete link \(name)") { [system, context] in
            try system.deleteLink(name)
            context.log("[#] link \(name) deleted")
        }
        try system.markLink(name, InterfaceMark.of(context.id))
        let index = try system.ifindex(name)
        applier = context.makeApplier(interface: name, ifindex: index, undo: undo)
        context.update {
            $0.interface = name
            $0.ifindex = index
        }
    }

    /// 2. The management socket openvpn connects back to, the CA bundle of
    /// exactly this profile's anchors, the certificate, and the config.
    /// Key material stays in its 0600 secret file; openvpn reads it there.
    func writeRunFiles() throws -> String {
        let runtime = context.runtime, id = context.id
        let sockPath = runtime.providerFile(id, .management)
        let fd = try system.listenUnix(sockPath)
        listenFD = fd
        undo.push("remove \(sockPath)") { [system] in system.closeFD(fd); unlink(sockPath) }
        let bundle = try TrustStore(configDirectory: context.store.directory).bundle(config.caFingerprints)
        let caPath = runtime.providerFile(id, .caBundle)
        try writeRunFile(bundle, caPath, "CA bundle")
        var launch = OpenVPNLaunch(interface: interface, managementSocket: sockPath, caPath: caPath)
        launch.mark = context.killSwitch?.mark
        if let cert = config.certificate {
            launch.certificatePath = runtime.providerFile(id, .certificate)
            try writeRunFile(Array(cert.utf8), launch.certificatePath!, "certificate file")
        }
        for (secret, set) in [(config.keySecret, { (p: String) in launch.keyPath = p }),
                              (config.tlsCryptSecret, { launch.tlsCryptPath = $0 }),
                              (config.tlsAuthSecret, { launch.tlsAuthPath = $0 }),
                              (config.tlsCryptV2Secret, { launch.tlsCryptV2Path = $0 })] {
            guard let secret else { continue }
            _ = try context.store.secrets.read(id, name: secret)  // refuses symlinks and loose modes
            set(context.store.secrets.path(id, secret))
        }
        let configPath = runtime.providerFile(id, .config)
        try writeRunFile(Array(try launch.render(config).utf8), configPath, "config file")
        return configPath
    }

    func writeRunFile(_ bytes: [UInt8], _ path: String, _ what: String) throws {
        try AtomicFile.write(bytes, to: path, mode: 0o600, durable: false)
        undo.push("remove \(what)") { unlink(path) }
    }

    /// 3. openvpn itself, under the parent-death signal.
    func spawn(_ path: String, _ configPath: String) throws {
        do {
            providerPid = try system.spawnProvider(path, [path, "--config", configPath],
                                                   environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], passFDs: [],
                                                   logFD: context.outputFD)
        } catch {
            throw ProviderFailure(.pluginFailed, "\(error)", .providerFailed)
        }
        let pid = providerPid
        context.log("[#] \(path) --config \(configPath) (pid \(pid))")
        undo.push("stop openvpn \(pid)") { [system, context] in
            system.stopProvider(pid)
            context.log("[#] openvpn \(pid) stopped")
        }
        context.providerSpawned(pid, startTime: system.startTime(of: pid))
    }

    /// 4. openvpn connected to the management socket.
    func acceptManagement() {
        guard let fd = (try? UnixSocket.accept(listenFD)) ?? nil else { return }
        // Commands are written whole (a few bytes each): the socket blocks, as openvpn's side does.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        context.loop.cancel(tokens.removeValue(forKey: "listen"))
        context.loop.cancel(tokens.removeValue(forKey: "accept"))
        management = fd
        reader = LineReader(fd: fd)
        tokens["management"] = context.loop.watch(fd) { [weak self] in self?.readManagement() }
        send("state on")
        send("log on")
    }

    func send(_ command: String) {
        guard management >= 0 else { return }
        _ = UnixSocket.sendAll(management, Array((command + "\n").utf8))
    }

    // MARK: events

    func startTimedOut() {
        guard context.status == .connecting, !session.stopping else { return }
        send("signal SIGTERM")
        fail(diagnosis.timeoutError(seconds: context.startTimeoutMs / 1000, remote: remote), .connectionFailed)
    }

    func stop(reason: StopReason) {
        guard !session.stopping else { return }
        guard management >= 0 else {
            // Not talking to openvpn yet: the undo steps stop it.
            if context.status != .disconnecting { context.transition(.disconnecting) }
            return end(error: nil, reason: reason)
        }
        session.stop()
        context.loop.cancel(tokens.removeValue(forKey: "release"))
        context.transition(.disconnecting)
        send("signal SIGTERM")
        // openvpn that does not exit when told is stopped by the undo steps.
        tokens["exit"] = context.loop.after(Self.exitTimeoutMs) { [weak self] in
            self?.context.log("[!] openvpn did not exit within \(Self.exitTimeoutMs / 1000) s of SIGTERM")
            self?.end(error: nil, reason: reason)
        }
    }

    func childExited(_ pid: pid_t, _ status: ExitStatus) {
        guard pid == providerPid, context.exitCode == nil else { return }
        if session.stopping {
            if context.status != .disconnecting { context.transition(.disconnecting) }
            return end(error: nil, reason: .userInitiated)
        }
        guard let reader else {
            return fail(ConnectionError(.pluginFailed, "openvpn \(status) before it connected (see \(context.runtime.logPath(context.id)))"),
                        .providerFailed)
        }
        // openvpn says why before it exits (AUTH_FAILED, VERIFY ERROR...),
        // but the exit can be seen first: read what it said.
        for line in reader.readLines() { diagnosis.observe(ManagementMessage.parse(line)) }
        if context.status == .connecting, let e = diagnosis.fatal { return fail(e, .connectionFailed) }
        fail(ConnectionError(.pluginFailed, "openvpn (pid \(pid)) \(status)" + (diagnosis.lastReason.map { " (openvpn: \($0))" } ?? "")),
             .providerFailed)
    }

    /// A deleted utun ends the tunnel at once (openvpn itself would spin on
    /// "read from TUN/TAP: File descriptor in bad state").
    func networkChanged() {
        guard !interface.isEmpty, !session.stopping, context.exitCode == nil else { return }
        let index = try? system.ifindex(interface)
        let recorded = context.record.ifindex
        guard index != recorded else { return }
        let why = index == nil ? "was deleted" : "was replaced (ifindex \(recorded ?? 0) -> \(index ?? 0))"
        context.log("[!] interface \(interface) \(why); stopping openvpn (pid \(providerPid))")
        system.terminate(providerPid, signal: SIGTERM, timeoutMs: 300)
        fail(ConnectionError(.pluginFailed, "interface \(interface) \(why) under openvpn; the tunnel ended"), .providerFailed)
    }

    func readManagement() {
        guard let reader else { return }
        for line in reader.readLines() {
            handle(ManagementMessage.parse(line))
            if context.exitCode != nil { return }
        }
        if reader.closed && !session.stopping {
            fail(diagnosis.fatal ?? ConnectionError(.pluginFailed, "openvpn closed its management connection"
                                                    + (diagnosis.lastReason.map { " (openvpn: \($0))" } ?? "")), .providerFailed)
        } else if reader.closed {
            context.loop.cancel(tokens.removeValue(forKey: "management"))
        }
    }

    func handle(_ m: ManagementMessage) {
        diagnosis.observe(m)
        for action in session.observe(m) { perform(action) }
        switch m {
        case .password(let text) where text.hasPrefix("Need 'Auth'"):
            loginWanted = true
            answerAuth()
        case .password(let text) where text.hasPrefix("Verification Failed") && auth != nil:
            loginRefused(text)
        case .password(let text) where text.hasPrefix("Need "):
            context.log("[!] openvpn asks for something vpnctl cannot answer: \(text)")
        case .infoMessage(let message):
            serverMessage(message)
        case .log(_, let message):
            if let options = RedirectGateway.pushedOptions(message) {
                pushedRedirect = RedirectGateway.pushed(PullFilter(options: config.options).kept(options))
            }
            if message.hasPrefix("Options error"), message.containsUTF8("[PUSH-OPTIONS]") {
                context.log("[*] the server pushed an option openvpn does not know; openvpn goes on without it: \(message)")
            }
        case .upDownEnv(let k, let v):
            env[k] = v
        case .upDown(let what):
            upDown = what
            env = [:]
        case .upDownEnvEnd:
            // DOWN (also before each reconnect's UP) needs nothing: the undo
            // steps remove what UP added, and the next UP keeps what is
            // pushed again and withdraws the rest.
            if upDown == "UP" && !session.stopping { applyPushed(PushedSettings(env: env)) }
            env = [:]
        default:
            break
        }
        if context.exitCode == nil, context.status == .connecting, let e = diagnosis.fatal, !session.stopping {
            send("signal SIGTERM")
            fail(e, .connectionFailed)
        }
    }

    func perform(_ action: OpenVPNSession.Action) {
        switch action {
        case .releaseHold(let seconds):
            if seconds > 0 { context.log("[*] openvpn holds; releasing it in \(seconds) s (its connect-retry back-off)") }
            context.loop.cancel(tokens["release"])
            tokens["release"] = context.loop.after(Int64(seconds) * 1000) { [weak self] in
                guard let self, !self.session.stopping else { return }
                self.send("hold release")
            }
        case .connected(let n):
            if n > 1 { context.log("[*] openvpn reconnected") }
            context.loop.cancel(tokens.removeValue(forKey: "start"))
            context.transition(.connected)
        case .reasserting:
            context.log("[*] openvpn is reconnecting (\(diagnosis.lastReason ?? "soft restart"))")
            context.transition(.reasserting)
        }
    }

    /// openvpn asks for the login: answered with what is at hand, or once
    /// the person has answered what is not (a reconnect needs a new code).
    func answerAuth() {
        guard loginWanted, !asking, var a = auth else { return }
        let missing = a.missing
        guard missing.isEmpty else {
            return askPerson(CredentialRequest(profile: context.profile.name, fields: missing, timeoutSeconds: 120),
                             why: "needs \(CredentialRequest(profile: "", fields: missing, timeoutSeconds: 0).asked)") { [weak self] answers in
                self?.auth?.take(answers)
            }
        }
        let login = a.login()
        auth = a
        loginWanted = false
        guard let user = ManagementMessage.quote(login.username), let pass = ManagementMessage.quote(login.password) else {
            send("signal SIGTERM")
            return fail(ConnectionError(.configurationFailed,
                                        "the username or the password has a control character (a line break?) in it; "
                                        + "openvpn's management interface cannot carry it"), .configurationFailed)
        }
        send("username \"Auth\" \(user)")
        send("password \"Auth\" \(pass)")
    }

    /// The server refused the login: a CRV1 challenge is asked and answered
    /// with the next login; otherwise the profile's auth-retry decides.
    func loginRefused(_ text: String) {
        if let c = OpenVPNAuth.Challenge.crv1(in: text), let state = c.state {
            context.log("[*] the server asks a challenge (CRV1): \(c.text)")
            let field = CredentialRequest.Field(.challenge, prompt: c.text, echo: c.echo)
            return askPerson(CredentialRequest(profile: context.profile.name, fields: [field], timeoutSeconds: 120),
                             why: "the server asks a challenge (\(c.text))") { [weak self] answers in
                self?.auth?.challengeResponse = (state, c.username, answers[.challenge] ?? "")
            }
        }
        guard var a = auth else { return }
        let retry = a.refused()
        auth = a
        switch retry {
        case .none:
            send("signal SIGTERM")
            fail(ConnectionError(.authenticationFailed, "the server rejected the username or password (openvpn: \(text))"), .connectionFailed)
        case .nointeract:
            context.log("[*] the server refused the login; openvpn tries again with the same (auth-retry nointeract)")
        case .interact:
            context.log("[*] the server refused the login; asking again (auth-retry interact)")
        }
    }

    /// What the server sent for the user: a web sign-in or a URL to open
    /// (shown to the person, who signs in; the server's verdict ends the
    /// wait), or a text challenge answered with cr-response.
    func serverMessage(_ message: String) {
        if let c = OpenVPNAuth.Challenge.crText(message) {
            context.log("[*] the server asks a challenge (CR_TEXT): \(c.text)")
            let field = CredentialRequest.Field(.challenge, prompt: c.text, echo: c.echo)
            return askPerson(CredentialRequest(profile: context.profile.name, fields: [field], timeoutSeconds: 120),
                             why: "the server asks a challenge (\(c.text))") { [weak self] answers in
                guard let self else { return }
                let response = Data((answers[.challenge] ?? "").utf8).base64EncodedString()
                // openvpn logs each management command at verb 3 but the
                // password's: quiet while the answer goes by.
                self.send("verb 0")
                self.send("cr-response \(response)")
                self.send("verb \(self.verbosity)")
            }
        }
        let url: String
        if message.hasPrefix("WEB_AUTH:"), let colon = message.dropFirst(9).firstIndex(of: ":") {
            url = String(message[message.index(after: colon)...])
        } else if message.hasPrefix("OPEN_URL:") {
            url = String(message.dropFirst(9))
        } else {
            return context.log("[*] the server says: \(message)")
        }
        guard url.hasPrefix("https://") || url.hasPrefix("http://"),
              !url.unicodeScalars.contains(where: { $0 == " " || $0.needsEscapeOnTerminal }) else {
            send("signal SIGTERM")
            return fail(ConnectionError(.authenticationFailed, "the server asks for a sign-in at a URL that is not http(s): \(message.escapingControls(keepLineBreaks: false))"),
                        .connectionFailed)
        }
        let seconds = Int(context.startTimeoutMs / 1000)
        context.log("[*] the server asks for a sign-in in a web browser: \(url) (waiting up to \(seconds) s)")
        askPerson(CredentialRequest(profile: context.profile.name, fields: [], url: url, timeoutSeconds: seconds),
                  why: "needs a sign-in in a web browser") { [weak self] _ in
            guard let self else { return }
            // The server's verdict ends the wait; a pending sign-in the
            // server lets expire sends none, so the start's time does
            // (the whole of it again: the start waits as long).
            self.context.loop.cancel(self.tokens["start"])
            self.startDeadlineMs = self.context.loop.nowMs + self.context.startTimeoutMs
            self.tokens["start"] = self.context.loop.after(self.context.startTimeoutMs) { [weak self] in
                guard let self, self.context.status == .connecting, !self.session.stopping else { return }
                self.send("signal SIGTERM")
                self.fail(ConnectionError(.authenticationFailed, "nobody completed the sign-in at \(url) within \(seconds) s"), .connectionFailed)
            }
        }
    }

    /// Asks the person who started the tunnel; while they answer, the
    /// start's time stands still. Nobody to ask: authenticationRequired.
    func askPerson(_ request: CredentialRequest, why: String, then: @escaping (CredentialAnswers) -> Void) {
        asking = true
        if let t = tokens.removeValue(forKey: "start") {
            context.loop.cancel(t)
            startLeftMs = max(startDeadlineMs - context.loop.nowMs, 0)
        }
        context.ask(request) { [weak self] answers in
            guard let self, self.context.exitCode == nil, !self.session.stopping else { return }
            self.asking = false
            guard let answers else {
                self.send("signal SIGTERM")
                return self.fail(ConnectionError(.authenticationRequired, "\(why), and nobody could be asked (start it on a terminal)"),
                                 .connectionFailed)
            }
            // The start's time goes on where it stopped (as the start's own wait does).
            if self.tokens["start"] == nil, self.context.status == .connecting { self.armStartTimer(max(self.startLeftMs, 1000)) }
            then(answers)
            self.answerAuth()
        }
    }

    func applyPushed(_ pushed: PushedSettings) {
        guard pushed.invalid.isEmpty else {
            send("signal SIGTERM")
            return fail(ConnectionError(.configurationFailed,
                                        "the server pushed settings that are not valid addresses or domain names: \(pushed.invalid.joined(separator: ", "))"),
                        .configurationFailed)
        }
        var settings = TunnelNetworkSettings()
        settings.addresses = pushed.addresses
        settings.routes = pushed.routes
        settings.mtu = pushed.mtu
        settings.dns = pushed.dns + pushed.domains
        if let redirect { redirectDefault(redirect, &settings, pushed) }
        do {
            try applier?.apply(settings)
            context.update { [applier] in $0.settings = applier?.applied }
        } catch {
            fail(ConnectionError(.configurationFailed, "cannot apply the pushed settings: \(error)"), .configurationFailed)
        }
    }

    /// The profile's own redirect-gateway, and the server's unless the
    /// profile says route-nopull (openvpn then ignores pushed routes and
    /// redirect-gateway alike).
    var redirect: RedirectGateway? {
        let words = config.options.map { OpenVPNDirectives.tokenize($0) ?? [] }
        let own = words.compactMap(RedirectGateway.init).last
        if words.contains(where: { $0 == ["route-nopull"] }) { return own }
        return pushedRedirect ?? own
    }

    /// The full tunnel: both halves of each redirected family through the
    /// tunnel (the default route itself is left alone), the server's address
    /// (and with bypass-dns the DNS servers) kept on the route they had.
    func redirectDefault(_ r: RedirectGateway, _ settings: inout TunnelNetworkSettings, _ pushed: PushedSettings) {
        settings.routes += r.routes.filter { !settings.routes.contains($0) }
        let own = pushed.addresses.compactMap(CIDR.init).map(\.network)
        var outside = pushed.server.flatMap(IPAddress.init).map { [$0] } ?? []
        if r.bypassDNS { outside += pushed.dns.compactMap(IPAddress.init).filter { ip in !own.contains { $0.contains(ip) } } }
        for ip in outside where ip.isIPv6 ? r.ipv6 : r.ipv4 {
            guard let before = system.route(to: ip), before.outputInterfaceIndex != applier?.ifindex else { continue }
            settings.excludedRoutes.append(.init(prefix: "\(ip)/\(ip.isIPv6 ? 128 : 32)", ifindex: before.outputInterfaceIndex,
                                                 gateway: before.gateway.flatMap { IPAddress(bytes: $0)?.description }))
        }
        context.log("[#] redirect-gateway: full tunnel (\(r.ipv4 && r.ipv6 ? "IPv4 and IPv6" : r.ipv6 ? "IPv6" : "IPv4")), "
                    + "\(settings.excludedRoutes.map(\.prefix).joined(separator: ", ")) kept outside"
                    + (r.ignored.isEmpty ? "" : "; no effect here: \(r.ignored.joined(separator: ", "))"))
    }

    // MARK: the end

    func releaseAtEnd() {
        if management >= 0 { close(management); management = -1 }
    }
}
