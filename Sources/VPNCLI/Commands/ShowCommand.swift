import FoundationEssentials
import VPNCore

enum ShowCommand {
    static let spec = CommandSpec(
        name: "show", abstract: "Show one profile; secrets are named, never shown.",
        positionals: [PositionalSpec("profile", help: "The profile's name or UUID.")],
        run: run)

    struct SecretRow: Encodable {
        let field: String
        let name: String
        let isSet: Bool
        enum CodingKeys: String, CodingKey { case field, name, isSet = "set" }
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let profile: Profile
        let secrets: [SecretRow]
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let secrets = manager.store.secrets
        let rows = profile.secretReferences.map {
            SecretRow(field: $0.field, name: $0.name, isSet: secrets.exists(profile.id, name: $0.name))
        }
        if inv.options.json {
            inv.output.emit(Result(profile: profile, secrets: rows))
            return .ok
        }
        for line in describe(profile, secretIsSet: { secrets.exists(profile.id, name: $0) }) {
            inv.output.line(line)
        }
        return .ok
    }

    /// The text view. Secret fields print as the secret's name and whether it is set.
    static func describe(_ p: Profile, secretIsSet: (String) -> Bool) -> [String] {
        func secret(_ name: String?) -> String {
            guard let name else { return "(none)" }
            return "secret '\(name)' (\(secretIsSet(name) ? "set" : "NOT SET"))"
        }
        var out: [(String, String)] = [
            ("name", p.name), ("id", p.id.lowercasedString), ("enabled", p.enabled ? "yes" : "no"),
            ("revision", "\(p.revision)"), ("protocol", p.protocol.kind.rawValue),
        ]
        var tail: [String] = []
        switch p.protocol {
        case .wireguard(let w):
            out.append(("private key", secret(w.privateKeySecret)))
            out.append(("addresses", w.addresses.joined(separator: ", ")))
            if !w.dns.isEmpty { out.append(("dns", w.dns.joined(separator: ", "))) }
            if let m = w.mtu { out.append(("mtu", "\(m)")) }
            if let l = w.listenPort { out.append(("listen port", "\(l)")) }
            if let t = w.table { out.append(("table", t)) }
            if let f = w.fwmark { out.append(("fwmark", f)) }
            out.append(("interface", w.interfaceName ?? "(automatic utunN)"))
            for (i, peer) in w.peers.enumerated() {
                tail.append("peer \(i + 1):")
                tail.append("  public key:    \(peer.publicKey)")
                if let s = peer.presharedKeySecret { tail.append("  preshared key: \(secret(s))") }
                tail.append("  allowed ips:   \(peer.allowedIPs.joined(separator: ", "))")
                tail.append("  endpoint:      \(peer.endpoint ?? "(none)")")
                if let k = peer.persistentKeepalive { tail.append("  keepalive:     \(k == 0 ? "off" : "\(k) s")") }
            }
        case .openvpn(let o):
            out.append(("remotes", o.remotes.map { "\($0.host):\($0.port)/\($0.proto)" }.joined(separator: ", ")))
            out.append(("ca", o.caFingerprints.isEmpty ? "(none)"
                        : "trust anchor\(o.caFingerprints.count == 1 ? "" : "s") \(o.caFingerprints.joined(separator: ", "))"))
            if let c = o.certificate { out.append(("certificate", c)) }
            if o.keySecret != nil { out.append(("key", secret(o.keySecret))) }
            if let u = o.username { out.append(("username", u)) }
            if o.passwordSecret != nil { out.append(("password", secret(o.passwordSecret))) }
            if o.tlsCryptSecret != nil { out.append(("tls-crypt", secret(o.tlsCryptSecret))) }
            if o.tlsAuthSecret != nil { out.append(("tls-auth", secret(o.tlsAuthSecret))) }
        case .ikev2(let i):
            out.append(("server", i.serverAddress))
            out.append(("remote id", i.remoteIdentifier ?? "(none)"))
            if let l = i.localIdentifier { out.append(("local id", l)) }
            out.append(("authentication", i.authenticationMethod.rawValue))
            if i.sharedSecretSecret != nil { out.append(("shared secret", secret(i.sharedSecretSecret))) }
            if let u = i.username { out.append(("username", u)) }
            if i.passwordSecret != nil { out.append(("password", secret(i.passwordSecret))) }
            if i.identitySecret != nil { out.append(("identity", secret(i.identitySecret))) }
        case .provider(let pr):
            out.append(("provider", pr.providerIdentifier))
            for (k, v) in pr.providerConfiguration.sorted(by: { $0.key < $1.key }) { out.append(("  \(k)", v)) }
            for (k, v) in pr.secrets.sorted(by: { $0.key < $1.key }) { out.append(("  \(k)", secret(v))) }
        }
        out.append(("on demand", p.onDemand.enabled ? "on (\(p.onDemand.rules.count) rules)" : "off"))
        if !p.policy.users.isEmpty || !p.policy.groups.isEmpty {
            out.append(("allowed", (p.policy.users.map { "user \($0)" } + p.policy.groups.map { "group \($0)" }).joined(separator: ", ")))
        }
        let width = (out.map { $0.0.count }.max() ?? 0) + 2
        return out.map { k, v in (k + ":").padding(width) + v } + tail
    }
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
