#if canImport(Glibc)
import Glibc
#endif
import CVPNShims
import FoundationEssentials
import VPNSystem

/// The files openvpn reads: the paths of the run's CA bundle, the certificate
/// and the key secrets. No secret value is written anywhere new; the password
/// is answered over the management socket, never put in a file or on argv.
public struct OpenVPNLaunch: Sendable {
    public var interface: String
    public var managementSocket: String
    public var caPath: String
    public var certificatePath: String?
    public var keyPath: String?
    public var tlsCryptPath: String?
    public var tlsAuthPath: String?
    public var tlsCryptV2Path: String?

    public init(interface: String, managementSocket: String, caPath: String) {
        self.interface = interface
        self.managementSocket = managementSocket
        self.caPath = caPath
    }

    /// The directives vpnctl writes itself; everything else in the file comes
    /// from the profile's options and is on OpenVPNDirectives' allow-list.
    public static let ownDirectives: Set<String> = [
        "client", "dev", "dev-type", "disable-dco", "ifconfig-noexec", "route-noexec", "script-security", "management",
        "management-client", "management-hold", "management-up-down", "management-query-passwords", "auth-retry", "verb",
        "remote", "ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2", "auth-user-pass", "suppress-timestamps",
    ]

    /// The config file for one run. Every option is checked again here (the
    /// store may have been edited by hand) and written back word by word, so
    /// openvpn reads exactly the words that were checked.
    public func render(_ c: OpenVPNConfiguration) throws -> String {
        let q = OpenVPNDirectives.quote
        var lines = [
            "# written by vpnctl for one run; do not edit",
            "client", "dev \(q(interface))", "dev-type tun", "disable-dco",
            "ifconfig-noexec", "route-noexec", "script-security 1",
            "management \(q(managementSocket)) unix", "management-client", "management-hold", "management-up-down",
            "management-query-passwords", "auth-retry none", "verb 3",
            // The supervisor stamps each line; unstamped, a repeated line is
            // the same line and the log counts it instead of writing it.
            "suppress-timestamps",
        ]
        for (i, r) in c.remotes.enumerated() {
            guard Endpoint.isHostName(r.host) || IPAddress(r.host) != nil, (1...65535).contains(r.port), OpenVPNImport.protocols.contains(r.proto) else {
                throw VPNError(.configurationInvalid, "protocol.remotes[\(i)] is not a host, a port and a protocol openvpn can use",
                               hint: "fix it with: vpnctl edit PROFILE")
            }
            lines.append("remote \(r.host) \(r.port) \(r.proto)")
        }
        lines.append("ca \(q(caPath))")
        if let p = certificatePath { lines.append("cert \(q(p))") }
        if let p = keyPath { lines.append("key \(q(p))") }
        if let p = tlsCryptPath { lines.append("tls-crypt \(q(p))") }
        if let p = tlsAuthPath { lines.append("tls-auth \(q(p))") }
        if let p = tlsCryptV2Path { lines.append("tls-crypt-v2 \(q(p))") }
        if c.username != nil { lines.append("auth-user-pass") }
        for (i, option) in c.options.enumerated() {
            if let problem = OpenVPNDirectives.problem(in: option) {
                throw VPNError(.configurationInvalid, "protocol.options[\(i)]: \(problem)", hint: "fix it with: vpnctl edit PROFILE")
            }
            lines.append(OpenVPNDirectives.render(OpenVPNDirectives.tokenize(option) ?? []))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Reads '\n'-terminated lines from a non-blocking fd.
public final class LineReader {
    let fd: Int32
    var buffer: [UInt8] = []
    private(set) var closed = false

    init(fd: Int32) { self.fd = fd }

    func readLines() -> [String] {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { buffer += chunk[0..<n]; continue }
            if n == 0 { closed = true }
            break
        }
        return LineReader.takeLines(&buffer)
    }

    /// Takes the complete lines off the front of `buffer` (any bytes; not
    /// valid UTF-8 becomes U+FFFD), leaving a partial last line in it.
    public static func takeLines(_ buffer: inout [UInt8]) -> [String] {
        var lines: [String] = []
        var start = 0
        while let nl = buffer[start...].firstIndex(of: 0x0A) {
            lines.append(String(decoding: buffer[start..<nl], as: UTF8.self))
            start = nl + 1
        }
        buffer.removeFirst(start)
        return lines
    }
}

extension Supervisor {
    func runOpenVPN(_ config: OpenVPNConfiguration, program: String, store: PreferencesStore, signalFD: Int32) -> Int32 {
        guard let ovpn = Processes.which(program, path: options.path) else {
            transition(.disconnected, error: ConnectionError(.pluginFailed, "\(program) is not installed"), stopReason: .providerFailed)
            return 1
        }
        let system: KernelTunnelSystem
        do { system = try KernelTunnelSystem() } catch {
            transition(.disconnected, error: ConnectionError(.configurationFailed, "\(error)"), stopReason: .configurationFailed)
            return 1
        }
        let undo = UndoStack(log: log)
        let configPath = runtime.providerFile(id, .config), certificatePath = runtime.providerFile(id, .certificate)
        var mgmt: Int32 = -1
        var providerPid: pid_t = 0
        var diagnosis = OpenVPNDiagnosis()
        let pushed = PushedState()
        let output = providerOutput()
        defer { output?.drain() }
        let remote = config.remotes.map { "\($0.host):\($0.port)/\($0.proto)" }.joined(separator: ", ")

        func fail(_ error: ConnectionError, _ reason: StopReason) -> Int32 {
            if record.status != .connecting && record.status != .disconnecting { transition(.disconnecting) }
            if mgmt >= 0 { close(mgmt); mgmt = -1 }
            output?.drain()
            undo.unwind()
            transition(.disconnected, error: error, stopReason: reason)
            return 1
        }

        // 1. The persistent tun openvpn attaches to by name.
        guard let name = WireGuardTunnel.chooseInterfaceName(system) else {
            return fail(ConnectionError(.configurationFailed, "no free utunN name"), .configurationFailed)
        }
        do {
            let tun = try TunDevice.create(name: name, packetInformation: false, persistent: true)
            close(tun.fd)
            log("[#] tun \(name) created (persistent)")
            undo.push("delete link \(name)") { [system] in
                try system.deleteLink(name)
                self.log("[#] link \(name) deleted")
            }
            try system.markLink(name, InterfaceMark.of(id))
            record.interface = name
            record.ifindex = try system.ifindex(name)
        } catch {
            return fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }

        // 2. The management socket openvpn connects back to, and its config.
        let sockPath = runtime.providerFile(id, .management)
        let listenFD: Int32
        do {
            unlink(sockPath)
            listenFD = try UnixSocket.listen(at: sockPath)
            undo.push("remove \(sockPath)") { close(listenFD); unlink(sockPath) }
            // openvpn trusts exactly this profile's anchors, each checked
            // against its name, through a bundle made for this run.
            let bundle = try TrustStore(configDirectory: options.configDirectory).bundle(config.caFingerprints)
            let caPath = runtime.providerFile(id, .caBundle)
            try AtomicFile.write(bundle, to: caPath, mode: 0o600, durable: false)
            undo.push("remove CA bundle") { unlink(caPath) }
            var launch = OpenVPNLaunch(interface: name, managementSocket: sockPath, caPath: caPath)
            if let cert = config.certificate {
                launch.certificatePath = certificatePath
                try AtomicFile.write(Array(cert.utf8), to: launch.certificatePath!, mode: 0o600, durable: false)
                undo.push("remove certificate file") { unlink(certificatePath) }
            }
            // Key material stays in its 0600 secret file; openvpn reads it there.
            for (secret, set) in [(config.keySecret, { (p: String) in launch.keyPath = p }),
                                  (config.tlsCryptSecret, { launch.tlsCryptPath = $0 }),
                                  (config.tlsAuthSecret, { launch.tlsAuthPath = $0 }),
                                  (config.tlsCryptV2Secret, { launch.tlsCryptV2Path = $0 })] {
                guard let secret else { continue }
                _ = try store.secrets.read(id, name: secret)  // refuses symlinks and loose modes
                set(store.secrets.path(id, secret))
            }
            try AtomicFile.write(Array(try launch.render(config).utf8), to: configPath, mode: 0o600, durable: false)
            undo.push("remove config file") { unlink(configPath) }
        } catch let e as VPNError {
            return fail(ConnectionError(.configurationFailed, e.message + (e.hint.map { " (\($0))" } ?? "")), .configurationFailed)
        } catch {
            return fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }
        let password: String?
        do {
            password = try config.passwordSecret.map { String(decoding: try store.secrets.read(id, name: $0), as: UTF8.self) }
        } catch {
            return fail(ConnectionError(.configurationFailed, "\(error)"), .configurationFailed)
        }

        // 3. openvpn itself, under the parent-death signal.
        do {
            providerPid = try Processes.spawnTied(ovpn, [ovpn, "--config", configPath],
                                                  environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], outputFD: output?.writeFD ?? logFD)
            output?.closeWriteEnd()
            let pid = providerPid
            log("[#] \(ovpn) --config \(configPath) (pid \(pid))")
            undo.push("stop openvpn \(pid)") {
                Processes.terminate(pid, signal: SIGTERM, timeoutMs: 3000)
                self.log("[#] openvpn \(pid) stopped")
            }
            record.providerPid = pid
            record.providerStartTime = Processes.startTime(of: pid)
        } catch {
            return fail(ConnectionError(.pluginFailed, "\(error)"), .providerFailed)
        }
        transition(.connecting)

        // 4. Wait for openvpn to connect to the management socket.
        let acceptDeadline = monotonicMilliseconds() + 10_000
        while mgmt < 0 {
            if monotonicMilliseconds() > acceptDeadline {
                return fail(ConnectionError(.pluginFailed, "openvpn did not connect to its management socket"), .providerFailed)
            }
            let ready = pollReadable([listenFD, signalFD, output?.pollFD ?? -1], timeoutMs: 100)
            if ready.contains(2) { output?.drain() }
            if ready.contains(0) {
                mgmt = accept(listenFD, nil, nil)
                if mgmt >= 0 { _ = fcntl(mgmt, F_SETFD, FD_CLOEXEC) }
            }
            if ready.contains(1) {
                var stop = false
                while true {
                    let sig = vpn_signalfd_read(signalFD)
                    if sig <= 0 { break }
                    if sig != SIGCHLD { stop = true }
                }
                if let status = Processes.reap(providerPid) {
                    return fail(ConnectionError(.pluginFailed, "openvpn exited with status \(status) before it connected (see \(runtime.logPath(id)))"), .providerFailed)
                }
                if stop {
                    transition(.disconnecting)
                    undo.unwind()
                    transition(.disconnected, stopReason: .userInitiated)
                    return 0
                }
            }
        }
        let reader = LineReader(fd: mgmt)
        func send(_ command: String) {
            let line = command + "\n"
            _ = line.withCString { Glibc.send(mgmt, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        send("state on")
        send("log on")

        // Link events: a deleted utun ends the tunnel at once (openvpn itself
        // would spin on "read from TUN/TAP: File descriptor in bad state").
        let monitor: NetlinkMonitor?
        do { monitor = try NetlinkMonitor(groups: 0x1) } catch {
            monitor = nil
            log("[!] \(error); a deleted \(name) is noticed only when openvpn exits")
        }
        var session = OpenVPNSession()
        var stopping: Bool { session.stopping }
        var releaseAt: Int64? = nil
        var env: [String: String] = [:]
        var upDown = ""
        let startedAt = monotonicMilliseconds()
        while true {
            var timeout: Int32 = 200
            if let at = releaseAt { timeout = Int32(max(0, min(200, at - monotonicMilliseconds()))) }
            // Fixed slots: 0 signals, 1 management, 2 netlink, 3 provider output (-1 is skipped by poll).
            let ready = pollReadable([signalFD, mgmt, monitor?.fd ?? -1, output?.pollFD ?? -1],
                                     timeoutMs: timeout)
            if ready.contains(3) { output?.drain() }
            if let at = releaseAt, monotonicMilliseconds() >= at {
                releaseAt = nil
                if !stopping { send("hold release") }
            }
            if ready.contains(2) {
                monitor?.drain()
                let index: Int32?
                do { index = try system.ifindex(name) } catch { index = nil }
                if index != record.ifindex && !stopping {
                    let why = index == nil ? "was deleted" : "was replaced (ifindex \(record.ifindex ?? 0) -> \(index ?? 0))"
                    log("[!] interface \(name) \(why); stopping openvpn (pid \(providerPid))")
                    Processes.terminate(providerPid, signal: SIGTERM, timeoutMs: 300)
                    return fail(ConnectionError(.pluginFailed, "interface \(name) \(why) under openvpn; the tunnel ended"), .providerFailed)
                }
            }
            if ready.contains(0) {
                while true {
                    let sig = vpn_signalfd_read(signalFD)
                    if sig <= 0 { break }
                    if sig == SIGCHLD {
                        if let status = Processes.reap(providerPid) {
                            if stopping {
                                transition(.disconnecting)
                                if mgmt >= 0 { close(mgmt); mgmt = -1 }
                                undo.unwind()
                                transition(.disconnected, stopReason: .userInitiated)
                                return 0
                            }
                            let how = status > 128 ? "was killed by signal \(status - 128)" : "exited with status \(status)"
                            // openvpn says why before it exits (AUTH_FAILED, VERIFY ERROR...),
                            // but the exit can be seen first: read what it said.
                            for line in reader.readLines() { diagnosis.observe(ManagementMessage.parse(line)) }
                            if record.status == .connecting, let e = diagnosis.fatal {
                                return fail(e, .connectionFailed)
                            }
                            return fail(ConnectionError(.pluginFailed, "openvpn (pid \(providerPid)) \(how)"
                                                        + (diagnosis.lastReason.map { " (openvpn: \($0))" } ?? "")), .providerFailed)
                        }
                    } else if !stopping {
                        session.stop()
                        releaseAt = nil
                        transition(.disconnecting)
                        send("signal SIGTERM")
                    }
                }
            }
            if ready.contains(1) {
                for line in reader.readLines() {
                    let m = ManagementMessage.parse(line)
                    diagnosis.observe(m)
                    for action in session.observe(m) {
                        switch action {
                        case .releaseHold(let seconds):
                            if seconds > 0 { log("[*] openvpn holds; releasing it in \(seconds) s (its connect-retry back-off)") }
                            releaseAt = monotonicMilliseconds() + Int64(seconds) * 1000
                        case .connected(let n):
                            if n > 1 { log("[*] openvpn reconnected") }
                            transition(.connected)
                        case .reasserting:
                            log("[*] openvpn is reconnecting (\(diagnosis.lastReason ?? "soft restart"))")
                            transition(.reasserting)
                        }
                    }
                    switch m {
                    case .password(let text) where text.hasPrefix("Need 'Auth'"):
                        guard let user = ManagementMessage.quote(config.username ?? ""),
                              let pass = ManagementMessage.quote(password ?? "") else {
                            send("signal SIGTERM")
                            return fail(ConnectionError(.configurationFailed,
                                                        "the username or the password secret has a control character (a line break?) in it; "
                                                        + "openvpn's management interface cannot carry it"), .configurationFailed)
                        }
                        send("username \"Auth\" \(user)")
                        send("password \"Auth\" \(pass)")
                    case .password(let text) where text.hasPrefix("Need "):
                        log("[!] openvpn asks for something vpnctl cannot answer: \(text)")
                    case .upDownEnv(let k, let v):
                        env[k] = v
                    case .upDown(let what):
                        upDown = what
                        env = [:]
                    case .upDownEnvEnd:
                        // DOWN (also before each reconnect's UP) needs nothing:
                        // the undo steps remove what UP added, and the next UP
                        // keeps what is pushed again and withdraws the rest.
                        if upDown == "UP" && !stopping {
                            let settings = PushedSettings(env: env)
                            if !settings.invalid.isEmpty {
                                send("signal SIGTERM")
                                return fail(ConnectionError(.configurationFailed,
                                                            "the server pushed settings that are not addresses: \(settings.invalid.joined(separator: ", "))"),
                                            .configurationFailed)
                            }
                            do {
                                try apply(settings, name, system, undo, pushed)
                                record.settings = pushed.applied
                            } catch {
                                return fail(ConnectionError(.configurationFailed, "cannot apply the pushed settings: \(error)"), .configurationFailed)
                            }
                        }
                        env = [:]
                    default:
                        break
                    }
                    if record.status == .connecting, let e = diagnosis.fatal, !stopping {
                        send("signal SIGTERM")
                        return fail(e, .connectionFailed)
                    }
                }
                if reader.closed && !stopping {
                    return fail(diagnosis.fatal ?? ConnectionError(.pluginFailed, "openvpn closed its management connection"
                                + (diagnosis.lastReason.map { " (openvpn: \($0))" } ?? "")), .providerFailed)
                }
            }
            if record.status == .connecting && !stopping && monotonicMilliseconds() - startedAt > options.startTimeout * 1000 {
                send("signal SIGTERM")
                return fail(diagnosis.timeoutError(seconds: options.startTimeout, remote: remote), .connectionFailed)
            }
        }
    }

    /// Applies pushed settings to the utun through netlink, with undo steps.
    /// A later push (a reconnect) keeps what it pushes again, adds what is
    /// new and withdraws what it no longer has.
    func apply(_ s: PushedSettings, _ name: String, _ system: KernelTunnelSystem, _ undo: UndoStack,
               _ state: PushedState) throws {
        let index = try system.ifindex(name)
        // Withdrawn: gone already (the kernel drops routes with a link) is as good.
        for r in state.applied.routes where !s.routes.contains(r) {
            state.applied.routes.removeAll { $0 == r }
            do { try system.deleteRoute(r, ifindex: index, gateway: nil, table: 254) } catch {
                log("[!] route \(r), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] route \(r) withdrawn")
        }
        for a in state.applied.addresses where !s.addresses.contains(a) {
            state.applied.addresses.removeAll { $0 == a }
            do { try system.deleteAddress(a, ifindex: index) } catch {
                log("[!] address \(a), no longer pushed, was not there to delete: \(error)")
            }
            log("[#] address \(a) withdrawn")
        }
        // Added again on every push, not only when new: openvpn's restart
        // may have taken the link down, and the kernel its routes with it.
        for a in s.addresses {
            do {
                try system.addAddress(a, ifindex: index)
                log("[#] address \(a) dev \(name)")
            } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {}
            if state.applied.addresses.contains(a) { continue }
            state.applied.addresses.append(a)
            undo.push("delete address \(a)") { [system] in
                guard state.applied.addresses.contains(a) else { return }
                try system.deleteAddress(a, ifindex: index)
                self.log("[#] address \(a) deleted")
            }
        }
        if let mtu = s.mtu {
            try system.setMTU(name, mtu)
            state.applied.mtu = mtu
            log("[#] link \(name) mtu \(mtu)")
        }
        try system.setUp(name)
        log("[#] link \(name) up")
        for r in s.routes {
            do {
                try system.addRoute(r, ifindex: index, gateway: nil, table: 254)
                log("[#] route \(r) dev \(name)")
            } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {
                // Already there: ours from an earlier push, or the subnet route of an address.
                continue
            }
            if state.applied.routes.contains(r) { continue }
            state.applied.routes.append(r)
            undo.push("delete route \(r)") { [system] in
                guard state.applied.routes.contains(r) else { return }
                try system.deleteRoute(r, ifindex: index, gateway: nil, table: 254)
                self.log("[#] route \(r) deleted")
            }
        }
        state.applied.dns = s.dns + s.domains
    }
}

/// The settings applied from openvpn's pushes so far, shared with their undo steps.
final class PushedState {
    var applied = AppliedSettings()
}
