import FoundationEssentials

/// The protocol half of a profile, tagged by `type` in JSON.
public enum ProtocolConfiguration: Encodable, Equatable, Sendable {
    case wireguard(WireGuardConfiguration)
    case openvpn(OpenVPNConfiguration)
    case ikev2(IKEv2Configuration)
    case provider(ProviderConfiguration)

    public enum Kind: String, Codable, CaseIterable, Sendable {
        case wireguard, openvpn, ikev2, provider
    }

    public var kind: Kind {
        switch self {
        case .wireguard: return .wireguard
        case .openvpn: return .openvpn
        case .ikev2: return .ikev2
        case .provider: return .provider
        }
    }

    /// The configuration itself, for what every protocol answers alike.
    public var model: any ConfigurationModel {
        switch self {
        case .wireguard(let w): return w
        case .openvpn(let o): return o
        case .ikev2(let i): return i
        case .provider(let p): return p
        }
    }

    enum TypeKey: String, CodingKey { case type }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: TypeKey.self)
        try c.encode(kind.rawValue, forKey: .type)
        switch self {
        case .wireguard(let w): try w.encode(to: encoder)
        case .openvpn(let o): try o.encode(to: encoder)
        case .ikev2(let i): try i.encode(to: encoder)
        case .provider(let p): try p.encode(to: encoder)
        }
    }

    public var secretReferences: [(field: String, name: String)] {
        switch self {
        case .wireguard(let w):
            var refs: [(String, String)] = []
            if let k = w.privateKeySecret { refs.append(("privateKeySecret", k)) }
            for (i, p) in w.peers.enumerated() {
                if let s = p.presharedKeySecret { refs.append(("peers[\(i)].presharedKeySecret", s)) }
            }
            return refs
        case .openvpn(let o):
            return [("keySecret", o.keySecret), ("passwordSecret", o.passwordSecret),
                    ("tlsCryptSecret", o.tlsCryptSecret), ("tlsAuthSecret", o.tlsAuthSecret),
                    ("tlsCryptV2Secret", o.tlsCryptV2Secret)]
                .compactMap { f, v in v.map { (f, $0) } }
        case .ikev2(let i):
            return [("sharedSecretSecret", i.sharedSecretSecret), ("passwordSecret", i.passwordSecret),
                    ("identitySecret", i.identitySecret)]
                .compactMap { f, v in v.map { (f, $0) } }
        case .provider(let p):
            return p.secrets.sorted(by: { $0.key < $1.key }).map { ("secrets.\($0.key)", $0.value) }
        }
    }
}

/// A WireGuard tunnel carried by wireguard-go. Keys are base64 as in wg-quick;
/// the private key and preshared keys are secret names, never values.
public struct WireGuardConfiguration: Encodable, Equatable, Sendable {
    public var privateKeySecret: String?
    public var addresses: [String]
    public var dns: [String]
    public var mtu: Int?
    public var listenPort: Int?
    /// wg-quick's Table: "auto", "off", or a table number.
    public var table: String?
    public var fwmark: String?
    public var interfaceName: String?
    /// Prefixes that must not go through the tunnel even when the allowed IPs
    /// cover them (NEIPv4Settings.excludedRoutes); they keep the route they had.
    public var excludedRoutes: [String] = []
    public var peers: [WireGuardPeer]

    public init(privateKeySecret: String? = nil, addresses: [String] = [], dns: [String] = [], mtu: Int? = nil,
                listenPort: Int? = nil, table: String? = nil, fwmark: String? = nil, interfaceName: String? = nil,
                peers: [WireGuardPeer] = []) {
        self.privateKeySecret = privateKeySecret
        self.addresses = addresses
        self.dns = dns
        self.mtu = mtu
        self.listenPort = listenPort
        self.table = table
        self.fwmark = fwmark
        self.interfaceName = interfaceName
        self.peers = peers
    }

    enum CodingKeys: String, CodingKey {
        case privateKeySecret, addresses, dns, mtu, listenPort, table, fwmark, interfaceName, excludedRoutes, peers
    }

}

public struct WireGuardPeer: Encodable, Equatable, Sendable {
    public var publicKey: String
    public var presharedKeySecret: String?
    public var allowedIPs: [String]
    public var endpoint: String?
    public var persistentKeepalive: Int?

    public init(publicKey: String, presharedKeySecret: String? = nil, allowedIPs: [String] = [],
                endpoint: String? = nil, persistentKeepalive: Int? = nil) {
        self.publicKey = publicKey
        self.presharedKeySecret = presharedKeySecret
        self.allowedIPs = allowedIPs
        self.endpoint = endpoint
        self.persistentKeepalive = persistentKeepalive
    }

    enum CodingKeys: String, CodingKey {
        case publicKey, presharedKeySecret, allowedIPs, endpoint, persistentKeepalive
    }

}

/// An OpenVPN 2.6 client. The CAs are trust-anchor fingerprints, one per
/// certificate; keys and the password are secret names.
public struct OpenVPNConfiguration: Encodable, Equatable, Sendable {
    public struct Remote: Encodable, Equatable, Sendable {
        public var host: String
        public var port: Int
        public var proto: String
        public init(host: String, port: Int = 1194, proto: String = "udp") {
            self.host = host
            self.port = port
            self.proto = proto
        }
    }
    public var remotes: [Remote]
    /// The anchors openvpn trusts for this profile, and nothing else.
    public var caFingerprints: [String]
    public var certificate: String?
    public var keySecret: String?
    public var username: String?
    public var passwordSecret: String?
    public var tlsCryptSecret: String?
    public var tlsAuthSecret: String?
    public var tlsCryptV2Secret: String?
    /// `static-challenge "text" 0|1`: a one-time code asked for at every
    /// connect, sent with the password as openvpn does (SCRV1).
    public var staticChallenge: StaticChallenge?
    /// Further client directives, passed to openvpn as they were imported.
    public var options: [String]

