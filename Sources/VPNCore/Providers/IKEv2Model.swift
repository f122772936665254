import FoundationEssentials

/// What an IKEv2 profile answers for itself: its problems and its `show` rows.
extension IKEv2Configuration: ConfigurationModel {
    public func problems(_ v: ProfileValidator) -> [String] {
        let i = self
        var p: [String] = []
        if i.serverAddress.isEmpty { p.append("protocol.serverAddress: missing") }
        if i.remoteIdentifier?.isEmpty ?? true { p.append("protocol.remoteIdentifier: missing (the server's IKE identity)") }
        switch i.authenticationMethod {
        case .sharedSecret:
            p += v.secretRef("protocol.sharedSecretSecret", i.sharedSecretSecret, required: true, what: "sharedSecret authentication needs it")
        case .certificate:
            p += v.secretRef("protocol.identitySecret", i.identitySecret, required: true, what: "certificate authentication needs a client identity")
        case .none:
            if i.username == nil {
                p.append("protocol.authenticationMethod: none and no username (choose sharedSecret, certificate, or set username and passwordSecret)")
            }
        }
        if i.username != nil {
            if i.username?.isEmpty ?? true { p.append("protocol.username: empty") }
            p += v.secretRef("protocol.passwordSecret", i.passwordSecret, required: true, what: "a username needs a password secret")
        }
        if let fp = i.caFingerprint, !TrustAnchor.isFingerprint(fp) {
            p.append("protocol.caFingerprint: '\(fp)' is not a SHA-256 fingerprint (64 hex digits)")
        }
        return p
    }

    public func described(secret: (String?) -> String) -> ConfigurationRows {
        var r = ConfigurationRows()
        r.add("server", serverAddress)
        r.add("remote id", remoteIdentifier ?? "(none)")
        if let l = localIdentifier { r.add("local id", l) }
        r.add("authentication", authenticationMethod.rawValue)
        if sharedSecretSecret != nil { r.add("shared secret", secret(sharedSecretSecret)) }
        if let u = username { r.add("username", u) }
        if passwordSecret != nil { r.add("password", secret(passwordSecret)) }
        if identitySecret != nil { r.add("identity", secret(identitySecret)) }
        return r
    }
}
