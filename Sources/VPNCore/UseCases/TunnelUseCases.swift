#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// How a use case tells its front end what is happening while it waits.
/// The CLI draws a spinner and echoes the log; the agent will forward it.
public struct UseCaseObserver {
    /// Runs on every wake while a use case waits.
    public var wake: () -> Void
    /// Answers a credential request (a prompt on a terminal, the agent's
    /// client); nil when nobody can be asked.
    public var ask: (CredentialRequest) -> CredentialAnswers?
    public init(wake: @escaping () -> Void = {}, ask: @escaping (CredentialRequest) -> CredentialAnswers? = { _ in nil }) {
        self.wake = wake
        self.ask = ask
    }
}

/// The outcome of a start.
public enum StartOutcome: Sendable {
    /// It was connected already; nothing was done.
    case alreadyConnected(DerivedStatus)
    /// Accepted (`wait: false`): a supervisor runs and has written its first record.
    case accepted(DerivedStatus)
    /// Waited for and connected.
    case connected(DerivedStatus)

    public var status: DerivedStatus {
        switch self {
        case .alreadyConnected(let d), .accepted(let d), .connected(let d): return d
        }
    }
}

/// Why a start did not end connected: the status it ended in, and whether it
/// timed out (still connecting) or failed (disconnected, with the provider's
/// last-disconnect error).
public struct StartFailure: Error, Sendable {
    public let status: DerivedStatus
    public let timedOut: Bool
    public let timeoutSeconds: Int
    public let logPath: String
    /// Timed out, and the tunnel stays: it is persistent and keeps trying.
    public var persistent = false

    /// The documented error for it; front ends add their own hint.
    public var error: VPNError {
        if let e = status.lastDisconnectError, e.kind == .authenticationRequired {
            return VPNError(.configurationInvalid, L("cannot connect '\(status.name)': \(e.name): \(e.message)"))
        }
        if timedOut && persistent {
            return VPNError(.timedOut, L("'\(status.name)' is not connected after \(timeoutSeconds) s; it is persistent and keeps trying: \(status.record?.retrying ?? L("no answer yet"))"))
        }
        if timedOut {
            return VPNError(.timedOut, L("'\(status.name)' is still connecting after \(timeoutSeconds) s"))
        }
        let e = status.lastDisconnectError
        // The ConnectionError stays English: it is the runtime record's.
        let why = e.map { "\($0.name): \($0.message)" } ?? L("the tunnel went down")
        return VPNError(.connectionFailed, L("cannot connect '\(status.name)': \(why)"))
    }
}

/// start, stop and their checks: the core's use cases, which the CLI and the
/// agent call and render. They return typed results; nothing here prints.
public struct TunnelUseCases {
    public let store: PreferencesStore
    public let controller: TunnelController
    /// PATH for finding provider programs (the caller's environment).
    public let path: String?
    /// Whether this process may create interfaces (root or CAP_NET_ADMIN).
    public var canAdministerNetwork: () -> Bool = Privileges.canAdministerNetwork
    /// Whether an error may name another profile (the agent's caller may
    /// not see every one: an error never names one they may not).
    public var mayName: (Profile) -> Bool = { _ in true }

    public init(store: PreferencesStore, controller: TunnelController, path: String?) {
        self.store = store
        self.controller = controller
        self.path = path
    }

