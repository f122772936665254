import FoundationEssentials

/// What an IKEv2 profile answers for itself: its problems, its `show`
/// rows, its import summary and its export.
extension IKEv2Configuration: ConfigurationModel {
    public var serverHosts: [String] { [serverAddress] }
    public var anchorReferences: [String] { caFingerprint.map { [$0] } ?? [] }
    /// IKEv2's `create` ends at the summary, as it did before the WireGuard
    /// and OpenVPN ones gained import's next steps (its help names them).
    public var createPrintsNextSteps: Bool { false }
    public var exportFormats: [ProfileExport.Format] { [.json, .mobileconfig] }

    /// The EAP password, asked before charon starts when it is not stored.
    public func credentialFields(stored: (String) -> Bool) -> [CredentialRequest.Field] {
        guard username != nil, !(passwordSecret.map(stored) ?? false) else { return [] }
        return CredentialRequest.userAndPassword(username)
    }
    public var defaultExportFormat: ProfileExport.Format { .mobileconfig }

    /// The server's traffic selectors decide; narrowed selectors (a .sswan's
    /// split-tunneling.subnets) make it split, as far as the server agrees.
    public var tunnelSummary: ImportSummary {
        var s = ImportSummary(tunnel: remoteTrafficSelectors == nil ? "server" : "split")
        s.routes = remoteTrafficSelectors ?? []
        s.keptOutside = [serverAddress]
        s.trafficSelectors = true
        return s
    }

    public func writeVPNPayload(_ payload: inout ProfileExport.VPNPayload, secret: (String?) -> String?,
                                anchor: (String) throws -> String) throws {
        try ProfileExport.ikev2Payload(self, into: &payload, secret: secret, anchor: anchor)
    }

    public func problems(_ v: ProfileValidator) -> [String] {
        let i = self
        var p: [String] = []
        if i.serverAddress.isEmpty { p.append(L("protocol.serverAddress: missing")) }
        if i.remoteIdentifier?.isEmpty ?? true { p.append(L("protocol.remoteIdentifier: missing (the server's IKE identity)")) }
        switch i.authenticationMethod {
        case .sharedSecret:
            p += v.secretRef("protocol.sharedSecretSecret", i.sharedSecretSecret, required: true, what: "sharedSecret authentication needs it")
        case .certificate:
            p += v.secretRef("protocol.identitySecret", i.identitySecret, required: true, what: "certificate authentication needs a client identity")
        case .none:
            if i.username == nil {
                p.append(L("protocol.authenticationMethod: none and no username (choose sharedSecret, certificate, or set username and passwordSecret)"))
            }
        }
        if i.username != nil {
            if i.username?.isEmpty ?? true { p.append(L("protocol.username: empty")) }
            p += v.secretRef("protocol.passwordSecret", i.passwordSecret, required: true, what: "a username needs a password secret")
        }
        if let fp = i.caFingerprint, !TrustAnchor.isFingerprint(fp) {
            p.append(L("protocol.caFingerprint: '\(fp)' is not a SHA-256 fingerprint (64 hex digits)"))
        }
        // The server proves itself with a certificate unless both sides use
        // the shared secret; checking its name (the remote identifier) needs an anchor.
        if i.authenticationMethod != .sharedSecret && i.caFingerprint == nil {
            p.append(L("protocol.caFingerprint: missing (the server's certificate is checked against the remote identifier; that needs a trust anchor)"))
        }
        for (field, list, ike) in [("ikeProposals", i.ikeProposals, true), ("childProposals", i.childProposals, false)] {
            guard let list else { continue }
            if list.isEmpty { p.append(L("protocol.\(field): empty (leave it out for strongSwan's defaults)")) }
            for (n, proposal) in list.enumerated() {
                if let why = IKEv2Proposal.problem(proposal, ike: ike) {
                    p.append("protocol.\(field)[\(n)]: '\(proposal)': \(why)")
                }
            }
        }
        if i.enablePFS == true, let child = i.childProposals {
            for (n, proposal) in child.enumerated() where IKEv2Proposal.problem(proposal, ike: false) == nil && !IKEv2Proposal.hasGroup(proposal) {
                p.append(L("protocol.childProposals[\(n)]: '\(proposal)' has no key exchange group, and enablePFS needs one"))
            }
        }
        if let m = i.lifetimeMinutes, !(10...1440).contains(m) { p.append(L("protocol.lifetimeMinutes: \(m) is out of range (10–1440)")) }
        if let m = i.mtu, !(1280...1500).contains(m) { p.append(L("protocol.mtu: \(m) is out of range (1280–1500)")) }
        if let ts = i.remoteTrafficSelectors {
            if ts.isEmpty { p.append(L("protocol.remoteTrafficSelectors: empty (leave it out for a full tunnel)")) }
            for t in ts where CIDR(t) == nil { p.append(L("protocol.remoteTrafficSelectors: '\(t)' is not a CIDR prefix")) }
        }
        return p
    }

    public func described(secret: (String?) -> String) -> ConfigurationRows {
        var r = ConfigurationRows()
        r.add(L("server"), serverAddress)
        r.add(L("remote id"), remoteIdentifier ?? "(none)")
        if let l = localIdentifier { r.add(L("local id"), l) }
        switch (authenticationMethod, username != nil) {
        case (.none, true): r.add(L("authentication"), "eap (EAP-MSCHAPv2)")
        case (_, true): r.add(L("authentication"), "\(authenticationMethod.rawValue), then eap (EAP-MSCHAPv2)")
        default: r.add(L("authentication"), authenticationMethod.rawValue)
        }
        if sharedSecretSecret != nil { r.add(L("shared secret"), secret(sharedSecretSecret)) }
        if let u = username { r.add(L("username"), u) }
        if passwordSecret != nil { r.add(L("password"), secret(passwordSecret)) }
        if identitySecret != nil { r.add(L("identity"), secret(identitySecret)) }
        if let ca = caFingerprint { r.add(L("trust anchor"), ca) }
        if let x = ikeProposals { r.add(L("ike proposals"), x.joined(separator: ", ")) }
        if let x = childProposals { r.add(L("child proposals"), x.joined(separator: ", ")) }
        if let x = deadPeerDetectionRate { r.add(L("dead peer detection"), x.rawValue) }
        if disableMOBIKE == true { r.add(L("mobike"), "off") }
        if enablePFS == true { r.add(L("pfs"), "on") }
        if let x = lifetimeMinutes { r.add(L("lifetime"), "\(x) min") }
        if let x = mtu { r.add(L("mtu"), "\(x)") }
        if useServerVirtualIP == false { r.add(L("virtual ip"), "not requested") }
        if let ts = remoteTrafficSelectors { r.add(L("remote networks"), ts.joined(separator: ", ")) }
        return r
    }
}
