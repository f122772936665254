#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// A stream the agent serves (status --watch, stats --watch) is decided
/// again before each report, not once when it began: the policy is read
/// again from the store and the caller's groups from the system, so that
/// revoking a user (from the policy, from a group, from the admin group)
/// ends what they were watching.
final class AccessRecheck {
    let uid: UInt32
    let gid: UInt32
    let settings: AgentSettings
    let action: PolicyAction
    /// The profile the stream follows (nil: every profile the caller may see).
    let profileID: UUID?
    /// Its name when last read (a rename meanwhile is followed).
    private(set) var profileName: String
    /// Who the caller is now: `refresh` reads it again.
    private(set) var caller: Caller
    /// How a caller is read from the system; a test's fake.
    let lookUp: (UInt32, UInt32) -> Caller

    init(caller: Caller, settings: AgentSettings, action: PolicyAction, profileID: UUID?,
         lookUp: @escaping (UInt32, UInt32) -> Caller = Caller.fromSystem) {
        uid = caller.uid
        gid = caller.gid
        self.caller = caller
        self.settings = settings
        self.action = action
        self.profileID = profileID
        profileName = profileID?.lowercasedString ?? ""
        self.lookUp = lookUp
    }

    /// Whether the stream of every profile shows `profile`, for the caller
    /// as the last `check` read them.
    func canSee(_ profile: Profile) -> Bool { settings.policy.canSee(caller, profile) }

    /// Reads the caller and (for a stream of one profile) the policy again;
    /// the error that ends the stream, or nil. Fails closed: a store that
    /// cannot be read ends it too.
    func check() -> VPNError? {
        caller = lookUp(uid, gid)
        guard let profileID else { return nil }
        let policy = settings.policy
        let profiles: [Profile]
        do { profiles = try PreferencesStore(directory: settings.configDirectory).load() } catch {
            return VPNError.from(error)
        }
        guard let profile = profiles.first(where: { $0.id == profileID }) else {
            return VPNError(.configurationUnknown, L("'\(profileName)' was removed; the stream of it ends"))
        }
        profileName = profile.name
        let decision = policy.decide(caller, action, profile: profile)
        if decision.allowed { return nil }
        // A profile they may no longer see at all is not described to them.
        guard policy.canSee(caller, profile) else {
            return VPNError(.permissionDenied, L("the stream of '\(profileName)' ends: you may no longer see it"),
                            hint: L("root or a member of group '\(settings.adminGroup)' can grant it in the profile's policy"))
        }
        return VPNError(.permissionDenied, L("the stream of '\(profileName)' ends: \(decision.reason)"),
                        remedy: .grant(profile: profile.name, adminGroup: settings.adminGroup))
    }
}
