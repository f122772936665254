#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// The JSON shape of one profile's status, shared by status, start, stop and toggle.
struct StatusJSON: Encodable {
    let status: DerivedStatus

    enum Keys: String, CodingKey {
        case id, name, status, interface, connectedSince, reconnects, lastDisconnectError, stopReason, dns
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(status.id.uuidString.lowercased(), forKey: .id)
        try c.encode(status.name, forKey: .name)
        try c.encode(status.status.name, forKey: .status)
        if let i = status.interface { try c.encode(i, forKey: .interface) } else { try c.encodeNil(forKey: .interface) }
        if let s = status.connectedSince { try c.encode(Timestamp.iso8601(s), forKey: .connectedSince) } else { try c.encodeNil(forKey: .connectedSince) }
        try c.encode(status.record?.reconnects ?? 0, forKey: .reconnects)
        if let e = status.lastDisconnectError { try c.encode(e, forKey: .lastDisconnectError) } else { try c.encodeNil(forKey: .lastDisconnectError) }
        if let r = status.stopReason { try c.encode(r.rawValue, forKey: .stopReason) } else { try c.encodeNil(forKey: .stopReason) }
        try c.encode(status.dns, forKey: .dns)
    }
}

extension StatusJSON {
    /// The same shape, built by hand: `status` is called in loops, and
    /// JSONEncoder's generic set-up costs more than the rest of the command.
    var json: JSONValue {
        .object([
            "id": .string(status.id.uuidString.lowercased()),
            "name": .string(status.name),
            "status": .string(status.status.name),
            "interface": .optional(status.interface),
            "connectedSince": .optional(status.connectedSince.map(Timestamp.iso8601)),
            "reconnects": .number(String(status.record?.reconnects ?? 0)),
            "lastDisconnectError": status.lastDisconnectError?.json ?? .null,
            "stopReason": .optional(status.stopReason?.rawValue),
            "dns": .array(status.dns.map { .string($0) }),
        ])
    }
}

struct OneStatusResult: Encodable {
    var schemaVersion = 1
    let action: String
    let profile: StatusJSON
}

extension Invocation {
    var controller: TunnelController {
        TunnelController(configDirectory: options.configDirectory, runDirectory: options.runDirectory)
    }

    func timeoutSeconds(default value: Int) throws -> Int {
        guard let text = args.value("timeout") else { return value }
        guard let n = Int(text), n > 0, n <= 86400 else {
            throw VPNError.usage("invalid value '\(text)' for '--timeout <seconds>': expected a whole number of seconds (1–86400)",
                                 hint: "See 'vpnctl help \(args.command.joined(separator: " "))'.")
        }
        return n
    }
}

/// A one-line status for people: symbol, status, profile, interface, error.
func statusCard(_ d: DerivedStatus, _ out: Output) -> String {
    let symbol: String, colour: String
    switch d.status {
    case .connected: symbol = "●"; colour = "32"
    case .connecting, .reasserting, .disconnecting: symbol = "◐"; colour = "33"
    default:
        if d.lastDisconnectError != nil && d.stopReason != .userInitiated { symbol = "✗"; colour = "31" }
        else { symbol = "○"; colour = "90" }
    }
    var s = "\(out.paint(symbol + " " + d.status.name, colour))  \(d.name)"
    if let i = d.interface { s += "  \(i)" }
    if let e = d.lastDisconnectError, d.status == .disconnected, d.stopReason != .userInitiated {
        s += "  " + out.paint("\(e.name): \(e.message)", "31")
    }
    return s
}

