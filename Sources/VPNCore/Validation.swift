import FoundationEssentials

/// Checks a profile and reports every problem at once, each naming the field
/// and what is wrong. The platform's single "configuration invalid" is
/// exactly what vpnctl avoids.
public struct ProfileValidator {
    /// Whether the named secret of this profile is set.
    public var secretExists: (String) -> Bool

    public init(secretExists: @escaping (String) -> Bool) {
        self.secretExists = secretExists
    }

    public func problems(in profile: Profile) -> [String] {
        var p: [String] = []
        p += ProfileName.problems(profile.name).map { "name: \($0)" }
        switch profile.protocol {
        case .wireguard(let w): p += wireguard(w)
        case .openvpn(let o): p += openvpn(o)
        case .ikev2(let i): p += ikev2(i)
        case .provider(let pr): p += provider(pr)
        }
        p += onDemand(profile.onDemand)
        p += policy(profile.policy)
        return p
    }

    /// The problems that only a secret can fix. `import` and `edit` save a
    /// profile with these (and say so); `start` refuses it.
    public func missingSecrets(in profile: Profile) -> [String] {
        profile.secretReferences.compactMap { ref in
            (SecretStore.isValidName(ref.name) && !secretExists(ref.name))
                ? "\(ref.field): secret '\(ref.name)' is not set" : nil
        }
    }

    func secretRef(_ field: String, _ name: String?, required: Bool, what: String) -> [String] {
        guard let name else { return required ? ["\(field): missing (\(what))"] : [] }
        if !SecretStore.isValidName(name) { return ["\(field): '\(name)' is not a valid secret name (letters, digits, '.', '_', '-')"] }
        return []
    }

    func wireguard(_ w: WireGuardConfiguration) -> [String] {
        var p: [String] = []
        p += secretRef("protocol.privateKeySecret", w.privateKeySecret, required: true, what: "the interface's private key")
        if w.addresses.isEmpty { p.append("protocol.addresses: missing (at least one address, e.g. 10.0.0.2/32)") }
        for a in w.addresses where CIDR(a) == nil {
            p.append("protocol.addresses: '\(a)' is not an IPv4 or IPv6 address with an optional /prefix")
        }
        for d in w.dns where IPAddress(d) == nil && !isDomainName(d) {
            p.append("protocol.dns: '\(d)' is neither an IP address nor a search domain")
        }
        if let mtu = w.mtu, !(576...65535).contains(mtu) {
            p.append("protocol.mtu: \(mtu) is out of range (576–65535)")
        }
        if let port = w.listenPort, !(0...65535).contains(port) {
            p.append("protocol.listenPort: \(port) is out of range (0–65535)")
        }
        if let t = w.table, t != "auto", t != "off", UInt32(t) == nil {
            p.append("protocol.table: '\(t)' must be auto, off, or a routing table number")
        }
        if let f = w.fwmark, Fwmark(f) == nil {
            p.append("protocol.fwmark: '\(OpenVPNDirectives.shown(f))' must be off, a number, or 0x and hex digits (up to 32 bits)")
        }
        if let name = w.interfaceName, !InterfaceName.isValid(name) {
            p.append("protocol.interfaceName: '\(name)' is not a valid interface name (1–15 characters, no '/', ':' or spaces)")
        }
        for e in w.excludedRoutes where CIDR(e) == nil {
            p.append("protocol.excludedRoutes: '\(e)' is not a CIDR prefix")
        }
        if w.peers.isEmpty { p.append("protocol.peers: missing (at least one peer with a public key, allowed IPs and an endpoint)") }
        for (i, peer) in w.peers.enumerated() {
            let f = "protocol.peers[\(i)]"
            if peer.publicKey.isEmpty {
                p.append("\(f).publicKey: missing")
            } else if !WireGuardKey.isValid(peer.publicKey) {
                p.append("\(f).publicKey: not a WireGuard key (44 characters of base64 encoding 32 bytes)")
            }
            p += secretRef("\(f).presharedKeySecret", peer.presharedKeySecret, required: false, what: "")
            if peer.allowedIPs.isEmpty { p.append("\(f).allowedIPs: missing (e.g. 0.0.0.0/0, ::/0)") }
            for a in peer.allowedIPs where CIDR(a) == nil {
                p.append("\(f).allowedIPs: '\(a)' is not a CIDR prefix")
            }
            if let e = peer.endpoint {
                switch Endpoint.parse(e) {
                case .success: break
                case .failure(.missingPort): p.append("\(f).endpoint: '\(e)' has no port (host:port)")
                case .failure(.badPort): p.append("\(f).endpoint: '\(e)' has a port outside 1–65535")
                case .failure(.badHost): p.append("\(f).endpoint: '\(e)' has an invalid host")
                }
            } else {
                p.append("\(f).endpoint: missing (host:port of the server)")
            }
            if let k = peer.persistentKeepalive, !(0...65535).contains(k) {
                p.append("\(f).persistentKeepalive: \(k) is out of range (0–65535 seconds)")
            }
        }
        return p
    }

