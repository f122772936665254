import FoundationEssentials

/// What an OpenVPN profile answers for itself: its problems, its `show`
/// rows, its import summary and its export.
extension OpenVPNConfiguration: ConfigurationModel {
    public var serverHosts: [String] { remotes.map(\.host) }
    public var anchorReferences: [String] { caFingerprints }
    public var fieldsToSetBeforeStart: [String] { passwordSecret != nil && username == nil ? ["protocol.username"] : [] }
    public var exportFormats: [ProfileExport.Format] { [.json, .ovpn, .mobileconfig] }

    public func credentialFields(stored: (String) -> Bool) -> [CredentialRequest.Field] {
        var f: [CredentialRequest.Field] = []
        if username != nil || passwordSecret != nil, !(passwordSecret.map(stored) ?? false) {
            f += CredentialRequest.userAndPassword(username)
        }
        if let c = staticChallenge { f.append(.init(.oneTimeCode, prompt: c.text, echo: c.echo)) }
        return f
    }
    public var defaultExportFormat: ProfileExport.Format { .ovpn }

    public func problems(_ v: ProfileValidator) -> [String] {
        let o = self
        var p: [String] = []
        if o.remotes.isEmpty { p.append(L("protocol.remotes: missing (at least one remote host and port)")) }
        for (i, r) in o.remotes.enumerated() {
            if r.host.isEmpty {
                p.append(L("protocol.remotes[\(i)].host: missing"))
            } else if !Endpoint.isHostName(r.host) && IPAddress(r.host) == nil {
                p.append(L("protocol.remotes[\(i)].host: '\(OpenVPNDirectives.shown(r.host))' is not a host name or an IP address"))
            }
            if !(1...65535).contains(r.port) { p.append(L("protocol.remotes[\(i)].port: \(r.port) is out of range (1–65535)")) }
            if !OpenVPNImport.protocols.contains(r.proto) {
                p.append(L("protocol.remotes[\(i)].proto: '\(OpenVPNDirectives.shown(r.proto))' is not one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))"))
            }
        }
        // Options are written into the file openvpn reads: one directive each,
        // on vpnctl's allow-list and fitting its grammar, however wrapped.
        for (i, option) in o.options.enumerated() {
            if let problem = OpenVPNDirectives.problem(in: option) { p.append("protocol.options[\(i)]: \(problem)") }
        }
        if let u = o.username, u.unicodeScalars.contains(where: v.isControl) {
            p.append(L("protocol.username: a control character (a line break?) in it"))
        }
        if o.caFingerprints.isEmpty {
            p.append(L("protocol.caFingerprints: missing (the trust anchors that sign the server's certificate)"))
        }
        for fp in o.caFingerprints where !TrustAnchor.isFingerprint(fp) {
            p.append(L("protocol.caFingerprints: '\(OpenVPNDirectives.shown(fp))' is not a SHA-256 fingerprint (64 hex digits)"))
        }
        let hasCert = o.certificate != nil || o.keySecret != nil
        if hasCert {
            if o.certificate == nil { p.append(L("protocol.certificate: missing (the client certificate that goes with keySecret)")) }
            p += v.secretRef("protocol.keySecret", o.keySecret, required: true, what: "the client certificate's private key")
        }
        if o.username != nil || o.passwordSecret != nil {
            if o.username?.isEmpty ?? true { p.append(L("protocol.username: missing (auth-user-pass needs a username)")) }
            p += v.secretRef("protocol.passwordSecret", o.passwordSecret, required: true, what: "auth-user-pass needs a password secret")
        }
        if let c = o.staticChallenge {
            if o.username == nil && o.passwordSecret == nil {
                p.append(L("protocol.staticChallenge: the code goes with the auth-user-pass password; set username and passwordSecret too"))
            }
            if c.text.unicodeScalars.contains(where: v.isControl) { p.append(L("protocol.staticChallenge.text: a control character (a line break?) in it")) }
            if c.text.isEmpty { p.append(L("protocol.staticChallenge.text: missing (the words shown when the code is asked for)")) }
        }
        if !hasCert && o.username == nil && o.passwordSecret == nil {
            p.append(L("protocol: no client authentication (give a certificate and keySecret, or a username and passwordSecret)"))
        }
        p += v.secretRef("protocol.tlsCryptSecret", o.tlsCryptSecret, required: false, what: "")
        p += v.secretRef("protocol.tlsAuthSecret", o.tlsAuthSecret, required: false, what: "")
        p += v.secretRef("protocol.tlsCryptV2Secret", o.tlsCryptV2Secret, required: false, what: "")
        return p
    }

