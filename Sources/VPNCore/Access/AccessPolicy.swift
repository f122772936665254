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

    /// "user 'alice'", or "uid 1234" for a uid with no name.
    public var display: String { userName.map { "user '\($0)'" } ?? "uid \(uid)" }
}

/// The answer to "may this caller do this": allowed or not, and why, in
/// words fit for a log line and for `vpnctl can`.
public struct AccessDecision: Equatable, Sendable {
    public let allowed: Bool
    public let reason: String

    public init(allowed: Bool, reason: String) {
        self.allowed = allowed
        self.reason = reason
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
        if caller.isRoot { return AccessDecision(allowed: true, reason: "root may do everything") }
        if isAdmin(caller) {
            return AccessDecision(allowed: true, reason: "\(caller.display) is in the admin group '\(adminGroup)'")
        }
        guard action.isTunnelAction else {
            return AccessDecision(allowed: false, reason: "\(action.rawValue) changes the store: only root and members of group '\(adminGroup)' may")
        }
        guard let profile else {
            return AccessDecision(allowed: false, reason: "\(action.rawValue) needs a profile")
        }
        let policy = profile.policy
        let byUser = caller.userName.map { policy.users.contains($0) } ?? false
        let byGroup = caller.groupNames.first { policy.groups.contains($0) }
        let what = "\(action.phrase) '\(profile.name)'"
        guard byUser || byGroup != nil else {
            return AccessDecision(allowed: false, reason: "\(caller.display) may not \(what): \(describe(policy))")
        }
        guard policy.allowedActions.contains(action) else {
            return AccessDecision(allowed: false, reason: "\(caller.display) may not \(what): its policy grants only "
                                  + policy.allowedActions.map(\.rawValue).joined(separator: ", "))
        }
        let via = byUser ? "is named in its policy" : "is in group '\(byGroup!)', named in its policy"
        return AccessDecision(allowed: true, reason: "\(caller.display) may \(what): \(caller.display) \(via)")
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
    /// action, why, and who may grant it.
    public func denial(_ decision: AccessDecision, action: PolicyAction, profile: Profile?) -> VPNError {
        VPNError(.permissionDenied, decision.reason,
                 hint: profile == nil ? "only root and members of group '\(adminGroup)' may" : nil,
                 remedy: profile.map { .grant(profile: $0.name, adminGroup: adminGroup) })
    }

    func describe(_ policy: Policy) -> String {
        if policy.users.isEmpty && policy.groups.isEmpty {
            return "its policy names nobody (root and group '\(adminGroup)' only)"
        }
        var parts: [String] = []
        if !policy.users.isEmpty { parts.append("users " + policy.users.joined(separator: ", ")) }
        if !policy.groups.isEmpty { parts.append("groups " + policy.groups.joined(separator: ", ")) }
        return "its policy allows " + parts.joined(separator: "; ")
    }
}
