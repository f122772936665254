import FoundationEssentials

/// strongSwan's Android app profile (`.sswan`, JSON: `uuid`, `name`, `type`,
/// `remote`, `local`, `split-tunneling`, …), as hwdsl2/setup-ipsec-vpn hands
/// them out, imported as an ikev2 profile. Every key is carried, refused by
/// name, or named in the notes as having no effect here; none is dropped.
public enum StrongSwanProfile {
    /// The app's profile types, and what vpnctl makes of each.
    static let types = ["ikev2-eap", "ikev2-cert", "ikev2-cert-eap", "ikev2-eap-tls", "ikev2-byod-eap"]

    static let topKeys: Set<String> = ["uuid", "name", "type", "remote", "local", "split-tunneling", "mtu", "nat-keepalive",
                                       "ike-proposal", "esp-proposal", "dns-servers", "proxy", "included-apps", "excluded-apps"]
    static let remoteKeys: Set<String> = ["addr", "port", "id", "cert", "certreq", "revocation"]
    static let localKeys: Set<String> = ["id", "eap_id", "p12", "rsa-pss"]
    static let splitKeys: Set<String> = ["subnets", "excluded", "block-ipv4", "block-ipv6"]

    /// Whether `bytes` are a .sswan profile: a JSON object with `uuid`, `type`
    /// and a `remote` object (vpnctl's own JSON has none of these).
    public static func recognizes(_ bytes: [UInt8]) -> Bool {
        do {
            let r = try JSONReader(parsing: bytes)
            guard try r.optional("uuid") != nil, try r.optional("type") != nil, let remote = try r.optional("remote") else { return false }
            _ = try remote.keys()
            return true
        } catch {
            // Not JSON, or not that shape: another importer's file.
            return false
        }
    }

    /// The profile a .sswan file describes, named `name`. `options.identityPassword`
    /// opens an encrypted `local.p12` (hwdsl2's are not encrypted).
    public static func parse(_ bytes: [UInt8], name: String, source: String, options: ImportOptions = ImportOptions()) throws -> ImportResult {
        let r: JSONReader
        do {
            r = try JSONReader(parsing: bytes)
        } catch let problem as JSONSyntax.Problem {
            throw VPNError(.configurationInvalid, L("\(source):\(problem.line):\(problem.column): malformed JSON: \(problem.message)"))
        }
        var reader = Reader(source: source, name: name, options: options)
        let result = reader.read(r)
        if !reader.problems.isEmpty {
            throw VPNError.invalid(reader.problems.count == 1 ? L("\(source) (a strongSwan app profile) cannot be imported (1 problem)")
                                                              : L("\(source) (a strongSwan app profile) cannot be imported (\(reader.problems.count) problems)"),
                                   problems: reader.problems, hint: L("fix the file and import it again"))
        }
        guard let result else {
            // read() returns nil only with a problem recorded.
            throw VPNError(.configurationInvalid, L("\(source) (a strongSwan app profile) cannot be imported"))
        }
        return result
    }

    /// Base64 as the app's files carry it: wrapped (hwdsl2 writes "\n" every
    /// 52 characters), or PEM for a certificate.
    static func base64(_ text: String) -> [UInt8]? {
        let compact = String(text.unicodeScalars.filter { !($0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r") })
        guard !compact.isEmpty, let data = Data(base64Encoded: compact), !data.isEmpty else { return nil }
        return Array(data)
    }

    /// Values separated by spaces, as the app takes subnets and DNS servers.
    static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "," }).map(String.init)
    }

    struct Reader {
        let source: String
        let name: String
        let options: ImportOptions
        var problems: [String] = []
        var notes: [String] = []
        /// Keys that have no effect here, for the import summary.
        var noEffect: [String] = []

        init(source: String, name: String, options: ImportOptions) {
            self.source = source
            self.name = name
            self.options = options
        }

