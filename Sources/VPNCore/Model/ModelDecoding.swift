import FoundationEssentials

// Decoding of vpnctl's own files from `JSONValue`. Absent optional fields take
// their defaults, so a hand-written profile can leave them out; a present
// field of the wrong type is an error naming its path.

extension Preferences {
    public init(json r: JSONReader) throws {
        guard let version = try r.int("schemaVersion") else { throw r.problem("schemaVersion", "missing") }
        schemaVersion = version
        profiles = try r.optional("profiles")?.array().map(Profile.init(json:)) ?? []
    }
}

extension Profile {
    public init(json r: JSONReader) throws {
        id = try r.required("id").uuid()
        name = try r.required("name").string()
        enabled = try r.bool("enabled") ?? true
        revision = try r.int("revision") ?? 0
        `protocol` = try ProtocolConfiguration(json: r.required("protocol"))
        onDemand = try r.optional("onDemand").map(OnDemand.init(json:)) ?? OnDemand()
        policy = try r.optional("policy").map(Policy.init(json:)) ?? Policy()
        dnsSettings = try r.optional("dnsSettings").map(DNSSettings.init(json:))
        includeAllNetworks = try r.bool("includeAllNetworks") ?? false
        excludeLocalNetworks = try r.bool("excludeLocalNetworks") ?? false
        enforceRoutes = try r.bool("enforceRoutes") ?? false
        persistent = try r.bool("persistent") ?? false
        appRules = try r.optional("appRules").map(AppRules.init(json:))
        origin = try r.optional("origin").map(ProfileOrigin.init(json:))
    }

    /// Parses one profile's JSON text (as `vpnctl edit` writes it).
    public static func parse(_ bytes: [UInt8]) throws -> Profile {
        try parseStrictly(bytes).profile
    }

    /// Parses one profile's JSON text and names every member the decoder
    /// does not know (a misspelt key would otherwise be dropped on save).
    public static func parseStrictly(_ bytes: [UInt8]) throws -> (profile: Profile, unknownKeys: [KeyTracker.UnknownKey]) {
        let tracker = KeyTracker()
        let profile = try Profile(json: JSONReader(parsing: bytes, tracker: tracker))
        return (profile, tracker.unknownKeys())
    }
}

extension DNSSettings {
    init(json r: JSONReader) throws {
        servers = try r.strings("servers")
        searchDomains = try r.strings("searchDomains")
        matchDomains = try r.strings("matchDomains")
    }
}

extension ProfileOrigin {
    init(json r: JSONReader) throws {
        guard let profile = try r.string("profileIdentifier") else { throw r.problem("profileIdentifier", "missing") }
        guard let payload = try r.string("payloadIdentifier") else { throw r.problem("payloadIdentifier", "missing") }
        self.init(profileIdentifier: profile, payloadIdentifier: payload, managedByApply: try r.bool("managedByApply") ?? false)
    }
}

extension OnDemand {
    init(json r: JSONReader) throws {
        enabled = try r.bool("enabled") ?? false
        rules = try r.optional("rules")?.array().map(OnDemandRule.init(json:)) ?? []
    }
}

extension OnDemandRule {
    init(json r: JSONReader) throws {
        action = try r.required("action").oneOf(Action.self, [.connect, .disconnect, .evaluateConnection, .ignore])
        interfaceType = try r.optional("interfaceType")?.oneOf(InterfaceType.self, [.any, .ethernet, .wifi, .cellular])
        ssids = try r.optional("ssids")?.stringArray()
        dnsSearchDomains = try r.optional("dnsSearchDomains")?.stringArray()
        dnsServerAddresses = try r.optional("dnsServerAddresses")?.stringArray()
        probeURL = try r.string("probeURL")
    }
}

extension Policy {
    init(json r: JSONReader) throws {
        users = try r.strings("users")
        groups = try r.strings("groups")
        actions = try r.optional("actions")?.array().map { item in
            let a = try item.oneOf(PolicyAction.self, PolicyAction.tunnelActions)
            // Store changes are never granted by a policy: only root and admins make them.
            guard a.isTunnelAction else { throw item.problem(nil, "\(a.rawValue.quotedForMessage) is not one of \(PolicyAction.tunnelActions.map(\.rawValue).joined(separator: ", "))") }
            return a
        }
    }
}

extension ProtocolConfiguration {
    init(json r: JSONReader) throws {
        switch try r.required("type").oneOf(Kind.self, Kind.allCases) {
        case .wireguard: self = .wireguard(try WireGuardConfiguration(json: r))
        case .openvpn: self = .openvpn(try OpenVPNConfiguration(json: r))
        case .ikev2: self = .ikev2(try IKEv2Configuration(json: r))
        case .provider: self = .provider(try ProviderConfiguration(json: r))
        }
    }
}

