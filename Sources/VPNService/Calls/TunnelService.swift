import FoundationEssentials
import VPNCore

/// The service's use cases, as every front end calls them: the command
/// line in-process for root (`LocalService`), the agent's client for
/// everyone else, the agent's own workers, and later D-Bus. Each returns a
/// typed result or throws a VPNError; what happens on the way is reported
/// to `events`.
public protocol TunnelService {
    func list() throws -> ProfileList
    func can(_ action: PolicyAction, _ profile: String) throws -> CanAnswer
    func isConnected(_ profile: String) throws -> ConnectedAnswer
    func status(_ profile: String?) throws -> StatusReport
    /// Reports `watching`, then each transition, until `events` wants no more.
    func watch(_ profile: String?, _ events: ServiceEvents) throws
    func start(_ profile: String, wait: Bool, timeout: Int, changes: Bool, persist: Bool, _ events: ServiceEvents) throws -> TunnelReport
    func stop(_ profile: String, wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport
    func stopAll(wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> StopAllReport
    func toggle(_ profile: String, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport
    func verify(_ profile: String, probe: String, dns: String?, timeout: Int) throws -> VerifyAnswer
    func stats(_ profile: String) throws -> StatsAnswer
    func logs(_ profile: String, since: Date?) throws -> LogsAnswer
    /// Reports the lines written since `since`, then each new one, until `events` wants no more.
    func followLogs(_ profile: String, since: Date?, _ events: ServiceEvents) throws
    func show(_ profile: String) throws -> ProfileDetails
    /// Pauses (true) or resumes (false) the profile's on-demand rules.
    func pauseOnDemand(_ profile: String, _ paused: Bool) throws -> OnDemandPauseAnswer
    /// What the profile's app rules cover now.
    func apps(_ profile: String) throws -> AppsReport
    /// Puts process `pid` (the caller's own) under the profile's app rules.
    func placeApp(_ profile: String, pid: Int32) throws -> AppPlacement
}

/// Who the service acts for, and what that lets it see.
public struct ServiceAccess {
    /// nil: the user of this process (read when first needed).
    public var caller: Caller?
    public var policy: AccessPolicy
    /// The profiles the caller may name; nil for every one (root, the admin
    /// group, a user on a store of their own).
    public var visible: ((Profile) -> Bool)?
    /// For a stream: asked before each report, with the policy and the
    /// caller's groups read again; the error that ends the stream (nil: go on).
    public var recheck: (() -> VPNError?)?
    /// Whether verify may probe an address that does not route through the tunnel.
    public var mayProbeOffTunnel: Bool

    public init(caller: Caller?, policy: AccessPolicy, visible: ((Profile) -> Bool)? = nil, recheck: (() -> VPNError?)? = nil,
                mayProbeOffTunnel: Bool = true) {
        self.caller = caller
        self.policy = policy
        self.visible = visible
        self.recheck = recheck
        self.mayProbeOffTunnel = mayProbeOffTunnel
    }

    /// Everything, for this process's own user.
    public static var unrestricted: ServiceAccess { ServiceAccess(caller: nil, policy: AccessPolicy()) }
}