        /// A value read with its type checked; a wrong type is a problem.
        mutating func value<T>(_ body: () throws -> T?) -> T? {
            do { return try body() } catch let p as JSONDecodeProblem {
                problems.append("\(p)")
            } catch {
                problems.append("\(error)")
            }
            return nil
        }

        /// A flag as the app and hwdsl2 write it: true/false, or "true"/"false".
        mutating func flag(_ r: JSONReader, _ key: String, path: String) -> Bool? {
            guard let v = value({ try r.optional(key) }) else { return nil }
            switch v.kind {
            case .true: return true
            case .false: return false
            default:
                if v.kind.isString, let s = value({ try v.string() })?.lowercased(), ["true", "false", "1", "0"].contains(s) { return s == "true" || s == "1" }
            }
            problems.append(L("\(path) is not true or false"))
            return nil
        }

        mutating func object(_ r: JSONReader, _ key: String, known: Set<String>, path: String) -> JSONReader? {
            guard let o = value({ try r.optional(key) }) else { return nil }
            guard let keys = value({ try o.keys() }) else { return nil }
            for k in keys where !known.contains(k) {
                problems.append(L("\(path).\(k.escapingControls(keepLineBreaks: false).quotedForMessage): a key vpnctl does not know, so it cannot carry its meaning"))
            }
            return o
        }

        mutating func read(_ r: JSONReader) -> ImportResult? {
            guard let topKeys = value({ try r.keys() }) else { return nil }
            for k in topKeys where !StrongSwanProfile.topKeys.contains(k) {
                problems.append(L("\(k.escapingControls(keepLineBreaks: false).quotedForMessage): a key vpnctl does not know, so it cannot carry its meaning"))
            }
            let uuid = value({ try r.required("uuid").uuid() })
            _ = value({ try r.string("name") })
            guard let type = value({ try r.string("type") }) else {
                if !topKeys.contains("type") { problems.append(L("type: missing (one of \(StrongSwanProfile.types.joined(separator: ", ")))")) }
                return nil
            }
            let shownType = type.escapingControls(keepLineBreaks: false).abbreviated(60)
            switch type {
            case "ikev2-eap", "ikev2-cert", "ikev2-cert-eap": break
            case "ikev2-eap-tls", "ikev2-byod-eap":
                problems.append(L("type \(shownType): vpnctl's ikev2 profiles authenticate with EAP-MSCHAPv2 (ikev2-eap), a certificate (ikev2-cert) or both (ikev2-cert-eap), not with \(type == "ikev2-eap-tls" ? "EAP-TLS" : "EAP-TNC (BYOD)")"))
                return nil
            default:
                problems.append(L("type \(shownType.quotedForMessage) is not one of \(StrongSwanProfile.types.joined(separator: ", "))"))
                return nil
            }
            let certificateAuth = type != "ikev2-eap", eap = type != "ikev2-cert"

            guard let remote = object(r, "remote", known: StrongSwanProfile.remoteKeys, path: "remote") else {
                if !topKeys.contains("remote") { problems.append(L("remote: missing (remote.addr is the server)")) }
                return nil
            }
            guard let server = value({ try remote.string("addr") }), !server.isEmpty else {
                problems.append(L("remote.addr: missing (the server)"))
                return nil
            }
            if !Endpoint.isHostName(server) && IPAddress(server) == nil {
                problems.append(L("remote.addr \(server.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage) is not a host name or an IP address"))
            }
            if let port = value({ try remote.int("port") }), port != 500 {
                problems.append(L("remote.port \(port): vpnctl's ikev2 profiles reach the server on port 500 (and 4500 behind NAT) only"))
            }
            // The app checks the server's identity against its address unless remote.id says otherwise.
            let remoteID = value({ try remote.string("id") }) ?? server
            let local = object(r, "local", known: StrongSwanProfile.localKeys, path: "local")
            var c = IKEv2Configuration(serverAddress: server, remoteIdentifier: remoteID,
                                       localIdentifier: local.flatMap { l in value({ try l.string("id") }) })
            var secrets: [String: [UInt8]] = [:]
            var anchors: [String: [UInt8]] = [:]
            var chain: [Crypto.Certificate] = []

            guard readAuthentication(&c, local: local, type: type, certificateAuth: certificateAuth, eap: eap,
                                     secrets: &secrets, chain: &chain) else { return nil }

            readServerTrust(&c, remote: remote, chain: chain, certificateAuth: certificateAuth, anchors: &anchors)

            readTuning(r, &c)

            var profile = Profile(name: name, protocol: .ikev2(c))
            readNetwork(r, &c, &profile)
            profile.protocol = .ikev2(c)
            if problems.isEmpty {
                notes.append(L("name is the app's own label: the profile is '\(name)'; with --keep-id its id is the file's uuid"))
            }
            var result = ImportResult(profile: profile, secrets: secrets, notes: notes, anchors: anchors)
            result.fileID = uuid
            result.noEffect = noEffect
            return result
        }