    /// Every check `start` makes before it spawns anything; returns the
    /// provider and the path of its program.
    @discardableResult
    public func preflight(_ profile: Profile) throws -> (provider: any TunnelProvider, program: String) {
        if !profile.enabled {
            throw VPNError(.configurationDisabled, L("profile '\(profile.name)' is disabled"), remedy: .enable(profile: profile.name))
        }
        let validator = ProfileValidator(secretExists: { store.secrets.exists(profile.id, name: $0) })
        // A password that is not stored is asked for (start asks it).
        let asked = profile.protocol.model.passwordSecret
        let problems = validator.problems(in: profile)
            + validator.missingSecrets(in: profile, except: asked.map { [$0] } ?? [])
        if !problems.isEmpty {
            throw VPNError.invalid(problems.count == 1 ? L("profile '\(profile.name)' cannot start (1 problem)")
                                                       : L("profile '\(profile.name)' cannot start (\(problems.count) problems)"),
                                   problems: problems, remedy: .edit(profile: profile.name, secrets: true))
        }
        // Secrets are checked as the supervisor will read them (owner, mode,
        // no symlinks), so a planted file fails here, before anything starts.
        for ref in profile.secretReferences where ref.name != asked || store.secrets.exists(profile.id, name: ref.name) {
            try store.secrets.check(profile.id, name: ref.name)
        }
        let provider = try ProviderRegistry.provider(for: profile)
        do {
            try provider.preflight(.system(configDirectory: store.directory))
        } catch let e as VPNError {
            throw e.prefixed("profile '\(profile.name)': ")
        }
        if KillSwitch.wanted(by: profile), Processes.which("nft", path: path) == nil {
            throw VPNError(.providerUnavailable, L("nft is not installed (profile '\(profile.name)' has a kill switch: includeAllNetworks or enforceRoutes)"),
                           hint: L("install it: apt-get install --no-install-recommends nftables"))
        }
        let needs = provider.requirements
        guard let program = Processes.which(needs.program, path: path) else {
            throw VPNError(.providerUnavailable, L("\(needs.program) is not installed (the provider for \(profile.protocol.kind.rawValue) profiles)"),
                           hint: L("install it: apt-get install --no-install-recommends \(needs.package)"))
        }
        if !canAdministerNetwork() {
            throw VPNError(.permissionDenied, L("starting a tunnel needs CAP_NET_ADMIN"), hint: L("run as root, or give vpnctl CAP_NET_ADMIN"))
        }
        return (provider, program)
    }

    /// Starts `profile` (save, load, then start: the caller passes a freshly
    /// loaded profile). Throws `StartFailure` when the wait ends in anything
    /// but connected, and `VPNError` for everything found before a spawn.
    /// `cleanedUp` receives what a dead supervisor's leftovers were.
    public func start(_ profile: Profile, wait: Bool, timeout: Int, persist: Bool = false, observer: UseCaseObserver = UseCaseObserver(),
                      startedBy: StartOrigin? = nil, cleanedUp: ([String]) -> Void = { _ in }) throws -> StartOutcome {
        // A profile that asks for it and cannot is refused by preflight
        // (a validation problem); `--persist` is what the caller's front end
        // says has no effect for such a profile (vpnctl@.service passes it for every one).
        let persistent = profile.persistent || (persist && profile.protocol.model.keepsTrying)
        try preflight(profile)
        try refuseSecondKillSwitch(profile)
        try controller.runtime.prepare()
        // What the profile does not store is asked for before anything
        // starts (and before the start lock: another start, on-demand's,
        // does not wait while a person types), so that a start nobody can
        // answer leaves nothing behind. A tunnel already up asks nothing.
        let before = try controller.derive(profile)
        let answers = before.isActive ? CredentialAnswers()
            : try askBeforeStart(profile, timeout: timeout, observer: observer, onDemand: startedBy != nil)
        // Starts of one profile take turns until one is accepted; a start
        // that finds the tunnel on its way up waits for the same outcome.
        let startLock = try controller.runtime.lockStart(profile.id)
        let current = try controller.derive(profile)
        if current.status == .connected {
            return .alreadyConnected(current)
        }
        if current.isActive {
            withExtendedLifetime(startLock) {}
            if !wait { return .accepted(current) }
            return try waitForOutcome(profile, supervisor: current.record?.supervisorPid, doorbell: nil, timeout: timeout, observer: observer)
        }
        cleanedUp(controller.cleanUpAfterDeadSupervisor(current))
        // A kill switch left blocking is taken over by the new supervisor;
        // one the profile no longer asks for goes.
        if !KillSwitch.wanted(by: profile) { cleanedUp(controller.removeKillSwitch(profile, searchPath: path)) }
        let (line, theirs) = try CredentialLine.pair()
        defer { line.close() }
        line.give(answers)
        let spawned: (pid: pid_t, doorbell: Int32)
        do {
            defer { close(theirs) }
            spawned = try controller.spawnSupervisor(profile, timeout: timeout, path: path, startedBy: startedBy, persistent: persistent,
                                                     credentials: theirs)
        }
        let (pid, doorbell) = spawned
        defer { close(doorbell) }
        // The supervisor's first record means the request was accepted.
        let accepted = try controller.wait(for: profile, timeoutMs: 5000, supervisor: pid, doorbell: doorbell) {
            $0.record?.supervisorPid == pid
        }
        withExtendedLifetime(startLock) {}
        guard let accepted else {
            throw VPNError(.failure, L("the tunnel supervisor did not start"), hint: L("see \(controller.runtime.logPath(profile.id))"))
        }
        // Another supervisor (not started through this lock) holds the profile:
        // its outcome is the one to report.
        if accepted.record?.supervisorPid != pid && accepted.isActive {
            if !wait { return .accepted(accepted) }
            return try waitForOutcome(profile, supervisor: accepted.record?.supervisorPid, doorbell: nil, timeout: timeout, observer: observer)
        }
        if !wait { return .accepted(accepted) }
        return try waitForOutcome(profile, supervisor: pid, doorbell: doorbell, timeout: timeout, observer: observer, line: line)
    }