    public func described(secret: (String?) -> String) -> ConfigurationRows {
        var r = ConfigurationRows()
        r.add(L("remotes"), remotes.map { "\($0.host):\($0.port)/\($0.proto)" }.joined(separator: ", "))
        r.add(L("ca"), caFingerprints.isEmpty ? "(none)"
              : "trust anchor\(caFingerprints.count == 1 ? "" : "s") \(caFingerprints.joined(separator: ", "))")
        if let c = certificate { r.add(L("certificate"), c) }
        if keySecret != nil { r.add(L("key"), secret(keySecret)) }
        if let u = username { r.add(L("username"), u) }
        if passwordSecret != nil { r.add(L("password"), secret(passwordSecret)) }
        if let c = staticChallenge { r.add(L("static-challenge"), "\"\(c.text)\" (\(c.echo ? L("the code is shown as it is typed") : L("the code is not shown")))") }
        if tlsCryptSecret != nil { r.add(L("tls-crypt"), secret(tlsCryptSecret)) }
        if tlsAuthSecret != nil { r.add(L("tls-auth"), secret(tlsAuthSecret)) }
        return r
    }
}

extension OpenVPNConfiguration {
    /// The server decides unless a redirect-gateway makes it full, or
    /// route-nopull leaves only the profile's own routes; the remotes stay
    /// outside.
    public var tunnelSummary: ImportSummary {
        let words = options.map { OpenVPNDirectives.tokenize($0) ?? [] }
        var s = ImportSummary(tunnel: "server")
        if let r = words.compactMap(RedirectGateway.init).last {
            s.tunnel = "full"
            s.families = (r.ipv4 ? ["IPv4"] : []) + (r.ipv6 ? ["IPv6"] : [])
        }
        for w in words where w.count >= 2 {
            switch w[0] {
            case "route":
                let mask = w.count > 2 ? PushedSettings.prefixLength(w[2]) ?? 32 : 32
                s.routes.append(CIDR("\(w[1])/\(mask)")?.network.description ?? w[1])
            case "route-ipv6": s.routes.append(w[1])
            case "dhcp-option" where w.count == 3:
                switch w[1] {
                case "DNS", "DNS6": s.dnsServers.append(w[2])
                case "DOMAIN", "ADAPTER_DOMAIN_SUFFIX", "DOMAIN-SEARCH": if !s.searchDomains.contains(w[2]) { s.searchDomains.append(w[2]) }
                default: break
                }
            default: break
            }
        }
        if s.tunnel == "server", words.contains(where: { $0 == ["route-nopull"] }) { s.tunnel = s.routes.isEmpty ? "none" : "split" }
        if s.tunnel == "server" { s.redirectFiltered = PullFilter(options: options).action(for: "redirect-gateway def1") != .accept }
        s.keptOutside = remotes.map(\.host).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        return s
    }

    public func exportedText(as format: ProfileExport.Format, secret: (String?) -> String?,
                             anchor: (String) throws -> String) throws -> String? {
        format == .ovpn ? try ProfileExport.ovpn(self, secret: secret, anchor: anchor) : nil
    }

    public func writeVPNPayload(_ payload: inout ProfileExport.VPNPayload, secret: (String?) -> String?,
                                anchor: (String) throws -> String) throws {
        try ProfileExport.openVPNPayload(self, into: &payload, secret: secret, anchor: anchor)
    }
}