        /// The client's credentials: the certificate of local.p12, the EAP
        /// username; false when the profile cannot be made.
        mutating func readAuthentication(_ c: inout IKEv2Configuration, local: JSONReader?, type: String, certificateAuth: Bool, eap: Bool,
                                         secrets: inout [String: [UInt8]], chain: inout [Crypto.Certificate]) -> Bool {
            if certificateAuth {
                c.authenticationMethod = .certificate
                if let p12Text = local.flatMap({ l in value({ try l.string("p12") }) }) {
                    if let id = identity(p12Text) {
                        secrets["identity"] = Array(id.certificate.pem.utf8) + id.privateKeyPEM
                        c.identitySecret = "identity"
                        chain = id.chain
                    }
                } else {
                    problems.append(L("local.p12: missing (type \(type) authenticates with the client certificate it holds)"))
                }
            } else if local.flatMap({ l in value({ try l.optional("p12") }) }) != nil {
                noEffect.append("local.p12")
                notes.append(L("local.p12 has no effect here: type ikev2-eap authenticates with a username and password only"))
            }
            if eap {
                guard let user = options.username ?? local.flatMap({ l in value({ try l.string("eap_id") }) }), !user.isEmpty else {
                    problems.append(L("local.eap_id: missing (the EAP username of type \(type)); give it with --username"))
                    return false
                }
                c.username = user
                c.passwordSecret = "password"
            } else if local.flatMap({ l in value({ try l.optional("eap_id") }) }) != nil {
                noEffect.append("local.eap_id")
                notes.append(L("local.eap_id has no effect here: type ikev2-cert uses no EAP"))
            }
            if let l = local, flag(l, "rsa-pss", path: "local.rsa-pss") == true {
                noEffect.append("local.rsa-pss")
                notes.append(L("local.rsa-pss has no effect here: charon chooses the signature scheme the server offers (RFC 7427)"))
            }
            return true
        }