    func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || c.value == 0x7F }

    func openvpn(_ o: OpenVPNConfiguration) -> [String] {
        var p: [String] = []
        if o.remotes.isEmpty { p.append("protocol.remotes: missing (at least one remote host and port)") }
        for (i, r) in o.remotes.enumerated() {
            if r.host.isEmpty {
                p.append("protocol.remotes[\(i)].host: missing")
            } else if !Endpoint.isHostName(r.host) && IPAddress(r.host) == nil {
                p.append("protocol.remotes[\(i)].host: '\(OpenVPNDirectives.shown(r.host))' is not a host name or an IP address")
            }
            if !(1...65535).contains(r.port) { p.append("protocol.remotes[\(i)].port: \(r.port) is out of range (1–65535)") }
            if !OpenVPNImport.protocols.contains(r.proto) {
                p.append("protocol.remotes[\(i)].proto: '\(OpenVPNDirectives.shown(r.proto))' is not one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))")
            }
        }
        // Options are written into the file openvpn reads: one directive each,
        // on vpnctl's allow-list and fitting its grammar, however wrapped.
        for (i, option) in o.options.enumerated() {
            if let problem = OpenVPNDirectives.problem(in: option) { p.append("protocol.options[\(i)]: \(problem)") }
        }
        if let u = o.username, u.unicodeScalars.contains(where: isControl) {
            p.append("protocol.username: a control character (a line break?) in it")
        }
        if o.caFingerprints.isEmpty {
            p.append("protocol.caFingerprints: missing (the trust anchors that sign the server's certificate)")
        }
        for fp in o.caFingerprints where !TrustAnchor.isFingerprint(fp) {
            p.append("protocol.caFingerprints: '\(OpenVPNDirectives.shown(fp))' is not a SHA-256 fingerprint (64 hex digits)")
        }
        let hasCert = o.certificate != nil || o.keySecret != nil
        if hasCert {
            if o.certificate == nil { p.append("protocol.certificate: missing (the client certificate that goes with keySecret)") }
            p += secretRef("protocol.keySecret", o.keySecret, required: true, what: "the client certificate's private key")
        }
        if o.username != nil || o.passwordSecret != nil {
            if o.username?.isEmpty ?? true { p.append("protocol.username: missing (auth-user-pass needs a username)") }
            p += secretRef("protocol.passwordSecret", o.passwordSecret, required: true, what: "auth-user-pass needs a password secret")
        }
        if !hasCert && o.username == nil && o.passwordSecret == nil {
            p.append("protocol: no client authentication (give a certificate and keySecret, or a username and passwordSecret)")
        }
        p += secretRef("protocol.tlsCryptSecret", o.tlsCryptSecret, required: false, what: "")
        p += secretRef("protocol.tlsAuthSecret", o.tlsAuthSecret, required: false, what: "")
        p += secretRef("protocol.tlsCryptV2Secret", o.tlsCryptV2Secret, required: false, what: "")
        return p
    }

    func ikev2(_ i: IKEv2Configuration) -> [String] {
        var p: [String] = []
        if i.serverAddress.isEmpty { p.append("protocol.serverAddress: missing") }
        if i.remoteIdentifier?.isEmpty ?? true { p.append("protocol.remoteIdentifier: missing (the server's IKE identity)") }
        switch i.authenticationMethod {
        case .sharedSecret:
            p += secretRef("protocol.sharedSecretSecret", i.sharedSecretSecret, required: true, what: "sharedSecret authentication needs it")
        case .certificate:
            p += secretRef("protocol.identitySecret", i.identitySecret, required: true, what: "certificate authentication needs a client identity")
        case .none:
            if i.username == nil {
                p.append("protocol.authenticationMethod: none and no username (choose sharedSecret, certificate, or set username and passwordSecret)")
            }
        }
        if i.username != nil {
            if i.username?.isEmpty ?? true { p.append("protocol.username: empty") }
            p += secretRef("protocol.passwordSecret", i.passwordSecret, required: true, what: "a username needs a password secret")
        }
        if let fp = i.caFingerprint, !TrustAnchor.isFingerprint(fp) {
            p.append("protocol.caFingerprint: '\(fp)' is not a SHA-256 fingerprint (64 hex digits)")
        }
        return p
    }

    func provider(_ pr: ProviderConfiguration) -> [String] {
        var p: [String] = []
        if pr.providerIdentifier.isEmpty { p.append("protocol.providerIdentifier: missing") }
        for (key, name) in pr.secrets.sorted(by: { $0.key < $1.key }) {
            p += secretRef("protocol.secrets.\(key)", name, required: true, what: "")
        }
        return p
    }

    func onDemand(_ o: OnDemand) -> [String] {
        var p: [String] = []
        for (i, r) in o.rules.enumerated() {
            if let url = r.probeURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                p.append("onDemand.rules[\(i)].probeURL: '\(url)' must be an http:// or https:// URL")
            }
        }
        return p
    }

    func policy(_ pol: Policy) -> [String] {
        var p: [String] = []
        for u in pol.users where u.isEmpty || u.contains(where: { $0 == ":" || $0 == " " }) {
            p.append("policy.users: '\(u)' is not a user name")
        }
        for g in pol.groups where g.isEmpty || g.contains(where: { $0 == ":" || $0 == " " }) {
            p.append("policy.groups: '\(g)' is not a group name")
        }
        return p
    }
}

