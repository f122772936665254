#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// The use cases run in this process, on a store and run directory: for
/// root's command line, and in the agent for the users it serves.
public final class LocalService: TunnelService {
    public let configDirectory: String
    public let runDirectory: String
    /// The PATH supervisors and providers are found on.
    public let path: String?
    public var access: ServiceAccess
    /// The vpnctl that supervises tunnels (nil: this executable).
    public var supervisorExecutable: String? = nil

    public init(configDirectory: String, runDirectory: String, path: String?, access: ServiceAccess = .unrestricted) {
        self.configDirectory = configDirectory
        self.runDirectory = runDirectory
        self.path = path
        self.access = access
    }

    var store: PreferencesStore { PreferencesStore(directory: configDirectory) }
    var controller: TunnelController {
        var c = TunnelController(configDirectory: configDirectory, runDirectory: runDirectory)
        c.supervisorExecutable = supervisorExecutable
        return c
    }
    var pauses: OnDemandPauses { OnDemandPauses(runDirectory: runDirectory) }
    var caller: Caller { access.caller ?? Caller.current }

    var tunnels: TunnelUseCases {
        var t = TunnelUseCases(store: store, controller: controller, path: path)
        if let visible = access.visible { t.mayName = visible }
        return t
    }

    /// The store's profiles the caller may name.
    public func manager() throws -> ProfileManager {
        let m = ProfileManager(store: store)
        try m.load()
        if let visible = access.visible { m.restrict(to: visible) }
        return m
    }

    func profile(_ reference: String) throws -> Profile { try manager().profile(named: reference) }

    public func list() throws -> ProfileList {
        let rows = try manager().profiles.map(ProfileList.Row.init)
        return ProfileList(profiles: rows, restricted: access.visible != nil, storePath: access.visible == nil ? store.path : nil)
    }

    public func can(_ action: PolicyAction, _ reference: String) throws -> CanAnswer {
        let p = try profile(reference)
        let caller = self.caller
        let d = access.policy.decide(caller, action, profile: p)
        return CanAnswer(action: action, profile: p.name, id: p.id, user: caller.userName ?? String(caller.uid), allowed: d.allowed, reason: d.reason)
    }

    public func isConnected(_ reference: String) throws -> ConnectedAnswer {
        let p = try profile(reference)
        return ConnectedAnswer(name: p.name, status: try controller.derive(p).status)
    }

    public func status(_ reference: String?) throws -> StatusReport {
        let m = try manager()
        let profiles = try reference.map { [try m.profile(named: $0)] } ?? m.profiles
        return StatusReport(profiles: try statuses(of: profiles), restricted: access.visible != nil)
    }

    /// The status of profiles already read (a caller that read the store to decide reads it once).
    /// Without `readActivity`, no counters or handshake are asked of the
    /// providers (D-Bus properties have none; a dying provider's socket
    /// may keep such a question waiting).
    public func statuses(of profiles: [Profile], readActivity: Bool = true) throws -> [ProfileStatus] {
        let statuses = try StatusUseCase(controller: controller).statuses(of: profiles, readActivity: readActivity)
        let paused = (try? pauses.paused()) ?? []
        let report = try? OnDemandReport.read(runDirectory: runDirectory)
        return zip(profiles, statuses).map { p, d in
            ProfileStatus(status: d, onDemandEnabled: p.onDemand.enabled, onDemandPaused: paused.contains(d.id), onDemandNote: report?.entry(d.id)?.note)
        }
    }

    public func watch(_ reference: String?, _ events: ServiceEvents) throws {
        let m = try manager()
        let only = try reference.map { [try m.profile(named: $0)] }
        let visible = access.visible
        let watch = try StatusUseCase(controller: controller).watch(profiles: {
            if let only { return only }
            guard let fresh = try? m.store.load() else { return m.profiles }
            return visible.map { fresh.filter($0) } ?? fresh
        }, hangupOf: events.hangupDescriptor)
        guard events.emit(.watching(profiles: watch.begin())) else { return }
        var going = true
        // keepGoing runs after each wake, before the pass that reports.
        var revoked: VPNError?
        watch.run(keepGoing: { [access] in
            revoked = revoked ?? access.recheck?()
            return revoked == nil && going && events.isOpen()
        }) { t in
            going = events.emit(.transition(t))
            return going
        }
        if let revoked { throw revoked }
    }