        /// The server's trust anchor: remote.cert, else the CA that came with the client certificate.
        mutating func readServerTrust(_ c: inout IKEv2Configuration, remote: JSONReader, chain: [Crypto.Certificate], certificateAuth: Bool,
                                      anchors: inout [String: [UInt8]]) {
            if let certText = value({ try remote.string("cert") }) {
                if let cert = certificate(certText) {
                    anchors[cert.fingerprint] = Array(cert.pem.utf8)
                    c.caFingerprint = cert.fingerprint
                }
            } else if !chain.isEmpty {
                let roots = chain.filter { $0.subject == $0.issuer }
                if let ca = chain.count == 1 ? chain[0] : (roots.count == 1 ? roots[0] : nil) {
                    anchors[ca.fingerprint] = Array(ca.pem.utf8)
                    c.caFingerprint = ca.fingerprint
                    notes.append(L("the server's certificate is checked against the CA in local.p12 (\(ca.subject.escapingControls(keepLineBreaks: false).abbreviated(120)))"))
                } else {
                    problems.append(L("remote.cert: missing, and local.p12 holds \(chain.count) CA certificates; add remote.cert (the CA the server's certificate chains to)"))
                }
            } else if !certificateAuth || c.identitySecret != nil {
                problems.append(L("remote.cert: missing, and no CA certificate came with the file: the app would trust Android's CAs, vpnctl needs the CA the server's certificate chains to (add remote.cert)"))
            }
            if flag(remote, "certreq", path: "remote.certreq") == false {
                noEffect.append("remote.certreq")
                notes.append(L("remote.certreq false has no effect here: charon asks for the server's certificate"))
            }
            if let rev = object(remote, "revocation", known: ["crl", "ocsp", "strict"], path: "remote.revocation") {
                for k in ["crl", "ocsp"] { _ = flag(rev, k, path: "remote.revocation.\(k)") }
                if flag(rev, "strict", path: "remote.revocation.strict") == true {
                    problems.append(L("remote.revocation.strict: vpnctl cannot require a certificate's revocation status (charon checks CRLs and OCSP where the certificate names them, not strictly)"))
                } else {
                    noEffect.append("remote.revocation")
                    notes.append(L("remote.revocation has no effect here: charon checks CRLs and OCSP where the certificate names them"))
                }
            }
        }

        /// Proposals, MTU and NAT keepalive.
        mutating func readTuning(_ r: JSONReader, _ c: inout IKEv2Configuration) {
            for (key, ike) in [("ike-proposal", true), ("esp-proposal", false)] {
                guard let text = value({ try r.string(key) }) else { continue }
                let list = StrongSwanProfile.words(text)
                if list.isEmpty { problems.append(L("\(key): empty")) }
                for p in list {
                    if let why = IKEv2Proposal.problem(p, ike: ike) {
                        problems.append(L("\(key) \(p.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage): \(why)"))
                    }
                }
                if ike { c.ikeProposals = list } else { c.childProposals = list }
            }
            if let m = value({ try r.int("mtu") }) {
                if (1280...1500).contains(m) { c.mtu = m } else { problems.append(L("mtu \(m) is not a number from 1280 to 1500")) }
            }
            if let k = value({ try r.int("nat-keepalive") }) {
                noEffect.append("nat-keepalive")
                notes.append(L("nat-keepalive \(k) has no effect here: charon sends NAT keepalives at its own interval (20 s)"))
            }
        }

        /// DNS, split tunneling, and what vpnctl cannot carry (proxy, per-app).
        mutating func readNetwork(_ r: JSONReader, _ c: inout IKEv2Configuration, _ profile: inout Profile) {
            if let text = value({ try r.string("dns-servers") }) {
                let servers = StrongSwanProfile.words(text)
                for s in servers where IPAddress(s) == nil {
                    problems.append(L("dns-servers: \(s.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage) is not an IP address"))
                }
                if !servers.isEmpty { profile.dnsSettings = DNSSettings(servers: servers, searchDomains: [], matchDomains: []) }
            }
            if let split = object(r, "split-tunneling", known: StrongSwanProfile.splitKeys, path: "split-tunneling") {
                readSplit(split, &c, into: &profile)
            }
            if let proxy = object(r, "proxy", known: ["host", "port", "exclusions"], path: "proxy") {
                let host = value({ try proxy.string("host") }) ?? ""
                noEffect.append("proxy")
                notes.append(L("proxy \(host.escapingControls(keepLineBreaks: false).abbreviated(100)) has no effect here: vpnctl sets no HTTP proxy (set it in the applications that should use it)"))
            }
            for key in ["included-apps", "excluded-apps"] {
                guard let apps = value({ try r.optional(key)?.stringArray() }), !apps.isEmpty else { continue }
                problems.append(L("\(key): names Android apps by package, which no Linux program has: import without it, then give the profile appRules (systemd units or cgroups) with 'vpnctl edit'"))
            }
        }