func isDomainName(_ s: String) -> Bool {
    !s.isEmpty && s.count <= 253 && s.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
        && !s.hasPrefix("-") && !s.hasPrefix(".")
}

public enum ProfileName {
    /// Profile names are shown in tables and typed on command lines.
    public static func problems(_ name: String) -> [String] {
        if name.isEmpty { return ["empty"] }
        if isPlainlyFine(name) { return [] }
        var p: [String] = []
        if name.count > 64 { p.append("longer than 64 characters") }
        if name.hasPrefix("-") { p.append("\(name.quotedForMessage) starts with '-', which reads as an option") }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "/" }) {
            p.append("contains a control character or '/'")
        }
        if let u = name.unicodeScalars.first(where: { $0.properties.generalCategory != .control && $0.needsEscapeOnTerminal }) {
            p.append("contains an invisible formatting character (\(u.codePointText): a bidi control, zero-width or separator character)")
        }
        if name.first?.isWhitespace == true || name.last?.isWhitespace == true { p.append("has leading or trailing spaces") }
        if UUID(uuidString: name) != nil { p.append("looks like a UUID, which would be ambiguous with profile ids") }
        return p
    }
}

extension ProfileName {
    /// Printable ASCII with no '/', no leading '-' or space and no trailing
    /// space, at most 64 long and not 36 (every UUID string is): every rule
    /// holds without classifying a scalar, which a store of a thousand
    /// profiles would otherwise pay for on each load.
    static func isPlainlyFine(_ name: String) -> Bool {
        let u = name.utf8
        guard u.count <= 64, u.count != 36, let first = u.first, let last = u.last,
              first != UInt8(ascii: "-"), first != 0x20, last != 0x20 else { return false }
        return u.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }
    }
}

public enum InterfaceName {
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 15 && name != "." && name != ".."
            && !name.contains(where: { $0 == "/" || $0 == ":" || $0.isWhitespace })
    }
}

public enum TrustAnchor {
    public static func isFingerprint(_ s: String) -> Bool {
        s.count == 64 && s.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) }
    }
}

/// A WireGuard fwmark as wg-quick writes it: off, a number, or 0x-hex.
public enum Fwmark: Equatable, Sendable {
    case off
    case mark(UInt32)

    public init?(_ text: String) {
        let t = text.lowercased()
        if t == "off" {
            self = .off
        } else if t.hasPrefix("0x"), t.count > 2, t.dropFirst(2).allSatisfy(\.isHexDigit), let v = UInt32(t.dropFirst(2), radix: 16) {
            self = .mark(v)
        } else if !t.isEmpty, t.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt32(t) {
            self = .mark(v)
        } else {
            return nil
        }
    }

    public var value: UInt32? {
        if case .mark(let v) = self { return v }
        return nil
    }
}