    /// The credentials `profile` does not store, asked of the front end.
    /// Nobody to ask: the start fails with authenticationRequired (exit 5),
    /// which status shows until the next start.
    func askBeforeStart(_ profile: Profile, timeout: Int, observer: UseCaseObserver, onDemand: Bool) throws -> CredentialAnswers {
        let fields = profile.protocol.model.credentialFields(stored: { store.secrets.exists(profile.id, name: $0) })
        guard !fields.isEmpty else { return CredentialAnswers() }
        let request = CredentialRequest(profile: profile.name, fields: fields, timeoutSeconds: max(timeout, 120))
        if let answers = observer.ask(request) { return answers }
        let why = onDemand ? L("'\(profile.name)' needs \(request.asked), and an on-demand start has nobody to ask")
                           : L("'\(profile.name)' needs \(request.asked), and nobody can be asked (no terminal)")
        // What a dead supervisor left goes first (its record names it), then
        // the record as it is (a kill switch left blocking stays named in it).
        if let d = try? controller.derive(profile) { controller.cleanUpAfterDeadSupervisor(d) }
        var record = (try? controller.runtime.read(profile.id)) ?? RuntimeRecord(id: profile.id, name: profile.name, status: .disconnected)
        record.status = .disconnected
        record.connectedSince = nil
        // The record's words stay English (its kinds by their names).
        let kinds = request.fields.map(\.kind).filter { $0 != .username }.map(\.rawValue).joined(separator: ", ")
        record.lastDisconnectError = ConnectionError(.authenticationRequired, "needs \(kinds), and nobody could be asked")
        record.stopReason = .configurationFailed
        record.updatedAt = Date()
        try? controller.runtime.write(record)
        throw VPNError(.configurationInvalid, why, hint: CredentialAdvice.hint(for: request, profile: profile))
    }

    /// Two kill switches in one namespace would each drop the other's
    /// tunnel (a packet must pass every table), as NetworkExtension runs one
    /// includeAllNetworks tunnel at a time: the second is refused, naming the first.
    func refuseSecondKillSwitch(_ profile: Profile) throws {
        guard KillSwitch.wanted(by: profile) else { return }
        let here = NetworkNamespace.current()
        for other in try store.load() where other.id != profile.id {
            guard let ks = try controller.runtime.read(other.id)?.killSwitch, ks.netns == here else { continue }
            guard mayName(other) else {
                throw VPNError(.failure, L("another profile has a kill switch in place; two would block each other's tunnels"),
                               hint: L("root or a member of the admin group can stop it"))
            }
            throw VPNError(.failure, L("profile '\(other.name)' has a kill switch in place (nftables table inet \(ks.table)); two would block each other's tunnels"),
                           hint: L("stop it first: vpnctl stop \(other.name)"))
        }
    }