extension WireGuardConfiguration {
    init(json r: JSONReader) throws {
        privateKeySecret = try r.string("privateKeySecret")
        addresses = try r.strings("addresses")
        dns = try r.strings("dns")
        mtu = try r.int("mtu")
        listenPort = try r.int("listenPort")
        table = try r.string("table")
        fwmark = try r.string("fwmark")
        interfaceName = try r.string("interfaceName")
        excludedRoutes = try r.strings("excludedRoutes")
        peers = try r.optional("peers")?.array().map(WireGuardPeer.init(json:)) ?? []
    }
}

extension WireGuardPeer {
    init(json r: JSONReader) throws {
        publicKey = try r.string("publicKey") ?? ""
        presharedKeySecret = try r.string("presharedKeySecret")
        allowedIPs = try r.strings("allowedIPs")
        endpoint = try r.string("endpoint")
        persistentKeepalive = try r.int("persistentKeepalive")
    }
}

extension OpenVPNConfiguration {
    init(json r: JSONReader) throws {
        remotes = try r.optional("remotes")?.array().map { rr in
            Remote(host: try rr.string("host") ?? "", port: try rr.int("port") ?? 1194, proto: try rr.string("proto") ?? "udp")
        } ?? []
        // Stores written before each CA had an anchor of its own name one.
        if let list = try r.optional("caFingerprints") {
            if try r.optional("caFingerprint") != nil {
                throw r.problem("caFingerprint", "replaced by caFingerprints; keep only caFingerprints")
            }
            caFingerprints = try list.stringArray()
        } else {
            caFingerprints = try r.string("caFingerprint").map { [$0] } ?? []
        }
        certificate = try r.string("certificate")
        keySecret = try r.string("keySecret")
        username = try r.string("username")
        passwordSecret = try r.string("passwordSecret")
        tlsCryptSecret = try r.string("tlsCryptSecret")
        tlsAuthSecret = try r.string("tlsAuthSecret")
        tlsCryptV2Secret = try r.string("tlsCryptV2Secret")
        staticChallenge = try r.optional("staticChallenge").map { c in
            StaticChallenge(text: try c.string("text") ?? "", echo: try c.bool("echo") ?? false)
        }
        options = try r.strings("options")
    }
}

extension IKEv2Configuration {
    init(json r: JSONReader) throws {
        serverAddress = try r.string("serverAddress") ?? ""
        remoteIdentifier = try r.string("remoteIdentifier")
        localIdentifier = try r.string("localIdentifier")
        authenticationMethod = try r.optional("authenticationMethod")?
            .oneOf(AuthenticationMethod.self, [.none, .sharedSecret, .certificate]) ?? .none
        sharedSecretSecret = try r.string("sharedSecretSecret")
        username = try r.string("username")
        passwordSecret = try r.string("passwordSecret")
        identitySecret = try r.string("identitySecret")
        caFingerprint = try r.string("caFingerprint")
        ikeProposals = try r.optional("ikeProposals")?.stringArray()
        childProposals = try r.optional("childProposals")?.stringArray()
        deadPeerDetectionRate = try r.optional("deadPeerDetectionRate")?
            .oneOf(DeadPeerDetectionRate.self, DeadPeerDetectionRate.allCases)
        disableMOBIKE = try r.bool("disableMOBIKE")
        enablePFS = try r.bool("enablePFS")
        lifetimeMinutes = try r.int("lifetimeMinutes")
        mtu = try r.int("mtu")
        useServerVirtualIP = try r.bool("useServerVirtualIP")
        remoteTrafficSelectors = try r.optional("remoteTrafficSelectors")?.stringArray()
    }
}

extension ProviderConfiguration {
    init(json r: JSONReader) throws {
        providerIdentifier = try r.string("providerIdentifier") ?? ""
        providerConfiguration = try r.optional("providerConfiguration")?.stringMap() ?? [:]
        secrets = try r.optional("secrets")?.stringMap() ?? [:]
        serverAddress = try r.string("serverAddress")
    }
}

extension VPNStatus {
    init(json r: JSONReader) throws {
        let s = try r.string()
        guard let v = VPNStatus.allCases.first(where: { $0.name == s }) else { throw r.problem(nil, "unknown status \(s.quotedForMessage)") }
        self = v
    }
}

extension ConnectionError {
    init(json r: JSONReader) throws {
        domain = try r.string("domain") ?? ""
        code = try r.int("code") ?? 0
        name = try r.string("name") ?? ""
        message = try r.string("message") ?? ""
    }
}

extension AppliedSettings {
    init(json r: JSONReader) throws {
        addresses = try r.strings("addresses")
        routes = try r.strings("routes")
        excludedRoutes = try r.strings("excludedRoutes")
        mtu = try r.int("mtu")
        dns = try r.strings("dns")
        enforcedTable = try r.optional("enforcedTable").map { t in
            let v = try t.uint64()
            // A table vpnctl never made is refused, not cut down to another one (clean-up deletes by it).
            guard let x = UInt32(exactly: v), x > 255 else { throw t.problem(nil, "\(v) is not a routing table vpnctl makes (256–4294967295)") }
            return x
        }
        enforcedRoutes = try r.strings("enforcedRoutes")
    }
}

