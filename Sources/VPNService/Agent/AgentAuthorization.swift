#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// Where the agent keeps its state and who administers it.
public struct AgentSettings {
    public var configDirectory: String
    public var runDirectory: String
    public var adminGroup: String

    public init(configDirectory: String, runDirectory: String, adminGroup: String) {
        self.configDirectory = configDirectory
        self.runDirectory = runDirectory
        self.adminGroup = adminGroup
    }

    public var policy: AccessPolicy { AccessPolicy(adminGroup: adminGroup) }
    public var socketPath: String { AgentSettings.socketPath(runDirectory: runDirectory) }

    public static func socketPath(runDirectory: String) -> String { runDirectory + "/agent.sock" }
}

/// What the agent decides about a call before it runs it.
public enum AgentAuthorization {
    /// A call the policy refuses: the error the client reads, in its
    /// language, and the decision, which the agent logs in English.
    public struct Denial: Error {
        public let error: VPNError
        public let decision: AccessDecision
    }

    /// An authorized call: its profile named by UUID (so that a rename
    /// meanwhile cannot point it at another profile), the decision, and
    /// the access the service runs it with.
    public struct Grant {
        public let call: ServiceCall
        public let decision: AccessDecision?
        public let access: ServiceAccess
        /// The profile the call names, as read for the decision.
        public let profile: Profile?
    }

    /// Authorizes `call` for the caller, or throws the error to send (a
    /// `Denial` when the policy refuses). A profile the caller may not see
    /// reads as absent, for every call (`can` too): its name, its policy and
    /// names like it are never in a reply.
    public static func authorize(_ call: ServiceCall, caller: Caller, settings: AgentSettings) throws -> Grant {
        let policy = settings.policy
        var resolved = call
        var decision: AccessDecision?
        var profileID: UUID?
        var named: Profile?
        if let reference = call.profile {
            let profile = try visibleProfile(reference, caller: caller, settings: settings)
            resolved = call.naming(profile.id.lowercasedString)
            profileID = profile.id
            named = profile
            // list and can decide nothing on the caller's behalf: can answers
            // "denied" itself, for a profile the caller may see.
            if let action = call.action {
                let d = policy.decide(caller, action, profile: profile)
                guard d.allowed else { throw Denial(error: policy.denial(d, action: action, profile: profile), decision: d) }
                decision = d
            }
        }
        return Grant(call: resolved, decision: decision, access: access(for: call, caller: caller, settings: settings, profileID: profileID),
                     profile: named)
    }

    /// A grant decided outside the profile's policy (by polkit, for the
    /// D-Bus service): `call` on `profile` alone, with no probe off the tunnel.
    public static func grant(_ call: ServiceCall, profile: Profile, caller: Caller, settings: AgentSettings) -> Grant {
        let id = profile.id
        let access = ServiceAccess(caller: caller, policy: settings.policy, visible: { $0.id == id }, mayProbeOffTunnel: false)
        return Grant(call: call.naming(id.lowercasedString), decision: nil, access: access, profile: profile)
    }

    /// What the service may show and do for the caller during the call.
    static func access(for call: ServiceCall, caller: Caller, settings: AgentSettings, profileID: UUID?) -> ServiceAccess {
        let policy = settings.policy
        var access = ServiceAccess(caller: caller, policy: policy, mayProbeOffTunnel: policy.mayProbeOffTunnel(caller))
        if !policy.isAdmin(caller) {
            if case .stop = call { access.visible = { policy.decide(caller, .stop, profile: $0).allowed } }
            else { access.visible = { policy.canSee(caller, $0) } }
        }
        if !caller.isRoot, call.streams, let action = call.action {
            // Decided again before each report: an administrator too may stop being one.
            let recheck = AccessRecheck(caller: caller, settings: settings, action: action, profileID: profileID)
            access.visible = { recheck.canSee($0) }
            access.recheck = { recheck.check() }
        }
        return access
    }

    /// The profile `reference` names among those the caller may see (all,
    /// for root and the admin group); otherwise "no profile named", with
    /// suggestions from those alone, and no advice to import one.
    public static func visibleProfile(_ reference: String, caller: Caller, settings: AgentSettings) throws -> Profile {
        let policy = settings.policy
        let manager = ProfileManager(store: PreferencesStore(directory: settings.configDirectory))
        try manager.load()
        guard !policy.isAdmin(caller) else { return try manager.profile(named: reference) }
        manager.restrict { policy.canSee(caller, $0) }
        do { return try manager.profile(named: reference) } catch let e as VPNError where e.remedy == .importFirst {
            throw VPNError(e.code, e.message, hint: L("no profile's policy names you or a group of yours; ask root or a member of group '\(settings.adminGroup)'"))
        }
    }

    /// Makes this process speak the request's language (its catalog read
    /// beside this binary; `language` is one of Localization.languages,
    /// never a path), or English for none and for nil (between requests).
    /// Messages are made in the language set when they are thrown, so the
    /// agent sets it before it reads a request's profile, and back after.
    public static func speak(_ request: ServiceRequest?) {
        guard let language = request?.language else {
            Localization.configure(environment: [:], english: true)
            return
        }
        Localization.configure(environment: ["LANG": "C.UTF-8", "LANGUAGE": language])
    }
}
