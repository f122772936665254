import FoundationEssentials

/// A saved VPN configuration: the Linux counterpart of an NEVPNManager /
/// NETunnelProviderManager configuration.
public struct Profile: Encodable, Equatable, Sendable {
    /// Never changes once created; stop and runtime state are keyed by it.
    public var id: UUID
    public var name: String
    public var enabled: Bool
    /// Incremented by the store on every save. A save from an older revision
    /// fails with configurationStale.
    public var revision: Int
    public var `protocol`: ProtocolConfiguration
    public var onDemand: OnDemand
    public var policy: Policy
    /// The configuration profile (.mobileconfig) payload this profile was
    /// imported from, so that a re-import replaces it; nil for the others.
    public var origin: ProfileOrigin? = nil

    public init(id: UUID = UUID(), name: String, enabled: Bool = true, revision: Int = 0,
                protocol: ProtocolConfiguration, onDemand: OnDemand = OnDemand(), policy: Policy = Policy()) {
        self.id = id
        self.name = name
        self.enabled = enabled
        self.revision = revision
        self.protocol = `protocol`
        self.onDemand = onDemand
        self.policy = policy
    }

    enum CodingKeys: String, CodingKey {
        case id, name, enabled, revision, `protocol`, onDemand, policy, origin
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id.lowercasedString, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(enabled, forKey: .enabled)
        try c.encode(revision, forKey: .revision)
        try c.encode(`protocol`, forKey: .protocol)
        try c.encode(onDemand, forKey: .onDemand)
        try c.encode(policy, forKey: .policy)
        try c.encodeIfPresent(origin, forKey: .origin)
    }

    /// The secret names this profile refers to, with the field that refers to each.
    public var secretReferences: [(field: String, name: String)] { `protocol`.secretReferences }
}

/// Where an imported profile came from: a configuration profile's
/// PayloadIdentifier and the VPN payload's within it.
public struct ProfileOrigin: Encodable, Equatable, Sendable {
    public var profileIdentifier: String
    public var payloadIdentifier: String
    /// Made by `vpnctl apply`: the next apply updates or removes it. A
    /// profile imported by hand is never touched by apply.
    public var managedByApply: Bool

    public init(profileIdentifier: String, payloadIdentifier: String, managedByApply: Bool = false) {
        self.profileIdentifier = profileIdentifier
        self.payloadIdentifier = payloadIdentifier
        self.managedByApply = managedByApply
    }

    enum CodingKeys: String, CodingKey { case profileIdentifier, payloadIdentifier, managedByApply }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(profileIdentifier, forKey: .profileIdentifier)
        try c.encode(payloadIdentifier, forKey: .payloadIdentifier)
        if managedByApply { try c.encode(true, forKey: .managedByApply) }
    }
}

/// On-demand rules (NEOnDemandRule). Stored now; acted on by a later issue.
public struct OnDemand: Encodable, Equatable, Sendable {
    public var enabled: Bool
    public var rules: [OnDemandRule]

    public init(enabled: Bool = false, rules: [OnDemandRule] = []) {
        self.enabled = enabled
        self.rules = rules
    }

    enum CodingKeys: String, CodingKey { case enabled, rules }
}

public struct OnDemandRule: Encodable, Equatable, Sendable {
    public enum Action: String, Codable, Sendable {
        case connect, disconnect, evaluateConnection, ignore
    }
    public enum InterfaceType: String, Codable, Sendable {
        case any, ethernet, wifi, cellular
    }
    public var action: Action
    public var interfaceType: InterfaceType?
    public var dnsSearchDomains: [String]?
    public var probeURL: String?

    public init(action: Action, interfaceType: InterfaceType? = nil, dnsSearchDomains: [String]? = nil, probeURL: String? = nil) {
        self.action = action
        self.interfaceType = interfaceType
        self.dnsSearchDomains = dnsSearchDomains
        self.probeURL = probeURL
    }
}

/// Who may control the profile (the isVPNAllowed guard). Empty lists mean root only.
public struct Policy: Encodable, Equatable, Sendable {
    public var users: [String]
    public var groups: [String]

    public init(users: [String] = [], groups: [String] = []) {
        self.users = users
        self.groups = groups
    }

    enum CodingKeys: String, CodingKey { case users, groups }
}
