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
    /// DNS for the tunnel's lifetime (NEDNSSettings), beside what the
    /// provider brings (WireGuard's dns, OpenVPN's pushed dhcp-options).
    public var dnsSettings: DNSSettings? = nil
    /// NEVPNProtocol's kill switch: everything through the tunnel or nothing
    /// (an nftables table of vpnctl's own), fail closed.
    public var includeAllNetworks = false
    /// With includeAllNetworks: the local subnets stay reachable outside the tunnel.
    public var excludeLocalNetworks = false
    /// Traffic to the tunnel's routes never leaves by another interface, even
    /// where the underlay has a more specific route.
    public var enforceRoutes = false
    /// A server that does not answer at start does not end the tunnel: it
    /// stays `connecting`, trying again with back-off, until `stop`
    /// (wg-quick's and `vpnctl@.service`'s expectation at boot).
    public var persistent = false
    /// Per-app VPN: only the matched programs use the tunnel, or the
    /// matched programs go around it (nil: every program, as routed).
    public var appRules: AppRules? = nil
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
        case id, name, enabled, revision, `protocol`, onDemand, policy, dnsSettings, includeAllNetworks, excludeLocalNetworks,
             enforceRoutes, persistent, appRules, origin
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
        // Written only when set, so that profiles without them read as before.
        try c.encodeIfPresent(dnsSettings, forKey: .dnsSettings)
        if includeAllNetworks { try c.encode(true, forKey: .includeAllNetworks) }
        if excludeLocalNetworks { try c.encode(true, forKey: .excludeLocalNetworks) }
        if enforceRoutes { try c.encode(true, forKey: .enforceRoutes) }
        if persistent { try c.encode(true, forKey: .persistent) }
        try c.encodeIfPresent(appRules, forKey: .appRules)
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

/// On-demand rules (NEOnDemandRule), run by the agent (`OnDemandEvaluator`):
/// the first rule whose conditions all match decides.
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
    /// SSIDMatch: the Wi-Fi network's name is one of these.
    public var ssids: [String]?
    /// DNSDomainMatch: a search domain of the system resolver matches one (`*.` wildcards).
    public var dnsSearchDomains: [String]?
    /// DNSServerAddressMatch: a server of the system resolver matches one (`*` wildcards).
    public var dnsServerAddresses: [String]?
    public var probeURL: String?

    public init(action: Action, interfaceType: InterfaceType? = nil, ssids: [String]? = nil, dnsSearchDomains: [String]? = nil,
                dnsServerAddresses: [String]? = nil, probeURL: String? = nil) {
        self.action = action
        self.interfaceType = interfaceType
        self.ssids = ssids
        self.dnsSearchDomains = dnsSearchDomains
        self.dnsServerAddresses = dnsServerAddresses
        self.probeURL = probeURL
    }

    /// The rule in words, in the reader's language: "disconnect if search
    /// domain corp.example", "ignore (always)" (the action and the
    /// interface type are the profile's keywords).
    public var summary: String {
        var c: [String] = []
        if let t = interfaceType { c.append(t == .any ? L("any interface") : t.rawValue) }
        if let s = ssids { c.append(L("SSID \(s.joined(separator: "/"))")) }
        if let d = dnsSearchDomains { c.append(L("search domain \(d.joined(separator: "/"))")) }
        if let a = dnsServerAddresses { c.append(L("DNS server \(a.joined(separator: "/"))")) }
        if let u = probeURL { c.append(L("probe \(u) answers")) }
        return c.isEmpty ? L("\(action.rawValue) (always)") : L("\(action.rawValue) if \(c.joined(separator: L(", ")))")
    }

    /// Whether the rule has any condition (a rule without one always matches).
    public var hasConditions: Bool {
        interfaceType != nil || ssids != nil || dnsSearchDomains != nil || dnsServerAddresses != nil || probeURL != nil
    }
}

/// Who may control the profile (the isVPNAllowed guard), enforced by the
/// agent (`AccessPolicy`). Empty lists mean root and admins only.
public struct Policy: Encodable, Equatable, Sendable {
    public var users: [String]
    public var groups: [String]
    /// What the named users and groups may do; nil (absent) means every
    /// tunnel action (`PolicyAction.tunnelActions`).
    public var actions: [PolicyAction]?

    public init(users: [String] = [], groups: [String] = [], actions: [PolicyAction]? = nil) {
        self.users = users
        self.groups = groups
        self.actions = actions
    }

    /// The actions the named users and groups may take.
    public var allowedActions: [PolicyAction] { actions ?? PolicyAction.tunnelActions }

    enum CodingKeys: String, CodingKey { case users, groups, actions }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(users, forKey: .users)
        try c.encode(groups, forKey: .groups)
        // Absent stays absent, so stores written before `actions` existed read back the same.
        if let actions { try c.encode(actions.map(\.rawValue), forKey: .actions) }
    }
}

/// What a caller asks to do. The tunnel actions may be granted by a
/// profile's policy; store changes stay with root and admins.
public enum PolicyAction: String, CaseIterable, Codable, Sendable {
    case start, stop, toggle, status, stats, verify
    case `import`, edit, remove, enable, disable, secret, trust

    /// The actions a policy may grant.
    public static let tunnelActions: [PolicyAction] = [.start, .stop, .toggle, .status, .stats, .verify]

    public var isTunnelAction: Bool { PolicyAction.tunnelActions.contains(self) }
}

/// The tunnel's DNS (NEDNSSettings): servers, search domains, and match
/// domains (split DNS: only names under them go to the tunnel's servers).
public struct DNSSettings: Encodable, Equatable, Sendable {
    public var servers: [String]
    public var searchDomains: [String]
    public var matchDomains: [String]

    public init(servers: [String] = [], searchDomains: [String] = [], matchDomains: [String] = []) {
        self.servers = servers
        self.searchDomains = searchDomains
        self.matchDomains = matchDomains
    }

    enum CodingKeys: String, CodingKey { case servers, searchDomains, matchDomains }

    public var isEmpty: Bool { servers.isEmpty && searchDomains.isEmpty && matchDomains.isEmpty }
}
