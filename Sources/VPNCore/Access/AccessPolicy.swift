/// Who is asking: a process identified by the kernel (SO_PEERCRED), with
/// its names and groups read from the system's user database, never from
/// anything the caller sent.
public struct Caller: Equatable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    /// nil when the uid has no passwd entry.
    public var userName: String?
    /// The primary group and every supplementary group, by name.
    public var groupNames: [String]

    public init(uid: UInt32, gid: UInt32, userName: String?, groupNames: [String]) {
        self.uid = uid
        self.gid = gid
        self.userName = userName
        self.groupNames = groupNames
    }

    public var isRoot: Bool { uid == 0 }
}

/// The answer to "may this caller do this": allowed or not, and why. The
/// why is kept as data and worded on demand: in English for the agent's
/// log, in the reader's language for them (`vpnctl can`, a refusal).
public struct AccessDecision: Equatable, Sendable {
    public enum Why: Equatable, Sendable {
        case root
        case admin(Caller, group: String)
        /// A store change by someone outside the admin group.
        case changesStore(PolicyAction, adminGroup: String)
        case needsProfile(PolicyAction)
        /// The profile's policy names neither the caller nor a group of theirs.
        case notNamed(Caller, PolicyAction, profile: String, policy: Policy, adminGroup: String)
        /// The policy names the caller but does not grant the action.
        case notGranted(Caller, PolicyAction, profile: String, granted: [PolicyAction])
        /// Named in the policy: by user name (`group` nil) or through a group.
        case named(Caller, PolicyAction, profile: String, group: String?)
    }

    public let allowed: Bool
    public let why: Why

    public init(allowed: Bool, why: Why) {
        self.allowed = allowed
        self.why = why
    }

    /// Why, in the language messages are made in now (in the agent, the request's).
    public var reason: String { text(in: Localization.catalog) }

    /// Why, in English: what the agent logs whatever the client speaks.
    public var englishReason: String { text(in: nil) }

    /// Why, worded with `catalog` (nil: English).
    public func text(in catalog: MessageCatalog?) -> String {
        // The marked messages, translated with `catalog` rather than the process's language.
        func L(_ text: LocalizedText) -> String { Localization.translate(text, in: catalog) }
        func who(_ c: Caller) -> String { c.userName.map { L("user '\($0)'") } ?? L("uid \(c.uid)") }
        func what(_ action: PolicyAction, _ profile: String) -> String {
            switch action {
            case .start: return L("start '\(profile)'")
            case .stop: return L("stop '\(profile)'")
            case .toggle: return L("toggle '\(profile)'")
            case .status: return L("see the status of '\(profile)'")
            case .stats: return L("see the counters of '\(profile)'")
            case .verify: return L("verify '\(profile)'")
            default: return "\(action.rawValue) '\(profile)'"
            }
        }
        switch why {
        case .root:
            return L("root may do everything")
        case .admin(let c, let group):
            return L("\(who(c)) is in the admin group '\(group)'")
        case .changesStore(let action, let group):
            return L("\(action.rawValue) changes the store: only root and members of group '\(group)' may")
        case .needsProfile(let action):
            return L("\(action.rawValue) needs a profile")
        case .notNamed(let c, let action, let profile, let policy, let group):
            let allows: String
            if policy.users.isEmpty && policy.groups.isEmpty {
                allows = L("its policy names nobody (root and group '\(group)' only)")
            } else {
                var parts: [String] = []
                if !policy.users.isEmpty { parts.append(L("users \(policy.users.joined(separator: ", "))")) }
                if !policy.groups.isEmpty { parts.append(L("groups \(policy.groups.joined(separator: ", "))")) }
                allows = L("its policy allows \(parts.joined(separator: "; "))")
            }
            return L("\(who(c)) may not \(what(action, profile)): \(allows)")
        case .notGranted(let c, let action, let profile, let granted):
            return L("\(who(c)) may not \(what(action, profile)): its policy grants only \(granted.map(\.rawValue).joined(separator: ", "))")
        case .named(let c, let action, let profile, nil):
            return L("\(who(c)) may \(what(action, profile)): \(who(c)) is named in its policy")
        case .named(let c, let action, let profile, let group?):
            return L("\(who(c)) may \(what(action, profile)): \(who(c)) is in group '\(group)', named in its policy")
        }
    }
}

/// The isVPNAllowed guard: root and members of the admin group may do
/// everything; store changes stay with them; everybody else may take the
/// tunnel actions a profile's policy grants them, on that profile only.
public struct AccessPolicy: Sendable {
    /// The group whose members administer vpnctl (`vpnctl` by default).
    public var adminGroup: String

    public static let defaultAdminGroup = "vpnctl"

    public init(adminGroup: String = AccessPolicy.defaultAdminGroup) {
        self.adminGroup = adminGroup
    }

    public func isAdmin(_ caller: Caller) -> Bool {
        caller.isRoot || caller.groupNames.contains(adminGroup)
    }

    /// Decides `action` on `profile` (nil for an action on no one profile,
    /// such as an import).
    public func decide(_ caller: Caller, _ action: PolicyAction, profile: Profile?) -> AccessDecision {
        if caller.isRoot { return AccessDecision(allowed: true, why: .root) }
        if isAdmin(caller) { return AccessDecision(allowed: true, why: .admin(caller, group: adminGroup)) }
        guard action.isTunnelAction else {
            return AccessDecision(allowed: false, why: .changesStore(action, adminGroup: adminGroup))
        }
        guard let profile else { return AccessDecision(allowed: false, why: .needsProfile(action)) }
        let policy = profile.policy
        let byUser = caller.userName.map { policy.users.contains($0) } ?? false
        let byGroup = caller.groupNames.first { policy.groups.contains($0) }
        guard byUser || byGroup != nil else {
            return AccessDecision(allowed: false, why: .notNamed(caller, action, profile: profile.name, policy: policy, adminGroup: adminGroup))
        }
        guard policy.allowedActions.contains(action) else {
            return AccessDecision(allowed: false, why: .notGranted(caller, action, profile: profile.name, granted: policy.allowedActions))
        }
        return AccessDecision(allowed: true, why: .named(caller, action, profile: profile.name, group: byUser ? nil : byGroup))
    }

    /// Whether `verify` may send the caller's probe when the route to it does
    /// not use the tunnel. Root's agent would otherwise send a user's probe
    /// from the machine's own network: only administrators may; a user's
    /// probes go through their tunnel or not at all.
    public func mayProbeOffTunnel(_ caller: Caller) -> Bool { isAdmin(caller) }

    /// Whether `status` and `list` show the profile to the caller: any
    /// action granted to them on it.
    public func canSee(_ caller: Caller, _ profile: Profile) -> Bool {
        PolicyAction.tunnelActions.contains { decide(caller, $0, profile: profile).allowed }
    }

    /// The error a denied request ends in (exit 11): the profile, the
    /// action, why, and who may grant it, in the language messages are made
    /// in now (the agent logs `decision.englishReason` instead).
    public func denial(_ decision: AccessDecision, action: PolicyAction, profile: Profile?) -> VPNError {
        VPNError(.permissionDenied, decision.reason,
                 hint: profile == nil ? L("only root and members of group '\(adminGroup)' may") : nil,
                 remedy: profile.map { .grant(profile: $0.name, adminGroup: adminGroup) })
    }
}
