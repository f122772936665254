import FoundationEssentials

/// What an OpenVPN profile answers for itself: its problems and its `show` rows.
extension OpenVPNConfiguration: ConfigurationModel {
    public var serverHosts: [String] { remotes.map(\.host) }
    public var anchorReferences: [String] { caFingerprints }
    public var fieldsToSetBeforeStart: [String] { passwordSecret != nil && username == nil ? ["protocol.username"] : [] }

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
        if tlsCryptSecret != nil { r.add(L("tls-crypt"), secret(tlsCryptSecret)) }
        if tlsAuthSecret != nil { r.add(L("tls-auth"), secret(tlsAuthSecret)) }
        return r
    }
}