    func waitForOutcome(_ profile: Profile, supervisor: pid_t?, doorbell: Int32?, timeout: Int,
                        observer: UseCaseObserver, line: CredentialLine? = nil) throws -> StartOutcome {
        // A persistent tunnel past its timeout says so in its record (`retrying`), and stays.
        let outcome = try controller.wait(for: profile, timeoutMs: Int64(timeout + 5) * 1000, supervisor: supervisor,
                                          doorbell: doorbell, line: line, answer: observer.ask, onWake: observer.wake) {
            $0.status == .connected || $0.status == .disconnected || $0.record?.retrying != nil
        }
        let logPath = controller.runtime.logPath(profile.id)
        guard let outcome else {
            throw StartFailure(status: try controller.derive(profile), timedOut: true, timeoutSeconds: timeout, logPath: logPath)
        }
        if outcome.status != .connected && outcome.status != .disconnected && outcome.record?.retrying != nil {
            var f = StartFailure(status: outcome, timedOut: true, timeoutSeconds: timeout, logPath: logPath)
            f.persistent = true
            throw f
        }
        if outcome.status == .connected { return .connected(outcome) }
        throw StartFailure(status: outcome, timedOut: false, timeoutSeconds: timeout, logPath: logPath)
    }

    /// The outcome of a stop.
    public enum StopOutcome: Sendable {
        /// No live supervisor; what a dead one left was cleaned up (possibly nothing).
        case notRunning(DerivedStatus, cleanedUp: [String])
        /// SIGTERM sent (`wait: false`).
        case requested(DerivedStatus)
        /// Waited until the supervisor was gone.
        case stopped(DerivedStatus)

        public var status: DerivedStatus {
            switch self {
            case .notRunning(let d, _), .requested(let d), .stopped(let d): return d
            }
        }
    }

    /// Stops one profile's tunnel by its id; other tunnels are untouched. Only
    /// a supervisor its record proves is signalled.
    public func stop(_ profile: Profile, wait: Bool, timeout: Int, observer: UseCaseObserver = UseCaseObserver()) throws -> StopOutcome {
        let current = try controller.derive(profile)
        guard current.supervisorAlive, let pid = current.record?.supervisorPid else {
            var cleaned = controller.cleanUpAfterDeadSupervisor(current)
            cleaned += controller.removeKillSwitch(profile, searchPath: path)
            return .notRunning(try controller.derive(profile), cleanedUp: cleaned)
        }
        _ = controller.host.signal(pid, SIGTERM)
        if !wait {
            var d = current
            d.status = .disconnecting
            return .requested(d)
        }
        // Done means the supervisor is gone: its pidfd is the one wake needed.
        let outcome = try controller.wait(for: profile, timeoutMs: Int64(timeout) * 1000, supervisor: pid, watchRecords: false,
                                          onWake: observer.wake) {
            $0.status == .disconnected && !$0.supervisorAlive
        }
        guard let outcome else {
            throw VPNError(.timedOut, L("'\(profile.name)' did not stop within \(timeout) s"), hint: L("try again, or see the supervisor log"))
        }
        // The supervisor removes its kill switch on a stop; if it could not, this does.
        if outcome.record?.killSwitch != nil {
            controller.removeKillSwitch(profile, searchPath: path)
            return .stopped(try controller.derive(profile))
        }
        return .stopped(outcome)
    }
}

public enum Privileges {
    /// Root, or CAP_NET_ADMIN (bit 12) in the effective set.
    public static func canAdministerNetwork() -> Bool {
        if geteuid() == 0 { return true }
        guard let bytes = try? FileSystem.readFileIfPresent("/proc/self/status", followSymlinks: true) else { return false }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("CapEff:") {
            let hex = line.dropFirst(7).drop(while: { $0 == " " || $0 == "\t" })
            if let caps = UInt64(hex, radix: 16) { return caps & (1 << 12) != 0 }
        }
        return false
    }
}