extension JSONReader {
    /// A 32-bit field (a pid, an ifindex): a value outside `range` is refused, never truncated.
    func int32(_ key: String, in range: ClosedRange<Int32>) throws -> Int32? {
        guard let r = try optional(key) else { return nil }
        let v = try r.int()
        guard let x = Int32(exactly: v), range.contains(x) else {
            throw r.problem(nil, "\(v) is out of range (\(range.lowerBound)–\(range.upperBound))")
        }
        return x
    }

    func date(_ key: String) throws -> Date? {
        guard let r = try optional(key) else { return nil }
        guard let d = Timestamp.parse(try r.string()) else { throw r.problem(nil, "expected an ISO 8601 time") }
        return d
    }
}

extension RuntimeRecord {
    public init(json r: JSONReader) throws {
        schemaVersion = try r.int("schemaVersion") ?? 1
        id = try r.required("id").uuid()
        name = try r.string("name") ?? ""
        status = try VPNStatus(json: r.required("status"))
        supervisorPid = try r.int32("supervisorPid", in: 1...Int32.max)
        supervisorStartTime = try r.optional("supervisorStartTime")?.uint64()
        providerPid = try r.int32("providerPid", in: 1...Int32.max)
        providerStartTime = try r.optional("providerStartTime")?.uint64()
        interface = try r.string("interface")
        ifindex = try r.int32("ifindex", in: 1...Int32.max)
        connectedSince = try r.date("connectedSince")
        reconnects = try r.int("reconnects")
        lastDisconnectError = try r.optional("lastDisconnectError").map(ConnectionError.init(json:))
        stopReason = try r.optional("stopReason")?.oneOf(StopReason.self, StopReason.allCases)
        settings = try r.optional("settings").map(AppliedSettings.init(json:))
        rxBytesAtConnect = try r.optional("rxBytesAtConnect")?.uint64()
        txBytesAtConnect = try r.optional("txBytesAtConnect")?.uint64()
        resolver = try r.optional("resolver").map(ResolverRecord.init(json:))
        killSwitch = try r.optional("killSwitch").map(KillSwitchRecord.init(json:))
        apps = try r.optional("apps").map(AppRoutingRecord.init(json:))
        startedBy = try r.optional("startedBy").map { o in
            StartOrigin(by: try o.string("by") ?? StartOrigin.onDemand, rule: try o.int("rule") ?? 0, reason: try o.string("reason") ?? "")
        }
        persistent = try r.bool("persistent")
        retrying = try r.string("retrying")
        updatedAt = try r.date("updatedAt") ?? Date(timeIntervalSince1970: 0)
    }
}

extension ResolverRecord {
    init(json r: JSONReader) throws {
        backend = try r.string("backend") ?? ""
        servers = try r.strings("servers")
        searchDomains = try r.strings("searchDomains")
        matchDomains = try r.strings("matchDomains")
        interface = try r.string("interface")
        path = try r.string("path")
        netns = try r.string("netns")
        note = try r.string("note")
        reason = try r.string("reason")
    }
}

extension AppRoutingRecord {
    init(json r: JSONReader) throws {
        guard let m = try r.optional("mode") else { throw r.problem("mode", "missing") }
        mode = try m.oneOf(AppRules.Mode.self, AppRules.Mode.allCases)
        // Only the values vpnctl gives (0x7661xxxx): clean-up deletes rules by them.
        func own(_ key: String) throws -> UInt32 {
            guard let v = try r.optional(key)?.uint64(), v >> 16 == 0x7661 else { throw r.problem(key, "not a mark vpnctl gives (0x7661xxxx)") }
            return UInt32(v)
        }
        mark = try own("mark")
        table = try own("table")
        covered = try r.strings("covered")
        ownedCgroup = try r.string("ownedCgroup")
        cgroupMount = try r.string("cgroupMount") ?? ""
        families = try r.optional("families")?.array().map { try $0.int() } ?? []
        sysctls = try r.strings("sysctls").filter { $0 == AppSession.srcValidMark }
    }
}

extension KillSwitchRecord {
    init(json r: JSONReader) throws {
        table = try r.string("table") ?? ""
        netns = try r.string("netns")
    }
}

extension TransitionEvent {
    public init(json r: JSONReader) throws {
        guard let t = try r.date("time") else { throw r.problem("time", "missing") }
        time = t
        id = try r.string("id") ?? ""
        name = try r.string("name") ?? ""
        status = try r.string("status") ?? ""
        previous = try r.string("previous") ?? ""
        interface = try r.string("interface")
        error = try r.optional("error").map(ConnectionError.init(json:))
        note = try r.string("note")
    }

    public static func parse(_ bytes: [UInt8]) throws -> TransitionEvent {
        try TransitionEvent(json: JSONReader(parsing: bytes))
    }
}