        /// subnets: the remote traffic selectors (a split tunnel); block-ipv4
        /// and block-ipv6 together: the kill switch.
        mutating func readSplit(_ split: JSONReader, _ c: inout IKEv2Configuration, into profile: inout Profile) {
            if let text = value({ try split.string("subnets") }) {
                var selectors: [String] = []
                for s in StrongSwanProfile.words(text) {
                    guard s.contains("/") || IPAddress(s) != nil, let cidr = CIDR(s) else {
                        problems.append(L("split-tunneling.subnets: \(s.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage) is not a subnet or an IP address"))
                        continue
                    }
                    selectors.append(cidr.description)
                }
                if !selectors.isEmpty { c.remoteTrafficSelectors = selectors }
            }
            if let text = value({ try split.string("excluded") }), !StrongSwanProfile.words(text).isEmpty {
                problems.append(L("split-tunneling.excluded (\(StrongSwanProfile.words(text).joined(separator: " ").escapingControls(keepLineBreaks: false).abbreviated(200))): vpnctl's ikev2 profiles cannot keep networks outside the tunnel yet; list the networks to send through it in split-tunneling.subnets instead"))
            }
            let v4 = flag(split, "block-ipv4", path: "split-tunneling.block-ipv4") ?? false
            let v6 = flag(split, "block-ipv6", path: "split-tunneling.block-ipv6") ?? false
            if v4 && v6 {
                profile.includeAllNetworks = true
                notes.append(L("split-tunneling.block-ipv4 and block-ipv6: the kill switch (includeAllNetworks) blocks all traffic outside the tunnel"))
            } else if v4 || v6 {
                problems.append(L("split-tunneling.\(v4 ? "block-ipv4" : "block-ipv6") without \(v4 ? "block-ipv6" : "block-ipv4"): vpnctl blocks traffic outside the tunnel for both address families (includeAllNetworks) or for neither"))
            }
        }

        /// local.p12: the client identity, opened with --identity-password-stdin
        /// or, without it, as an unencrypted file (an empty password).
        mutating func identity(_ text: String) -> Crypto.Identity? {
            guard let der = StrongSwanProfile.base64(text) else {
                problems.append(L("local.p12 is not base64 (the PKCS#12 file, base64-encoded)"))
                return nil
            }
            do {
                return try Crypto.pkcs12(der, password: options.identityPassword ?? "")
            } catch let p as Crypto.Problem {
                problems.append(options.identityPassword == nil
                    ? L("local.p12: \(p.message); if it is encrypted, give its password with --identity-password-stdin")
                    : L("local.p12: \(p.message)"))
            } catch {
                problems.append("local.p12: \(error)")
            }
            return nil
        }

        /// remote.cert: base64 DER, or PEM.
        mutating func certificate(_ text: String) -> Crypto.Certificate? {
            do {
                if text.containsUTF8("-----BEGIN ") {
                    if text.containsUTF8("PRIVATE KEY-----") {
                        problems.append(L("remote.cert holds a private key; it should hold the server's CA certificate only (treat the key as exposed)"))
                        return nil
                    }
                    let certs = try Crypto.certificates(pem: text)
                    guard certs.count == 1 else {
                        problems.append(L("remote.cert holds \(certs.count) PEM certificates; it holds one (the CA's)"))
                        return nil
                    }
                    return certs[0]
                }
                guard let der = StrongSwanProfile.base64(text) else {
                    problems.append(L("remote.cert is not base64 (the CA certificate, DER base64-encoded, or PEM)"))
                    return nil
                }
                return try Crypto.certificate(der: der)
            } catch let p as Crypto.Problem {
                problems.append(L("remote.cert: \(p.message)"))
            } catch {
                problems.append("remote.cert: \(error)")
            }
            return nil
        }
    }
}