    public func verify(_ reference: String, probe: String, dns: String?, timeout: Int) throws -> VerifyAnswer {
        guard let target = try? ProbeTarget.parse(probe) else {
            throw VPNError.usage(L("invalid probe \(probe.quotedForMessage): expected http://HOST[:PORT]/PATH or HOST:PORT"))
        }
        let p = try profile(reference)
        let status = try controller.derive(p)
        // Include-mode app rules: the path of a matched program, which carries the rules' mark.
        let mark = status.record?.apps.flatMap { $0.mode == .include ? $0.mark : nil }
        var report = try VerifyUseCase(system: KernelVerifySystem(mark: mark)).verify(status, probe: target, timeoutSeconds: timeout,
                                                                                        dnsName: dns, probeOffTunnel: access.mayProbeOffTunnel)
        if let apps = status.record?.apps {
            report = report.noting(VerifyCheck(name: "app rules", ok: true, detail: apps.mode == .include
                ? L("include: the probe carries the rules' mark, as a matched program's packets do; programs outside the rules do not use the tunnel")
                : L("exclude: the probe is outside the rules, as every program but the matched ones; the matched programs go around the tunnel")))
        }
        return VerifyAnswer(profile: p.name, probe: probe, report: report)
    }

    public func stats(_ reference: String) throws -> StatsAnswer {
        StatsAnswer(status: try controller.derive(try profile(reference)))
    }

    public func show(_ reference: String) throws -> ProfileDetails {
        let m = try manager()
        let p = try m.profile(named: reference)
        let secrets = m.store.secrets
        let rows = p.secretReferences.map {
            ProfileDetails.SecretState(field: $0.field, name: $0.name, isSet: secrets.exists(p.id, name: $0.name))
        }
        let publicKey = p.protocol.model.publicKey(readingSecret: { try secrets.read(p.id, name: $0) })
        return ProfileDetails(profile: p, secrets: rows, publicKey: publicKey)
    }

    public func pauseOnDemand(_ reference: String, _ paused: Bool) throws -> OnDemandPauseAnswer {
        let p = try profile(reference)
        try controller.runtime.prepare()
        let changed = try pauses.set(p.id, paused: paused)
        return OnDemandPauseAnswer(name: p.name, id: p.id, enabled: p.onDemand.enabled, paused: paused, changed: changed)
    }
}

extension LocalService {
    var appUseCases: AppUseCases { AppUseCases(controller: controller) }

    public func apps(_ reference: String) throws -> AppsReport {
        let c = caller
        return try appUseCases.apps(profile(reference), onlyUID: access.policy.isAdmin(c) ? nil : c.uid)
    }

    /// Include mode: using the tunnel, the start right. Exclude mode: going
    /// around it (and around its kill switch), which is as much as taking it
    /// down: the stop right too.
    public func placeApp(_ reference: String, pid: Int32) throws -> AppPlacement {
        let p = try profile(reference)
        let c = caller
        if p.appRules?.mode == .exclude {
            let d = access.policy.decide(c, .stop, profile: p)
            guard d.allowed else { throw VPNError(.permissionDenied, d.reason) }
        }
        return try appUseCases.place(p, pid: pid, caller: c)
    }
}

extension Caller {
    /// The caller a uid and gid stand for, with names and groups from the
    /// system's databases.
    public static func fromSystem(uid: uid_t, gid: gid_t) -> Caller {
        let name = UserDatabase.userName(uid)
        return Caller(uid: uid, gid: gid, userName: name, groupNames: UserDatabase.groupNames(uid: uid, gid: gid, userName: name))
    }

    /// This process's own user.
    public static var current: Caller { fromSystem(uid: geteuid(), gid: getegid()) }
}