enum TunnelActions {
    /// Every check `start` makes before it spawns anything.
    static func preflight(_ inv: Invocation, _ manager: ProfileManager, _ profile: Profile) throws -> String {
        if !profile.enabled {
            throw VPNError(.configurationDisabled, "profile '\(profile.name)' is disabled", hint: "enable it with: vpnctl enable \(profile.name)")
        }
        let validator = ProfileValidator(secretExists: { manager.store.secrets.exists(profile.id, name: $0) })
        let problems = validator.problems(in: profile) + validator.missingSecrets(in: profile)
        if !problems.isEmpty {
            throw VPNError.invalid("profile '\(profile.name)' cannot start (\(problems.count) problem\(problems.count == 1 ? "" : "s"))",
                                   problems: problems, hint: "fix it with: vpnctl edit \(profile.name) (secrets: vpnctl secret set)")
        }
        let provider: (program: String, package: String)
        switch profile.protocol {
        case .wireguard: provider = ("wireguard-go", "wireguard-go")
        case .openvpn(let o):
            provider = ("openvpn", "openvpn")
            let trust = TrustStore(configDirectory: inv.options.configDirectory)
            if let fp = o.caFingerprint, !trust.exists(fp) {
                throw VPNError(.configurationInvalid, "profile '\(profile.name)' trusts anchor \(fp), which is not installed",
                               hint: "import the profile again, or install the CA as \(trust.path(fp))")
            }
        default:
            throw VPNError(.providerUnavailable, "no provider for \(profile.protocol.kind.rawValue) profiles in this vpnctl",
                           hint: "this version starts wireguard and openvpn profiles")
        }
        guard let wg = Processes.which(provider.program, path: inv.context.environment["PATH"]) else {
            throw VPNError(.providerUnavailable, "\(provider.program) is not installed (the provider for \(profile.protocol.kind.rawValue) profiles)",
                           hint: "install it: apt-get install --no-install-recommends \(provider.package)")
        }
        if !Privileges.canAdministerNetwork() {
            throw VPNError(.permissionDenied, "starting a tunnel needs CAP_NET_ADMIN", hint: "run as root, or give vpnctl CAP_NET_ADMIN")
        }
        return wg
    }

    static func start(_ inv: Invocation, _ manager: ProfileManager, _ profile: Profile, wait: Bool, timeout: Int) throws -> (ExitCode, DerivedStatus) {
        _ = try preflight(inv, manager, profile)
        let controller = inv.controller
        var current = try controller.derive(profile)
        if current.status == .connected {
            inv.output.note("'\(profile.name)' is already connected (\(current.interface ?? "?"))")
            return (.ok, current)
        }
        var supervisor: pid_t? = current.record?.supervisorPid
        if !current.isActive {
            let cleaned = controller.cleanUpAfterDeadSupervisor(current)
            if !cleaned.isEmpty && inv.options.verbose { for c in cleaned { inv.output.note("[#] \(c)") } }
            let logStart = (try? FileSystem.info(controller.runtime.logPath(profile.id)))??.size ?? 0
            let (pid, doorbell) = try controller.spawnSupervisor(profile, timeout: timeout, path: inv.context.environment["PATH"])
            defer { close(doorbell) }
            supervisor = pid
            // The supervisor's first record means the request was accepted.
            let accepted = try controller.wait(for: profile, timeoutMs: 5000, supervisor: pid, doorbell: doorbell) {
                $0.record?.supervisorPid == pid
            }
            guard let accepted else {
                throw VPNError(.failure, "the tunnel supervisor did not start",
                               hint: "see \(controller.runtime.logPath(profile.id))")
            }
            current = accepted
            if !wait {
                inv.output.note("start requested; status: \(current.status.name)")
                return (.ok, current)
            }
            return try waitForOutcome(inv, profile, supervisor: supervisor, doorbell: doorbell, timeout: timeout, logStart: logStart)
        }
        if !wait { return (.ok, current) }
        return try waitForOutcome(inv, profile, supervisor: supervisor, doorbell: nil, timeout: timeout, logStart: nil)
    }

    static func waitForOutcome(_ inv: Invocation, _ profile: Profile, supervisor: pid_t?, doorbell: Int32?, timeout: Int,
                               logStart: Int?) throws -> (ExitCode, DerivedStatus) {
        let controller = inv.controller
        let spinner = Spinner(enabled: inv.context.stderrIsTerminal && !inv.options.json, sink: inv.context.stderr)
        let log = LogFollower(path: controller.runtime.logPath(profile.id), from: logStart, inv: inv, spinner: spinner)
        func echoLog() { log.echo() }
        let outcome = try controller.wait(for: profile, timeoutMs: Int64(timeout + 5) * 1000, supervisor: supervisor,
                                          doorbell: doorbell, onWake: { echoLog(); spinner.tick("connecting \(profile.name)") }) {
            $0.status == .connected || $0.status == .disconnected
        }
        echoLog()
        spinner.clear()
        guard let outcome else {
            throw VPNError(.timedOut, "'\(profile.name)' is still connecting after \(timeout) s",
                           hint: "the supervisor keeps trying; see 'vpnctl status \(profile.name)' or stop it")
        }
        if outcome.status == .connected { return (.ok, outcome) }
        let e = outcome.lastDisconnectError
        throw VPNError(.connectionFailed,
                       "cannot connect '\(profile.name)': \(e.map { "\($0.name): \($0.message)" } ?? "the tunnel went down")",
                       hint: hint(for: e, profile: profile, controller: controller))
    }

