import FoundationEssentials

/// fetchLastDisconnectError: NEVPNConnectionError names and numbers where one fits.
public struct ConnectionError: Codable, Equatable, Sendable {
    public var domain: String
    public var code: Int
    public var name: String
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        domain = "NEVPNConnectionErrorDomain"
        code = kind.rawValue
        name = kind.name
        self.message = message
    }

    /// The kind, for errors of NEVPNConnectionErrorDomain.
    public var kind: Kind? { domain == "NEVPNConnectionErrorDomain" ? Kind(rawValue: code) : nil }

    public enum Kind: Int, Sendable {
        case overslept = 1, noNetworkAvailable, unrecoverableNetworkChange, configurationFailed,
             serverAddressResolutionFailed, serverNotResponding, serverDead, authenticationFailed,
             clientCertificateInvalid, clientCertificateNotYetValid, clientCertificateExpired, pluginFailed,
             configurationNotFound, pluginDisabled, negotiationFailed, serverDisconnected,
             serverCertificateInvalid, serverCertificateNotYetValid, serverCertificateExpired,
             // vpnctl's own: a start needed an answer (a password, a code)
             // that nobody could give (no terminal, on-demand, a service).
             authenticationRequired

        public var name: String {
            switch self {
            case .overslept: return "overslept"
            case .noNetworkAvailable: return "noNetworkAvailable"
            case .unrecoverableNetworkChange: return "unrecoverableNetworkChange"
            case .configurationFailed: return "configurationFailed"
            case .serverAddressResolutionFailed: return "serverAddressResolutionFailed"
            case .serverNotResponding: return "serverNotResponding"
            case .serverDead: return "serverDead"
            case .authenticationFailed: return "authenticationFailed"
            case .clientCertificateInvalid: return "clientCertificateInvalid"
            case .clientCertificateNotYetValid: return "clientCertificateNotYetValid"
            case .clientCertificateExpired: return "clientCertificateExpired"
            case .pluginFailed: return "pluginFailed"
            case .configurationNotFound: return "configurationNotFound"
            case .pluginDisabled: return "pluginDisabled"
            case .negotiationFailed: return "negotiationFailed"
            case .serverDisconnected: return "serverDisconnected"
            case .serverCertificateInvalid: return "serverCertificateInvalid"
            case .serverCertificateNotYetValid: return "serverCertificateNotYetValid"
            case .serverCertificateExpired: return "serverCertificateExpired"
            case .authenticationRequired: return "authenticationRequired"
            }
        }
    }
}

/// NEProviderStopReason, recorded with each disconnect.
public enum StopReason: String, Codable, CaseIterable, Sendable {
    case userInitiated, providerFailed, noNetworkAvailable, unrecoverableNetworkChange, providerDisabled,
         configurationFailed, idleTimeout, configurationDisabled, configurationRemoved, connectionFailed
}

/// What the supervisor applied to the interface.
public struct AppliedSettings: Codable, Equatable, Sendable {
    public var addresses: [String] = []
    public var routes: [String] = []
    public var excludedRoutes: [String] = []
    public var mtu: Int? = nil
    public var dns: [String] = []
    /// enforceRoutes: the routing table that holds the tunnel's routes, and
    /// the prefixes that have a rule to it.
    public var enforcedTable: UInt32? = nil
    public var enforcedRoutes: [String] = []
    public init() {}
}

/// One record per profile id in the run directory, rewritten atomically on
/// every transition by the supervisor. It is a cached view: readers check it
/// against the live system (see `StatusDeriver`).
public struct RuntimeRecord: Codable, Equatable, Sendable {
    public var schemaVersion = 1
    public var id: UUID
    public var name: String
    public var status: VPNStatus
    public var supervisorPid: Int32?
    public var supervisorStartTime: UInt64?
    public var providerPid: Int32?
    public var providerStartTime: UInt64?
    public var interface: String?
    public var ifindex: Int32?
    /// When this session began: a reconnect starts a new one.
    public var connectedSince: Date?
    /// How many times the tunnel came back by itself since it was started.
    public var reconnects: Int?
    public var lastDisconnectError: ConnectionError?
    public var stopReason: StopReason?
    public var settings: AppliedSettings?
    /// Interface counters when the session connected, for "bytes this session".
    public var rxBytesAtConnect: UInt64?
    public var txBytesAtConnect: UInt64?
    /// The DNS given to the system resolver, and how: what a stop (or the
    /// clean-up after a dead supervisor) takes back.
    public var resolver: ResolverRecord?
    /// The kill switch's nftables table while it is in place (it outlives a
    /// failed tunnel: fail closed until `stop`).
    public var killSwitch: KillSwitchRecord?
    /// The app rules' marks, routing table and covered cgroups while in place.
    public var apps: AppRoutingRecord?
    /// Who asked for this tunnel: nil for a command (`start`, the agent on a
    /// user's behalf), or on-demand with the rule that fired.
    public var startedBy: StartOrigin?
    /// A persistent tunnel: a server that does not answer does not end it.
    public var persistent: Bool?
    /// While a persistent tunnel's server has not answered: what it waits
    /// for ("no handshake within 20 s from peer ... at ..."), cleared once connected.
    public var retrying: String?
    public var updatedAt: Date

