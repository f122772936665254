#if canImport(Glibc)
import Glibc
#endif
import CVPNShims
import FoundationEssentials
import VPNSystem

/// The files openvpn reads: the paths of the trust anchor, the certificate and
/// the key secrets. No secret value is written anywhere new; the password is
/// answered over the management socket, never put in a file or on argv.
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

    public func render(_ c: OpenVPNConfiguration) -> String {
        var lines = [
            "# written by vpnctl for one run; do not edit",
            "client", "dev \(interface)", "dev-type tun", "disable-dco",
            "ifconfig-noexec", "route-noexec", "script-security 1",
            "management \(managementSocket) unix", "management-client", "management-hold", "management-up-down",
            "management-query-passwords", "auth-retry none", "verb 3",
        ]
        for r in c.remotes { lines.append("remote \(r.host) \(r.port) \(r.proto)") }
        lines.append("ca \(caPath)")
        if let p = certificatePath { lines.append("cert \(p)") }
        if let p = keyPath { lines.append("key \(p)") }
        if let p = tlsCryptPath { lines.append("tls-crypt \(p)") }
        if let p = tlsAuthPath { lines.append("tls-auth \(p)") }
        if let p = tlsCryptV2Path { lines.append("tls-crypt-v2 \(p)") }
        if c.username != nil { lines.append("auth-user-pass") }
        lines += c.options
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
        var settings = AppliedSettings()
        let remote = config.remotes.map { "\($0.host):\($0.port)/\($0.proto)" }.joined(separator: ", ")

        func fail(_ error: ConnectionError, _ reason: StopReason) -> Int32 {
            if record.status != .connecting && record.status != .disconnecting { transition(.disconnecting) }
            if mgmt >= 0 { close(mgmt); mgmt = -1 }
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
            let trust = TrustStore(configDirectory: options.configDirectory)
            guard let fp = config.caFingerprint, trust.exists(fp) else {
                return fail(ConnectionError(.configurationFailed, "trust anchor \(config.caFingerprint ?? "?") is not installed"), .configurationFailed)
            }
            var launch = OpenVPNLaunch(interface: name, managementSocket: sockPath, caPath: trust.path(fp))
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
            try AtomicFile.write(Array(launch.render(config).utf8), to: configPath, mode: 0o600, durable: false)
            undo.push("remove config file") { unlink(configPath) }
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
                                                  environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], outputFD: logFD)
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
            let ready = pollReadable([listenFD, signalFD], timeoutMs: 100)
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
        send("hold release")

        var env: [String: String] = [:]
        var upDown = ""
        var stopping = false
        let startedAt = monotonicMilliseconds()
        while true {
            let ready = pollReadable([signalFD, mgmt], timeoutMs: 200)
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
                        stopping = true
                        transition(.disconnecting)
                        send("signal SIGTERM")
                    }
                }
            }
            if ready.contains(1) {
                for line in reader.readLines() {
                    let m = ManagementMessage.parse(line)
                    diagnosis.observe(m)
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
                        // DOWN needs nothing: the undo steps remove what UP added.
                        if upDown == "UP" && !stopping {
                            let pushed = PushedSettings(env: env)
                            if !pushed.invalid.isEmpty {
                                send("signal SIGTERM")
                                return fail(ConnectionError(.configurationFailed,
                                                            "the server pushed settings that are not addresses: \(pushed.invalid.joined(separator: ", "))"),
                                            .configurationFailed)
                            }
                            do {
                                settings = try apply(pushed, name, system, undo, into: settings)
                                record.settings = settings
                            } catch {
                                return fail(ConnectionError(.configurationFailed, "cannot apply the pushed settings: \(error)"), .configurationFailed)
                            }
                        }
                        env = [:]
                    case .state(let stateName, _):
                        guard let status = OpenVPNState.status(stateName), !stopping else { break }
                        if status == .connected, record.status != .connected {
                            transition(.connected)
                        } else if status == .reasserting, record.status == .connected {
                            transition(.reasserting)
                        } else if status == .disconnecting {
                            break
                        }
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
    func apply(_ s: PushedSettings, _ name: String, _ system: KernelTunnelSystem, _ undo: UndoStack,
               into previous: AppliedSettings) throws -> AppliedSettings {
        var applied = previous
        let index = try system.ifindex(name)
        for a in s.addresses where !applied.addresses.contains(a) {
            try system.addAddress(a, ifindex: index)
            applied.addresses.append(a)
            log("[#] address \(a) dev \(name)")
            undo.push("delete address \(a)") { [system] in
                try system.deleteAddress(a, ifindex: index)
                self.log("[#] address \(a) deleted")
            }
        }
        if let mtu = s.mtu {
            try system.setMTU(name, mtu)
            applied.mtu = mtu
            log("[#] link \(name) mtu \(mtu)")
        }
        try system.setUp(name)
        log("[#] link \(name) up")
        for r in s.routes where !applied.routes.contains(r) {
            do {
                try system.addRoute(r, ifindex: index, gateway: nil, table: 254)
            } catch let e as NetlinkError where e.code == 6 /* NLE_EXIST */ {
                continue  // the kernel already has it (the subnet route of an address)
            }
            applied.routes.append(r)
            log("[#] route \(r) dev \(name)")
            undo.push("delete route \(r)") { [system] in
                try system.deleteRoute(r, ifindex: index, gateway: nil, table: 254)
                self.log("[#] route \(r) deleted")
            }
        }
        applied.dns = s.dns + s.domains
        return applied
    }
}