    static func hint(for e: ConnectionError?, profile: Profile, controller: TunnelController) -> String {
        switch e?.name {
        case "serverNotResponding": return "check that the server is up and reachable, and that its public key matches this profile's peer"
        case "serverAddressResolutionFailed": return "check the endpoint's host name and DNS"
        default: return "see \(controller.runtime.logPath(profile.id))"
        }
    }

    static func stop(_ inv: Invocation, _ profile: Profile, wait: Bool, timeout: Int) throws -> (ExitCode, DerivedStatus) {
        let controller = inv.controller
        let current = try controller.derive(profile)
        guard current.supervisorAlive, let pid = current.record?.supervisorPid else {
            let cleaned = controller.cleanUpAfterDeadSupervisor(current)
            if !cleaned.isEmpty {
                inv.output.note("'\(profile.name)' had no live supervisor; cleaned up: \(cleaned.joined(separator: ", "))")
            } else {
                inv.output.note("'\(profile.name)' is not running")
            }
            return (.ok, try controller.derive(profile))
        }
        let log = LogFollower(path: controller.runtime.logPath(profile.id), from: nil, inv: inv, spinner: nil)
        kill(pid, SIGTERM)
        if !wait {
            inv.output.note("stop requested; status: disconnecting")
            var d = current
            d.status = .disconnecting
            return (.ok, d)
        }
        let spinner = Spinner(enabled: inv.context.stderrIsTerminal && !inv.options.json, sink: inv.context.stderr)
        // Done means the supervisor is gone: its pidfd is the one wake needed.
        let outcome = try controller.wait(for: profile, timeoutMs: Int64(timeout) * 1000, supervisor: pid, watchRecords: false,
                                          onWake: { spinner.tick("disconnecting \(profile.name)") }) {
            $0.status == .disconnected && !$0.supervisorAlive
        }
        spinner.clear()
        log.echo()
        guard let outcome else {
            throw VPNError(.timedOut, "'\(profile.name)' did not stop within \(timeout) s", hint: "try again, or see the supervisor log")
        }
        return (.ok, outcome)
    }
}

/// With --verbose, echoes the supervisor's "[#]" lines (each change it made
/// to the system) that were written after `from` (default: now).
final class LogFollower {
    let path: String
    var offset: Int?
    let inv: Invocation
    let spinner: Spinner?

    init(path: String, from: Int?, inv: Invocation, spinner: Spinner?) {
        self.path = path
        self.inv = inv
        self.spinner = spinner
        offset = inv.options.verbose ? (from ?? ((try? FileSystem.info(path))??.size ?? 0)) : nil
    }

    func echo() {
        // The log was rotated or truncated (BoundedLog): read the new file from its start.
        if let o = offset, let size = (try? FileSystem.info(path))??.size, size < o { offset = 0 }
        guard let start = offset, let bytes = try? FileSystem.readFile(path, from: start),
              let lastNewline = bytes.lastIndex(of: 0x0A) else { return }
        for line in String(decoding: bytes[..<lastNewline], as: UTF8.self).split(separator: "\n") {
            if let r = line.firstRange(of: "[#] ") {
                spinner?.clear()
                inv.output.note(String(line[r.lowerBound...]))
            }
        }
        offset = start + lastNewline + 1
    }
}

/// A progress line on a terminal, redrawn in place.
final class Spinner {
    let enabled: Bool
    let sink: TextSink
    var frame = 0
    var shown = false
    static let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    init(enabled: Bool, sink: TextSink) {
        self.enabled = enabled
        self.sink = sink
    }

    func tick(_ text: String) {
        guard enabled else { return }
        sink.write("\r\u{1B}[K\(Spinner.frames[frame % Spinner.frames.count]) \(text)…")
        frame += 1
        shown = true
    }

    func clear() {
        guard enabled, shown else { return }
        sink.write("\r\u{1B}[K")
        shown = false
    }
}

enum Privileges {
    /// Root, or CAP_NET_ADMIN (bit 12) in the effective set.
    static func canAdministerNetwork() -> Bool {
        if geteuid() == 0 { return true }
        guard let bytes = try? FileSystem.readFileIfPresent("/proc/self/status", followSymlinks: true) else { return false }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("CapEff:") {
            let hex = line.dropFirst(7).trimmingPrefixWhitespace()
            if let caps = UInt64(hex, radix: 16) { return caps & (1 << 12) != 0 }
        }
        return false
    }
}

extension Substring {
    func trimmingPrefixWhitespace() -> Substring { drop(while: { $0 == " " || $0 == "\t" }) }
}
