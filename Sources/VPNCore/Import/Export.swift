import FoundationEssentials

/// A profile written as a file another machine can import: wg-quick, .ovpn,
/// an Apple configuration profile, or vpnctl's own JSON. Secrets are written
/// only when `secret` returns them; otherwise each is named as left out.
public enum ProfileExport {
    public enum Format: String, CaseIterable, Sendable {
        case json, wgQuick = "wg-quick", ovpn, mobileconfig
    }

    /// The file and the secrets it names without carrying them.
    public struct Output: Sendable {
        public var bytes: [UInt8]
        public var secretsLeftOut: [String]
    }

    /// The VPN payload of a configuration profile, as a protocol's model
    /// fills it in (`ConfigurationModel.writeVPNPayload`); the export adds
    /// the on-demand rules, the kill-switch flags and the DNS.
    public struct VPNPayload: Sendable {
        /// The profile it is written for (the identity payload names it).
        public let profile: Profile
        /// The payload's PayloadIdentifier, which the payloads beside it extend.
        public let payloadID: String
        /// The payload's own keys: VPNType, VPNSubType, VendorConfig, ...
        public var keys: [String: PropertyList]
        /// The protocol's settings dictionary ("VPN", or "IKEv2" for IKEv2),
        /// which the on-demand rules and kill-switch flags join.
        public var settingsKey = "VPN"
        public var settings: [String: PropertyList] = [:]
        /// Payloads of their own (an identity, a CA), before it in PayloadContent.
        public var others: [PropertyList] = []
        /// What Apple's keys cannot say; the PayloadDescription names it.
        public var notExpressible: [String] = []
    }