    public struct StaticChallenge: Encodable, Equatable, Sendable {
        /// The words shown when the code is asked for.
        public var text: String
        /// Whether the code may be shown as it is typed (the directive's 1).
        public var echo: Bool
        public init(text: String, echo: Bool) {
            self.text = text
            self.echo = echo
        }
    }

    public init(remotes: [Remote] = [], caFingerprints: [String] = [], certificate: String? = nil, keySecret: String? = nil,
                username: String? = nil, passwordSecret: String? = nil, tlsCryptSecret: String? = nil,
                tlsAuthSecret: String? = nil, options: [String] = []) {
        self.remotes = remotes
        self.caFingerprints = caFingerprints
        self.certificate = certificate
        self.keySecret = keySecret
        self.username = username
        self.passwordSecret = passwordSecret
        self.tlsCryptSecret = tlsCryptSecret
        self.tlsAuthSecret = tlsAuthSecret
        self.options = options
    }

    enum CodingKeys: String, CodingKey {
        case remotes, caFingerprints, certificate, keySecret, username, passwordSecret, tlsCryptSecret, tlsAuthSecret,
             tlsCryptV2Secret, staticChallenge, options
    }

}

/// IKEv2 (NEVPNProtocolIKEv2), carried by strongSwan.
public struct IKEv2Configuration: Encodable, Equatable, Sendable {
    public enum AuthenticationMethod: String, Codable, Sendable {
        case none, sharedSecret, certificate
    }
    public var serverAddress: String
    public var remoteIdentifier: String?
    public var localIdentifier: String?
    public var authenticationMethod: AuthenticationMethod
    public var sharedSecretSecret: String?
    public var username: String?
    public var passwordSecret: String?
    public var identitySecret: String?
    public var caFingerprint: String?
    /// IKE and child (ESP) proposals in strongSwan's syntax
    /// ("aes256-sha256-modp2048"); nil: strongSwan's defaults.
    public var ikeProposals: [String]?
    public var childProposals: [String]?
    /// NEVPNIKEv2DeadPeerDetectionRate: none, low (30 min), medium (10 min), high (1 min).
    public var deadPeerDetectionRate: DeadPeerDetectionRate?
    public var disableMOBIKE: Bool?
    /// Perfect forward secrecy for the child SA (the IKE proposals' DH groups).
    public var enablePFS: Bool?
    public var lifetimeMinutes: Int?
    public var mtu: Int?
    /// Ask the server for a virtual IP (configuration attributes); default yes.
    public var useServerVirtualIP: Bool?
    /// The remote traffic selectors asked for (a split tunnel); nil: everything
    /// (0.0.0.0/0 and ::/0), narrowed by what the server offers.
    public var remoteTrafficSelectors: [String]?

    public enum DeadPeerDetectionRate: String, Codable, CaseIterable, Sendable {
        case none, low, medium, high
        /// Apple's intervals.
        public var seconds: Int {
            switch self {
            case .none: return 0
            case .low: return 1800
            case .medium: return 600
            case .high: return 60
            }
        }
    }

    public init(serverAddress: String, remoteIdentifier: String? = nil, localIdentifier: String? = nil,
                authenticationMethod: AuthenticationMethod = .none, sharedSecretSecret: String? = nil,
                username: String? = nil, passwordSecret: String? = nil, identitySecret: String? = nil,
                caFingerprint: String? = nil) {
        self.serverAddress = serverAddress
        self.remoteIdentifier = remoteIdentifier
        self.localIdentifier = localIdentifier
        self.authenticationMethod = authenticationMethod
        self.sharedSecretSecret = sharedSecretSecret
        self.username = username
        self.passwordSecret = passwordSecret
        self.identitySecret = identitySecret
        self.caFingerprint = caFingerprint
    }

    enum CodingKeys: String, CodingKey {
        case serverAddress, remoteIdentifier, localIdentifier, authenticationMethod, sharedSecretSecret,
             username, passwordSecret, identitySecret, caFingerprint, ikeProposals, childProposals,
             deadPeerDetectionRate, disableMOBIKE, enablePFS, lifetimeMinutes, mtu, useServerVirtualIP, remoteTrafficSelectors
    }

}

/// A packet-tunnel provider named by identifier (NETunnelProviderProtocol).
public struct ProviderConfiguration: Encodable, Equatable, Sendable {
    public var providerIdentifier: String
    public var providerConfiguration: [String: String]
    /// providerConfiguration keys whose values live in secrets: key -> secret name.
    public var secrets: [String: String]
    /// NETunnelProviderProtocol.serverAddress: handed to the plugin as it is.
    public var serverAddress: String?

    public init(providerIdentifier: String, providerConfiguration: [String: String] = [:], secrets: [String: String] = [:],
                serverAddress: String? = nil) {
        self.providerIdentifier = providerIdentifier
        self.providerConfiguration = providerConfiguration
        self.secrets = secrets
        self.serverAddress = serverAddress
    }

    enum CodingKeys: String, CodingKey { case providerIdentifier, providerConfiguration, secrets, serverAddress }

}