    public init(id: UUID, name: String, status: VPNStatus) {
        self.id = id
        self.name = name
        self.status = status
        updatedAt = Date()
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schemaVersion, forKey: .schemaVersion)
        try c.encode(id.lowercasedString, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(supervisorPid, forKey: .supervisorPid)
        try c.encodeIfPresent(supervisorStartTime, forKey: .supervisorStartTime)
        try c.encodeIfPresent(providerPid, forKey: .providerPid)
        try c.encodeIfPresent(providerStartTime, forKey: .providerStartTime)
        try c.encodeIfPresent(interface, forKey: .interface)
        try c.encodeIfPresent(ifindex, forKey: .ifindex)
        try c.encodeIfPresent(connectedSince, forKey: .connectedSince)
        try c.encodeIfPresent(reconnects, forKey: .reconnects)
        try c.encodeIfPresent(lastDisconnectError, forKey: .lastDisconnectError)
        try c.encodeIfPresent(stopReason, forKey: .stopReason)
        try c.encodeIfPresent(settings, forKey: .settings)
        try c.encodeIfPresent(rxBytesAtConnect, forKey: .rxBytesAtConnect)
        try c.encodeIfPresent(txBytesAtConnect, forKey: .txBytesAtConnect)
        try c.encodeIfPresent(resolver, forKey: .resolver)
        try c.encodeIfPresent(killSwitch, forKey: .killSwitch)
        try c.encodeIfPresent(apps, forKey: .apps)
        try c.encodeIfPresent(startedBy, forKey: .startedBy)
        try c.encodeIfPresent(persistent, forKey: .persistent)
        try c.encodeIfPresent(retrying, forKey: .retrying)
        try c.encode(updatedAt, forKey: .updatedAt)
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion, id, name, status, supervisorPid, supervisorStartTime, providerPid, providerStartTime,
             interface, ifindex, connectedSince, reconnects, lastDisconnectError, stopReason, settings, rxBytesAtConnect,
             txBytesAtConnect, resolver, killSwitch, apps, startedBy, persistent, retrying, updatedAt
    }
}

/// A tunnel with no command behind it: started by on-demand, by the rule
/// numbered `rule` (1-based), for `reason` ("ethernet, search domain not corp.example").
public struct StartOrigin: Codable, Equatable, Sendable {
    public var by: String
    public var rule: Int
    public var reason: String

    public static let onDemand = "onDemand"

    public init(by: String = StartOrigin.onDemand, rule: Int, reason: String) {
        self.by = by
        self.rule = rule
        self.reason = reason
    }

    /// "on-demand rule 2: ethernet, search domain not corp.example".
    public var text: String { "on-demand rule \(rule): \(reason)" }
}

/// DNS handed to the system resolver for one tunnel.
public struct ResolverRecord: Codable, Equatable, Sendable {
    /// "systemd-resolved", "resolvconf" or "resolv.conf".
    public var backend: String
    public var servers: [String] = []
    public var searchDomains: [String] = []
    public var matchDomains: [String] = []
    /// The link (resolved) or the record name (resolvconf) it is filed under.
    public var interface: String?
    /// The file rewritten in place (the resolv.conf backend).
    public var path: String?
    /// The network namespace it was applied in; only there can it be undone.
    public var netns: String?
    /// What the backend could not do (split DNS on a plain resolv.conf).
    public var note: String?
    /// Why this backend was chosen (the facts that decided).
    public var reason: String?

    public init(backend: String) { self.backend = backend }
}

/// The kill switch's table, in the namespace it was put in.
public struct KillSwitchRecord: Codable, Equatable, Sendable {
    /// `inet <table>`, owned by vpnctl, one per profile.
    public var table: String
    public var netns: String?
    public init(table: String, netns: String?) {
        self.table = table
        self.netns = netns
    }
}

/// One line of a profile's event log.
public struct TransitionEvent: Encodable, Equatable, Sendable {
    public var time: Date
    public var id: String
    public var name: String
    public var status: String
    public var previous: String
    public var interface: String?
    public var error: ConnectionError?
    /// Why, in words, when the transition alone does not say (a reconnect).
    public var note: String? = nil
}