    /// `secret(name)` gives a secret's value, or nil to leave it out;
    /// `anchor(fingerprint)` gives an installed anchor's PEM.
    public static func export(_ p: Profile, as format: Format, secret: (String) -> [UInt8]?,
                              anchor: (String) throws -> String) throws -> Output {
        var leftOut: [String] = []
        func value(_ name: String?) -> String? {
            guard let name else { return nil }
            if let v = secret(name) { return String(decoding: v, as: UTF8.self) }
            if !leftOut.contains(name) { leftOut.append(name) }
            return nil
        }
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            var out = Array(try encoder.encode(p)) + [0x0A]
            leftOut = p.secretReferences.map(\.name)
            if out.isEmpty { out = [] }
            return Output(bytes: out, secretsLeftOut: leftOut)
        case .wgQuick, .ovpn:
            let model = p.protocol.model
            guard model.exportFormats.contains(format),
                  var text = try model.exportedText(as: format, secret: value, anchor: anchor) else { throw notFor(p, format) }
            text = "\(ExportMarker.idPrefix)\(p.id.lowercasedString)\n" + text
            if !leftOut.isEmpty { text = "\(ExportMarker.prefix)\(leftOut.joined(separator: ", "))\n" + text }
            return Output(bytes: Array(text.utf8), secretsLeftOut: leftOut)
        case .mobileconfig:
            let plist = try mobileconfig(p, secret: value, anchor: anchor, leftOut: { leftOut })
            return Output(bytes: Array(plist.xmlDocument().utf8), secretsLeftOut: leftOut)
        }
    }

    /// A format that is not the profile's own, refused naming the protocol it is for.
    static func notFor(_ p: Profile, _ f: Format) -> VPNError {
        let kind = p.protocol.kind.rawValue, target = f == .wgQuick ? "wireguard" : "openvpn"
        // "an openvpn", "an ikev2": the article goes by the name's first letter.
        return VPNError(.usage, kind.first.map("aeiou".contains) == true
                            ? L("'\(p.name)' is an \(kind) profile; --format \(f.rawValue) is for \(target) profiles")
                            : L("'\(p.name)' is a \(kind) profile; --format \(f.rawValue) is for \(target) profiles"),
                        hint: L("use --format \(p.protocol.model.defaultExportFormat.rawValue), mobileconfig or json"))
    }

    /// An .ovpn with inline blocks, as the .ovpn importer reads it.
    static func ovpn(_ o: OpenVPNConfiguration, secret: (String?) -> String?, anchor: (String) throws -> String) throws -> String {
        var lines = ["client", "dev tun"]
        for r in o.remotes { lines.append("remote \(r.host) \(r.port) \(r.proto)") }
        if o.username != nil || o.passwordSecret != nil { lines.append("auth-user-pass") }
        if let c = o.staticChallenge { lines.append("static-challenge \(OpenVPNDirectives.quote(c.text)) \(c.echo ? 1 : 0)") }
        lines += o.options
        if let u = o.username { lines.insert("\(ExportMarker.usernamePrefix)\(u) (import with --username \(u))", at: 0) }
        func block(_ tag: String, _ body: String?) {
            guard let body else { return }
            lines.append("<\(tag)>\n\(body.hasSuffix("\n") ? body : body + "\n")</\(tag)>")
        }
        block("ca", o.caFingerprints.isEmpty ? nil : try o.caFingerprints.map(anchor).joined())
        block("cert", o.certificate)
        block("key", secret(o.keySecret))
        block("tls-crypt", secret(o.tlsCryptSecret))
        block("tls-auth", secret(o.tlsAuthSecret))
        block("tls-crypt-v2", secret(o.tlsCryptV2Secret))
        _ = secret(o.passwordSecret)
        return lines.joined(separator: "\n") + "\n"
    }

    static func onDemand(_ o: OnDemand, into d: inout [String: PropertyList]) {
        guard o.enabled || !o.rules.isEmpty else { return }
        d["OnDemandEnabled"] = .integer(o.enabled ? 1 : 0)
        let actions: [OnDemandRule.Action: String] = [.connect: "Connect", .disconnect: "Disconnect",
                                                      .evaluateConnection: "EvaluateConnection", .ignore: "Ignore"]
        let types: [OnDemandRule.InterfaceType: String] = [.ethernet: "Ethernet", .wifi: "WiFi", .cellular: "Cellular", .any: "Any"]
        d["OnDemandRules"] = .array(o.rules.map { r in
            var rule: [String: PropertyList] = ["Action": .string(actions[r.action]!)]
            if let t = r.interfaceType { rule["InterfaceTypeMatch"] = .string(types[t]!) }
            if let ds = r.dnsSearchDomains { rule["DNSDomainMatch"] = .array(ds.map(PropertyList.string)) }
            if let s = r.ssids { rule["SSIDMatch"] = .array(s.map(PropertyList.string)) }
            if let a = r.dnsServerAddresses { rule["DNSServerAddressMatch"] = .array(a.map(PropertyList.string)) }
            if let u = r.probeURL { rule["URLStringProbe"] = .string(u) }
            return .dict(rule)
        })
    }

    /// IncludeAllNetworks, ExcludeLocalNetworks, EnforceRoutes, where set.
    static func flags(_ p: Profile, into d: inout [String: PropertyList]) {
        if p.includeAllNetworks { d["IncludeAllNetworks"] = .integer(1) }
        if p.excludeLocalNetworks { d["ExcludeLocalNetworks"] = .integer(1) }
        if p.enforceRoutes { d["EnforceRoutes"] = .integer(1) }
    }

    /// Proposals (the first of each list, when Apple's vocabulary can say
    /// it), DPD, MOBIKE, PFS and MTU. What Apple's keys cannot say is named.
    static func ikev2Tuning(_ i: IKEv2Configuration, into ike: inout [String: PropertyList], notExpressible: inout [String]) {
        for (key, list, isIKE) in [("IKESecurityAssociationParameters", i.ikeProposals, true),
                                   ("ChildSecurityAssociationParameters", i.childProposals, false)] {
            guard let list, let first = list.first else {
                if let m = i.lifetimeMinutes { ike[key] = .dict(["LifeTimeInMinutes": .integer(Int64(m))]) }
                continue
            }
            if let d = AppleIKEv2Parameters.dictionary(first, ike: isIKE, lifetimeMinutes: i.lifetimeMinutes) { ike[key] = .dict(d) }
            else { notExpressible.append("\(isIKE ? "IKE" : "child") proposal '\(first)'") }
            if list.count > 1 { notExpressible.append("\(isIKE ? "IKE" : "child") proposals after the first (\(list.dropFirst().joined(separator: ", ")))") }
        }
        if let r = i.deadPeerDetectionRate { ike["DeadPeerDetectionRate"] = .string(r.rawValue.prefix(1).uppercased() + r.rawValue.dropFirst()) }
        if i.disableMOBIKE == true { ike["DisableMOBIKE"] = .integer(1) }
        if i.enablePFS == true { ike["EnablePFS"] = .integer(1) }
        if let m = i.mtu { ike["MTU"] = .integer(Int64(m)) }
        if let ts = i.remoteTrafficSelectors { notExpressible.append("remote traffic selectors (\(ts.joined(separator: ", ")))") }
    }

    /// One configuration profile holding the profile's VPN payload (and its
    /// trust anchor, for IKEv2), as `MobileConfig.read` reads it back.
    static func mobileconfig(_ p: Profile, secret: (String?) -> String?, anchor: (String) throws -> String,
                             leftOut: () -> [String]) throws -> PropertyList {
        let identifier = p.origin?.profileIdentifier ?? "vpnctl.\(p.id.lowercasedString)"
        let payloadID = p.origin?.payloadIdentifier ?? "\(identifier).vpn"
        var vpn = VPNPayload(profile: p, payloadID: payloadID, keys: [
            "PayloadType": .string("com.apple.vpn.managed"), "PayloadVersion": .integer(1),
            "PayloadIdentifier": .string(payloadID), "PayloadUUID": .string(p.id.uuidString),
            "PayloadDisplayName": .string(p.name), "UserDefinedName": .string(p.name),
        ])
        try p.protocol.model.writeVPNPayload(&vpn, secret: secret, anchor: anchor)
        onDemand(p.onDemand, into: &vpn.settings)
        flags(p, into: &vpn.settings)
        if !vpn.settings.isEmpty { vpn.keys[vpn.settingsKey] = .dict(vpn.settings) }
        if let d = p.dnsSettings, !d.isEmpty {
            var dns: [String: PropertyList] = [:]
            if !d.servers.isEmpty { dns["ServerAddresses"] = .array(d.servers.map(PropertyList.string)) }
            if !d.searchDomains.isEmpty { dns["SearchDomains"] = .array(d.searchDomains.map(PropertyList.string)) }
            if !d.matchDomains.isEmpty { dns["SupplementalMatchDomains"] = .array(d.matchDomains.map(PropertyList.string)) }
            vpn.keys["DNS"] = .dict(dns)
        }
        var top: [String: PropertyList] = [
            "PayloadType": .string("Configuration"), "PayloadVersion": .integer(1), "PayloadIdentifier": .string(identifier),
            "PayloadUUID": .string(UUID().uuidString), "PayloadDisplayName": .string(p.name),
            "PayloadContent": .array(vpn.others + [.dict(vpn.keys)]),
        ]
        let missing = leftOut()
        var description: [String] = []
        if !missing.isEmpty { description.append("secrets left out: \(missing.joined(separator: ", "))") }
        if !vpn.notExpressible.isEmpty { description.append("not expressible in Apple's keys: \(vpn.notExpressible.joined(separator: "; "))") }
        if !description.isEmpty { top["PayloadDescription"] = .string("Exported by vpnctl; " + description.joined(separator: "; ")) }
        return .dict(top)
    }

    /// OpenVPN Connect's VendorConfig: a key per directive (repeats numbered), inline files.
    static func openVPNPayload(_ o: OpenVPNConfiguration, into m: inout VPNPayload,
                               secret: (String?) -> String?, anchor: (String) throws -> String) throws {
        m.keys["VPNType"] = .string("VPN")
        m.keys["VPNSubType"] = .string("net.openvpn.connect.app")
        var vendor: [String: PropertyList] = ["client": .string("NOARGS"), "dev": .string("tun")]
        for (i, r) in o.remotes.enumerated() { vendor["remote.\(i + 1)"] = .string("\(r.host) \(r.port) \(r.proto)") }
        var counts: [String: Int] = [:]
        for option in o.options {
            let words = OpenVPNDirectives.tokenize(option) ?? []
            guard let name = words.first else { continue }
            let rest = words.dropFirst().joined(separator: " ")
            counts[name, default: 0] += 1
            let key = counts[name]! == 1 ? name : "\(name).\(counts[name]!)"
            vendor[key] = .string(rest.isEmpty ? "NOARGS" : rest)
        }
        if counts.values.contains(where: { $0 > 1 }) {
            // Every occurrence numbered, so the importer keeps their order.
            for (name, n) in counts where n > 1 {
                vendor["\(name).1"] = vendor.removeValue(forKey: name)
            }
        }
        // The importer ends each inline file with one line break: write none.
        func inline(_ s: String) -> PropertyList {
            var body = Substring(s)
            while body.last == "\n" { body = body.dropLast() }
            return .string(String(body).replacingAll("\n", with: "\\n"))
        }
        if !o.caFingerprints.isEmpty { vendor["ca"] = inline(try o.caFingerprints.map(anchor).joined()) }
        if let c = o.certificate { vendor["cert"] = inline(c) }
        if let k = secret(o.keySecret) { vendor["key"] = inline(k) }
        if let k = secret(o.tlsCryptSecret) { vendor["tls-crypt"] = inline(k) }
        if let k = secret(o.tlsAuthSecret) { vendor["tls-auth"] = inline(k) }
        if let k = secret(o.tlsCryptV2Secret) { vendor["tls-crypt-v2"] = inline(k) }
        if o.username != nil || o.passwordSecret != nil { vendor["auth-user-pass"] = .string("NOARGS") }
        if let c = o.staticChallenge { vendor["static-challenge"] = .string("\(OpenVPNDirectives.quote(c.text)) \(c.echo ? 1 : 0)") }
        if let u = o.username { m.settings["AuthName"] = .string(u) }
        if let pw = secret(o.passwordSecret) { m.settings["AuthPassword"] = .string(pw) }
        m.keys["VendorConfig"] = .dict(vendor)
        m.settings["RemoteAddress"] = .string("DEFAULT")
        m.settings["AuthenticationMethod"] = .string(o.certificate != nil ? "Certificate" : "Password")
    }

    /// WireGuard's app reads its wg-quick file from VendorConfig.
    static func wireGuardPayload(_ w: WireGuardConfiguration, into m: inout VPNPayload, secret: (String?) -> String?) {
        m.keys["VPNType"] = .string("VPN")
        m.keys["VPNSubType"] = .string("com.wireguard.ios")
        m.keys["VendorConfig"] = .dict(["WgQuickConfig": .string(WGQuick.export(w, secret: { secret($0) }))])
        m.settings["RemoteAddress"] = .string(w.peers.first?.endpoint ?? "")
        m.settings["AuthenticationMethod"] = .string("Password")
    }

    /// A provider's configuration as its VendorConfig, secrets inline; the
    /// secret "password" under the key "password" is Apple's AuthPassword.
    /// The secrets are asked for in key order, so the ones left out are
    /// named in the same order on every run (and as the JSON export names them).
    static func providerPayload(_ pr: ProviderConfiguration, into m: inout VPNPayload, secret: (String?) -> String?) {
        m.keys["VPNType"] = .string("VPN")
        m.keys["VPNSubType"] = .string(pr.providerIdentifier)
        var vendor = pr.providerConfiguration.mapValues(PropertyList.string)
        for (key, name) in pr.secrets.sorted(by: { $0.key < $1.key }) {
            guard let v = secret(name) else { continue }
            if key == "password" && name == "password" { m.settings["AuthPassword"] = .string(v) } else { vendor[key] = .string(v) }
        }
        m.keys["VendorConfig"] = .dict(vendor)
    }

    /// The IKEv2 dictionary: server, identities, authentication (a PKCS#12
    /// identity payload and the CA as payloads of their own, in `others`),
    /// then the tuning.
    static func ikev2Payload(_ i: IKEv2Configuration, into m: inout VPNPayload, secret: (String?) -> String?,
                             anchor: (String) throws -> String) throws {
        m.keys["VPNType"] = .string("IKEv2")
        let payloadID = m.payloadID, p = m.profile
        var ike: [String: PropertyList] = ["RemoteAddress": .string(i.serverAddress)]
        if let r = i.remoteIdentifier { ike["RemoteIdentifier"] = .string(r) }
        if let l = i.localIdentifier { ike["LocalIdentifier"] = .string(l) }
        switch i.authenticationMethod {
        case .none: ike["AuthenticationMethod"] = .string("None")
        case .sharedSecret:
            ike["AuthenticationMethod"] = .string("SharedSecret")
            if let s = secret(i.sharedSecretSecret) { ike["SharedSecret"] = .string(s) }
        case .certificate:
            ike["AuthenticationMethod"] = .string("Certificate")
            if let identity = secret(i.identitySecret) {
                // The file holds secrets already: the PKCS#12 password goes beside it.
                var rng = SystemRandomNumberGenerator()
                let password = (0..<16).map { _ in String(UInt8.random(in: 0...255, using: &rng), radix: 16) }.joined()
                let uuid = UUID().uuidString
                let p12 = try Crypto.pkcs12(identityPEM: Array(identity.utf8), password: password)
                m.others.append(.dict(["PayloadType": .string("com.apple.security.pkcs12"), "PayloadVersion": .integer(1),
                                       "PayloadIdentifier": .string("\(payloadID).identity"), "PayloadUUID": .string(uuid),
                                       "PayloadDisplayName": .string("Identity of \(p.name)"), "Password": .string(password),
                                       "PayloadContent": .data(p12)]))
                ike["PayloadCertificateUUID"] = .string(uuid)
            }
        }
        if let u = i.username {
            ike["ExtendedAuthEnabled"] = .integer(1)
            ike["AuthName"] = .string(u)
            if let pw = secret(i.passwordSecret) { ike["AuthPassword"] = .string(pw) }
        }
        if let fp = i.caFingerprint {
            let pem = try anchor(fp)
            if let der = PEM.blocks(pem).first?.der {
                m.others.append(.dict(["PayloadType": .string("com.apple.security.root"), "PayloadVersion": .integer(1),
                                       "PayloadIdentifier": .string("\(payloadID).ca"), "PayloadUUID": .string(UUID().uuidString),
                                       "PayloadDisplayName": .string("CA \(fp.prefix(16))"), "PayloadContent": .data(der)]))
            }
        }
        ikev2Tuning(i, into: &ike, notExpressible: &m.notExpressible)
        m.settingsKey = "IKEv2"
        m.settings = ike
    }
}

/// The first line of an export that leaves secrets out. `import` reads it
/// back: the secrets it names become the profile's unset secrets (set them
/// with `vpnctl secret set`), so the file the advice was given for imports.
public enum ExportMarker {
    public static let prefix = "# secrets left out (vpnctl export --include-secrets, as root): "
    /// The exported profile's id, for `import --keep-id` (one of the first lines).
    public static let idPrefix = "# vpnctl profile id: "

    /// An OpenVPN export's username (auth-user-pass has no place for it in the file).
    public static let usernamePrefix = "# username: "

    /// The username of an export's "# username: NAME (import with --username NAME)" line, or nil.
    public static func username(in line: String) -> String? {
        guard line.hasPrefix(usernamePrefix), let end = line.firstRange(of: " (import with --username ") else { return nil }
        let name = String(line[line.index(line.startIndex, offsetBy: usernamePrefix.count)..<end.lowerBound])
        guard !name.isEmpty, line.hasSuffix(" (import with --username \(name))"),
              name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else { return nil }
        return name
    }

    /// The note an import of such an export makes.
    public static func unsetNote(_ names: [String]) -> String {
        L("secrets the file leaves out (a vpnctl export), unset until 'vpnctl secret set': \(names.joined(separator: ", "))")
    }

    /// The profile id an export names in one of its first three lines, or nil.
    public static func profileID(in text: String) -> UUID? {
        for line in text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).prefix(3)
        where line.hasPrefix(idPrefix) {
            return UUID(uuidString: String(line.dropFirst(idPrefix.count)).trimmedWhitespace)
        }
        return nil
    }

    /// The secret names of a marker line, or nil for any other line.
    public static func secrets(in line: Substring) -> [String]? {
        guard line.hasPrefix(prefix) else { return nil }
        return line.dropFirst(prefix.count).split(separator: ",").map { $0.trimmedWhitespace }
            .filter(SecretStore.isValidName)
    }
}
