import FoundationEssentials

/// Apple configuration profiles (.mobileconfig): a `Configuration` property
/// list (XML or binary, signed or not) whose payloads become profiles, trust
/// anchors and identities. Each VPN payload goes through the importer of its
/// transport (wg-quick, .ovpn) with the same refusals; a profile with one bad
/// payload imports nothing, and the message names the payload.
public enum MobileConfig {
    /// What one VPN payload became.
    public struct Item: Sendable {
        public var payloadIdentifier: String
        public var payloadName: String
        public var result: ImportResult
    }

    /// A whole configuration profile, read and mapped; nothing stored yet.
    public struct Contents: Sendable {
        /// The profile's PayloadIdentifier: a re-import with the same one replaces what it made.
        public var identifier: String
        public var displayName: String?
        /// The signer's certificate, when the profile was signed (and its signature checked).
        public var signer: Crypto.Certificate?
        /// Whether the signer was also checked against `--ca`.
        public var chainVerified = false
        public var items: [Item] = []
        /// Certificates of the trust payloads (com.apple.security.root, pkcs1, pem).
        public var anchors: [Crypto.Certificate] = []
        public var notes: [String] = []
    }

    public struct Options: Sendable {
        /// The profile name, when the file has exactly one VPN payload.
        public var name: String?
        public var username: String?
        /// `--ca`: the signer must chain to one of these.
        public var signerAnchors: [Crypto.Certificate]?
        /// The password of PKCS#12 payloads that carry no Password of their own.
        public var identityPassword: String?
        public init(name: String? = nil, username: String? = nil, signerAnchors: [Crypto.Certificate]? = nil, identityPassword: String? = nil) {
            self.name = name
            self.username = username
            self.signerAnchors = signerAnchors
            self.identityPassword = identityPassword
        }
    }

    /// Whether `bytes` are a configuration profile: a signed one, or a property list.
    public static func recognizes(_ bytes: [UInt8]) -> Bool {
        Crypto.looksLikeCMS(bytes) || PropertyList.looksLike(bytes)
    }

    static let vpnType = "com.apple.vpn.managed"
    static let trustTypes: Set<String> = ["com.apple.security.root", "com.apple.security.pkcs1", "com.apple.security.pem"]
    /// A VendorConfig key's directive and its repeat number: `remote.2` is ("remote", 2).
    static func directiveOrder(_ k: String) -> (String, Int) {
        if let dot = k.lastIndex(of: "."), let n = Int(k[k.index(after: dot)...]) { return (String(k[..<dot]), n) }
        return (k, 0)
    }

    static let identityType = "com.apple.security.pkcs12"
    static let openVPNSubTypes: Set<String> = ["net.openvpn.connect.app", "net.openvpn.OpenVPN-Connect.vpnplugin"]

    /// Reads, checks and maps a configuration profile. `defaultName` names a
    /// VPN payload without UserDefinedName or PayloadDisplayName.
    public static func read(_ bytes: [UInt8], source: String, defaultName: String, options: Options = Options()) throws -> Contents {
        let (plist, signer, chainVerified) = try propertyList(bytes, source: source, signerAnchors: options.signerAnchors)
        var mapper = Mapper(source: source, defaultName: defaultName, options: options)
        var contents = try mapper.map(plist)
        contents.signer = signer
        contents.chainVerified = chainVerified
        return contents
    }

    /// The property list inside a configuration profile, its signature checked when it has one.
    static func propertyList(_ bytes: [UInt8], source: String, signerAnchors: [Crypto.Certificate]?) throws
        -> (PropertyList, signer: Crypto.Certificate?, chainVerified: Bool) {
        let options = Options(signerAnchors: signerAnchors)
        var plistBytes = bytes
        var signer: Crypto.Certificate? = nil
        var chainVerified = false
        if Crypto.looksLikeCMS(bytes) {
            do {
                let signed = try Crypto.verifySigned(bytes, anchors: options.signerAnchors)
                plistBytes = signed.content
                signer = signed.signer
                chainVerified = signed.chainVerified
            } catch let p as Crypto.Problem {
                throw VPNError(.configurationInvalid, L("\(source): signed profile refused: \(p.message)"),
                               hint: p.message.contains("chain") ? "check --ca names the CA that issued the signer's certificate"
                                   : "get an unaltered copy of the profile from its publisher")
            }
        } else if options.signerAnchors != nil {
            throw VPNError(.configurationInvalid, L("\(source) is not signed, so --ca cannot check its signer"),
                           hint: L("import it without --ca, or ask its publisher for a signed copy"))
        }
        let plist: PropertyList
        do {
            plist = try PropertyList.parse(plistBytes)
        } catch let p as PropertyList.Problem {
            throw VPNError(.configurationInvalid, L("\(source) is not a readable configuration profile: \(p.message)"),
                           hint: L("check the file is a .mobileconfig (plutil -lint FILE on a Mac)"))
        }
        return (plist, signer, chainVerified)
    }

    /// One PKCS#12 identity payload (com.apple.security.pkcs12), not opened yet.
    public struct IdentityPayload: Sendable {
        /// PayloadDisplayName, else PayloadIdentifier, else PayloadUUID.
        public var name: String
        public var identifier: String?
        public var uuid: String?
        public var content: [UInt8]
        /// The payload's own Password, when it carries one.
        public var password: String?

        /// Whether `reference` names this payload: by display name, identifier or UUID.
        public func isNamed(_ reference: String) -> Bool {
            [name, identifier, uuid].contains { $0 == reference }
        }
    }

    /// The identity payloads of a configuration profile, in file order.
    public static func identityPayloads(_ bytes: [UInt8], source: String) throws -> [IdentityPayload] {
        let (plist, _, _) = try propertyList(bytes, source: source, signerAnchors: nil)
        guard let content = plist.dict?["PayloadContent"]?.array else {
            throw VPNError(.configurationInvalid, L("\(source): PayloadContent is missing or not an array of payloads"))
        }
        var found: [IdentityPayload] = []
        for (i, value) in content.enumerated() {
            guard let p = value.dict, p["PayloadType"]?.string == identityType else { continue }
            guard let data = p["PayloadContent"]?.data else {
                throw VPNError(.configurationInvalid, L("\(source): payload \(i + 1): PayloadContent is missing or not data (the PKCS#12 file)"))
            }
            let identifier = p["PayloadIdentifier"]?.string, uuid = p["PayloadUUID"]?.string
            found.append(IdentityPayload(name: p["PayloadDisplayName"]?.string ?? identifier ?? uuid ?? "payload \(i + 1)",
                                         identifier: identifier, uuid: uuid, content: data, password: p["Password"]?.string))
        }
        return found
    }

    /// The identity payload `reference` names (nil: the only one).
    public static func identityPayload(_ bytes: [UInt8], source: String, named reference: String?) throws -> IdentityPayload {
        let all = try identityPayloads(bytes, source: source)
        let names = all.map { $0.name.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage }.joined(separator: ", ")
        if let reference {
            guard let one = all.first(where: { $0.isNamed(reference) }) else {
                throw VPNError(.usage, all.isEmpty ? L("\(source) holds no identity (com.apple.security.pkcs12) payload")
                                                   : L("\(source) has no identity payload named \(reference.quotedForMessage); it has \(names)"),
                               hint: all.isEmpty ? nil : L("name one by its PayloadDisplayName, PayloadIdentifier or PayloadUUID"))
            }
            return one
        }
        switch all.count {
        case 0:
            throw VPNError(.configurationInvalid, L("\(source) holds no identity (com.apple.security.pkcs12) payload"),
                           hint: L("give the client certificate as --identity FILE.p12, or --cert and --key (PEM)"))
        case 1: return all[0]
        default:
            throw VPNError(.usage, L("\(source) holds \(all.count) identities (PKCS#12 \(names)); say which with --identity-payload NAME"),
                           hint: L("name one by its PayloadDisplayName, PayloadIdentifier or PayloadUUID"))
        }
    }

    /// A flag as real files write it: a boolean, an integer or a real.
    static func flag(_ v: PropertyList?) -> Bool? {
        switch v {
        case .bool(let b): return b
        case .integer(let i): return i != 0
        case .real(let r): return r != 0
        default: return nil
        }
    }

    /// A text value as a provider configuration holds it.
    static func text(_ v: PropertyList) -> String? {
        switch v {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .real(let r): return r == r.rounded() && abs(r) < 1e15 ? String(Int64(r)) : String(r)
        case .bool(let b): return b ? "true" : "false"
        default: return nil
        }
    }

    /// Keys of a provider's VendorConfig whose values are kept as secrets.
    static func looksSecret(_ key: String) -> Bool {
        let k = key.lowercased()
        return ["password", "secret", "privatekey", "private-key", "private_key", "token", "psk", "passphrase"].contains { k.contains($0) }
    }

    static func secretName(for key: String) -> String {
        let cleaned = String(key.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "-" }.prefix(56))
        return "vendor-" + (cleaned.isEmpty ? "value" : cleaned)
    }

    struct Mapper {
        let source: String
        let defaultName: String
        let options: Options
        var problems: [String] = []
        var notes: [String] = []
        var anchors: [Crypto.Certificate] = []
        /// PKCS#12 payloads by PayloadUUID.
        var identities: [String: Crypto.Identity] = [:]
        /// PayloadUUIDs of PKCS#12 payloads that could not be opened (already reported).
        var brokenIdentities = Set<String>()
        /// PayloadUUIDs of PKCS#12 payloads a VPN payload uses.
        var usedIdentities = Set<String>()

        init(source: String, defaultName: String, options: Options) {
            self.source = source
            self.defaultName = defaultName
            self.options = options
        }

        /// "payload 'Name' (identifier)", for messages.
        func label(_ p: [String: PropertyList], index: Int) -> String {
            let name = p["PayloadDisplayName"]?.string ?? p["UserDefinedName"]?.string
            let id = p["PayloadIdentifier"]?.string
            switch (name, id) {
            case let (n?, i?): return "payload \(n.quotedForMessage) (\(i.quotedForMessage))"
            case let (n?, nil): return "payload \(n.quotedForMessage)"
            case let (nil, i?): return "payload \(i.quotedForMessage)"
            default: return "payload \(index + 1)"
            }
        }

        mutating func map(_ plist: PropertyList) throws -> Contents {
            guard let top = plist.dict else {
                throw VPNError(.configurationInvalid, L("\(source): the property list is \(plist.kindName), not a configuration profile (a dictionary)"))
            }
            let (identifier, content) = try readTop(top)

            var payloads: [(String, [String: PropertyList])] = []
            for (i, value) in content.enumerated() {
                guard let p = value.dict else {
                    problems.append(L("payload \(i + 1): \(value.kindName), not a dictionary"))
                    continue
                }
                payloads.append((label(p, index: i), p))
            }
            // Certificates and identities first: VPN payloads refer to them.
            for (label, p) in payloads {
                let type = p["PayloadType"]?.string ?? ""
                if MobileConfig.trustTypes.contains(type) { readAnchor(p, label) }
                else if type == MobileConfig.identityType { readIdentity(p, label) }
            }
            try refuseIdentitiesOnly(payloads)
            let items = readVPNPayloads(payloads)
            if options.name != nil && items.count > 1 {
                throw VPNError.usage(L("--name names one profile, and \(source) has \(items.count) VPN payloads"),
                                     hint: L("import it without --name: each payload's UserDefinedName names its profile"))
            }
            if !problems.isEmpty {
                throw VPNError.invalid(problems.count == 1 ? L("\(source) cannot be imported (1 problem); nothing was imported")
                                      : L("\(source) cannot be imported (\(problems.count) problems); nothing was imported"),
                                       problems: problems, hint: L("fix the profile and import it again"))
            }
            if items.isEmpty && anchors.isEmpty {
                throw VPNError(.configurationInvalid, L("\(source) has no VPN or certificate payload; nothing to import"))
            }
            var c = Contents(identifier: identifier, displayName: top["PayloadDisplayName"]?.string)
            c.items = items
            c.anchors = anchors
            c.notes = notes
            return c
        }

        /// The profile's own keys: its type, identifier and version; its payloads.
        mutating func readTop(_ top: [String: PropertyList]) throws -> (identifier: String, content: [PropertyList]) {
            if MobileConfig.flag(top["IsEncrypted"]) == true || top["EncryptedPayloadContent"] != nil {
                throw VPNError(.configurationInvalid, L("\(source) is an encrypted profile (IsEncrypted): its payloads are encrypted for one device's key, which vpnctl does not have"),
                               hint: L("ask the publisher (your MDM) for an unencrypted export of the profile"))
            }
            guard let type = top["PayloadType"]?.string else {
                throw VPNError(.configurationInvalid, L("\(source): no PayloadType; a configuration profile's is 'Configuration'"))
            }
            guard type == "Configuration" else {
                throw VPNError(.configurationInvalid, L("\(source): PayloadType is \(type.quotedForMessage), not 'Configuration'"),
                               hint: L("vpnctl imports whole configuration profiles (.mobileconfig)"))
            }
            guard let identifier = top["PayloadIdentifier"]?.string, !identifier.isEmpty else {
                throw VPNError(.configurationInvalid, L("\(source): the profile has no PayloadIdentifier"),
                               hint: L("every configuration profile names itself with a PayloadIdentifier; add one"))
            }
            if let v = top["PayloadVersion"], MobileConfig.text(v).flatMap(Double.init) != 1 {
                problems.append(L("PayloadVersion \(MobileConfig.text(v) ?? v.kindName) is not 1"))
            }
            guard let content = top["PayloadContent"]?.array else {
                throw VPNError(.configurationInvalid, L("\(source): PayloadContent is missing or not an array of payloads"))
            }
            let topKnown: Set<String> = ["PayloadType", "PayloadVersion", "PayloadIdentifier", "PayloadUUID", "PayloadDisplayName",
                                         "PayloadDescription", "PayloadOrganization", "PayloadContent", "PayloadRemovalDisallowed",
                                         "PayloadScope", "PayloadDate", "PayloadExpirationDate", "RemovalDate", "DurationUntilRemoval",
                                         "ConsentText", "HasRemovalPasscode", "IsEncrypted", "TargetDeviceType", "PayloadEnabled"]
            let unknown = top.keys.filter { !topKnown.contains($0) }.sorted()
            if !unknown.isEmpty { notes.append("profile: unknown keys, not imported: \(unknown.joined(separator: ", "))") }
            return (identifier, content)
        }

        /// A file of identities alone is for `create --identity`, not for import.
        func refuseIdentitiesOnly(_ payloads: [(String, [String: PropertyList])]) throws {
            let types = payloads.map { $0.1["PayloadType"]?.string ?? "" }
            let identityNames = payloads.filter { $0.1["PayloadType"]?.string == MobileConfig.identityType }
                .map { ($0.1["PayloadDisplayName"]?.string ?? $0.1["PayloadIdentifier"]?.string ?? $0.1["PayloadUUID"]?.string ?? "?") }
            if !identityNames.isEmpty && !types.contains(where: { $0 == MobileConfig.vpnType || $0 == "com.apple.vpn.managed.applayer" || MobileConfig.trustTypes.contains($0) }) {
                let shown = identityNames.map { $0.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage }
                let file = source.escapingControls(keepLineBreaks: false)
                throw VPNError(.configurationInvalid, identityNames.count == 1
                    ? L("\(source) holds only an identity (PKCS#12 \(shown[0])); use it with vpnctl create NAME ikev2 --identity \(file)")
                    : L("\(source) holds only identities (PKCS#12 \(shown.joined(separator: ", "))); use one with vpnctl create NAME ikev2 --identity \(file) --identity-payload \(shown[0])"))
            }
        }

        /// The VPN payloads, each a profile (names and identifiers distinct);
        /// other payloads are noted.
        mutating func readVPNPayloads(_ payloads: [(String, [String: PropertyList])]) -> [Item] {
            var items: [Item] = []
            for (label, p) in payloads {
                guard let type = p["PayloadType"]?.string else {
                    problems.append(L("\(label): no PayloadType"))
                    continue
                }
                if type == MobileConfig.vpnType {
                    if let item = readVPN(p, label) { items.append(item) }
                } else if type == "com.apple.vpn.managed.applayer" {
                    problems.append(L("\(label): per-app VPN (com.apple.vpn.managed.applayer) names apps by Apple bundle identifier, which no Linux program has: import a com.apple.vpn.managed payload, then give the profile appRules (systemd units or cgroups) with 'vpnctl edit'"))
                } else if !MobileConfig.trustTypes.contains(type) && type != MobileConfig.identityType {
                    notes.append("\(label): a \(type.quotedForMessage) payload is not imported (vpnctl takes VPN, certificate and identity payloads)")
                }
            }
            var seenNames: [String: String] = [:], seenIDs = Set<String>()
            for item in items {
                if let other = seenNames[item.result.profile.name] {
                    problems.append(L("\(item.payloadName): its profile name '\(item.result.profile.name)' is also \(other)'s; give the payloads distinct UserDefinedName values"))
                }
                seenNames[item.result.profile.name] = item.payloadName
                if !seenIDs.insert(item.payloadIdentifier).inserted {
                    problems.append(L("\(item.payloadName): a second VPN payload with PayloadIdentifier \(item.payloadIdentifier.quotedForMessage)"))
                }
            }
            for (label, p) in payloads where p["PayloadType"]?.string == MobileConfig.identityType {
                if let uuid = p["PayloadUUID"]?.string, !usedIdentities.contains(uuid), !brokenIdentities.contains(uuid) {
                    notes.append(L("\(label): no VPN payload uses this identity, so it is not imported; use it with vpnctl create NAME ikev2 --identity FILE"))
                }
            }
            return items
        }

        // MARK: Certificates

        mutating func readAnchor(_ p: [String: PropertyList], _ label: String) {
            guard let data = p["PayloadContent"]?.data else {
                problems.append(L("\(label): PayloadContent is missing or not data (the certificate)"))
                return
            }
            let text = String(decoding: data, as: UTF8.self)
            do {
                let certs: [Crypto.Certificate]
                if text.containsUTF8("-----BEGIN ") {
                    if text.containsUTF8("PRIVATE KEY-----") {
                        problems.append(L("\(label): it holds a private key; a trust payload holds certificates only (treat the key as exposed)"))
                        return
                    }
                    certs = try Crypto.certificates(pem: text)
                    if certs.isEmpty { problems.append(L("\(label): no PEM certificate in it")); return }
                } else {
                    certs = [try Crypto.certificate(der: data)]
                }
                for cert in certs where !anchors.contains(where: { $0.der == cert.der }) { anchors.append(cert) }
            } catch let e as Crypto.Problem {
                problems.append("\(label): \(e.message)")
            } catch {
                problems.append("\(label): \(error)")
            }
        }

        mutating func readIdentity(_ p: [String: PropertyList], _ label: String) {
            guard let data = p["PayloadContent"]?.data else {
                problems.append(L("\(label): PayloadContent is missing or not data (the PKCS#12 file)"))
                return
            }
            guard let uuid = p["PayloadUUID"]?.string else {
                problems.append(L("\(label): no PayloadUUID, so no VPN payload can refer to this identity"))
                return
            }
            guard let password = p["Password"]?.string ?? options.identityPassword else {
                brokenIdentities.insert(uuid)
                problems.append(L("\(label): no Password for the PKCS#12 file; give it with --identity-password-stdin (or add Password to the payload)"))
                return
            }
            do {
                identities[uuid] = try Crypto.pkcs12(data, password: password)
            } catch let e as Crypto.Problem {
                problems.append("\(label): \(e.message)")
                brokenIdentities.insert(uuid)
            } catch {
                problems.append("\(label): \(error)")
                brokenIdentities.insert(uuid)
            }
        }

        // MARK: VPN payloads

        static let vpnPayloadKeys: Set<String> = [
            "PayloadType", "PayloadVersion", "PayloadIdentifier", "PayloadUUID", "PayloadDisplayName", "PayloadDescription",
            "PayloadOrganization", "PayloadEnabled", "UserDefinedName", "VPNType", "VPNSubType", "VendorConfig", "VPN", "IKEv2", "IPv4",
            "DNS", "Proxies", "OnDemandEnabled", "OnDemandRules", "VPNUUID", "OverridePrimary",
        ]

        mutating func readVPN(_ p: [String: PropertyList], _ label: String) -> Item? {
            guard let identifier = p["PayloadIdentifier"]?.string, !identifier.isEmpty else {
                problems.append(L("\(label): no PayloadIdentifier (a re-import finds its profile by it)"))
                return nil
            }
            let name = options.name ?? p["UserDefinedName"]?.string ?? p["PayloadDisplayName"]?.string ?? defaultName
            if let problem = ProfileName.problems(name).first {
                problems.append("\(label): the profile name \(name.quotedForMessage) \(problem)")
                return nil
            }
            let unknown = p.keys.filter { !Self.vpnPayloadKeys.contains($0) }.sorted()
            if !unknown.isEmpty { notes.append("\(label): unknown keys, not imported: \(unknown.joined(separator: ", "))") }
            let type = p["VPNType"]?.string ?? ""
            let sub = p["VPNSubType"]?.string ?? ""
            let vpn = p["VPN"]?.dict ?? [:]
            let before = problems.count
            var result: ImportResult?
            switch type {
            case "IKEv2":
                result = ikev2(p, label, name: name)
            case "VPN":
                guard let vendor = p["VendorConfig"]?.dict else {
                    problems.append(L("\(label): VPNType VPN needs a VendorConfig dictionary (the provider's configuration)"))
                    return nil
                }
                if sub.hasPrefix("com.wireguard.") {
                    result = wireguard(vendor, p, label, name: name)
                } else if MobileConfig.openVPNSubTypes.contains(sub) {
                    result = openvpn(vendor, vpn, label, name: name)
                } else if sub.isEmpty {
                    problems.append(L("\(label): VPNType VPN without a VPNSubType (the provider's identifier)"))
                } else {
                    result = provider(sub, vendor, vpn, label, name: name)
                }
            case "":
                problems.append(L("\(label): no VPNType"))
            default:
                problems.append(L("\(label): VPNType \(type.quotedForMessage) is not supported (vpnctl carries IKEv2, WireGuard, OpenVPN and provider VPNs)"))
            }
            guard var r = result, problems.count == before else { return nil }
            readOnDemand(p, vpn: type == "IKEv2" ? (p["IKEv2"]?.dict ?? [:]) : vpn, label, into: &r.profile)
            readFlags(type == "IKEv2" ? (p["IKEv2"]?.dict ?? [:]) : vpn, label, into: &r.profile)
            readDNS(p["DNS"]?.dict, label, into: &r.profile)
            if p["Proxies"] != nil { notes.append("\(label): Proxies are not imported") }
            r.notes = r.notes.map { "\(label): \($0)" }
            let problemsNow = ProfileValidator(secretExists: { r.secrets[$0] != nil }).problems(in: r.profile)
            if !problemsNow.isEmpty {
                problems += problemsNow.map { "\(label): \($0)" }
                return nil
            }
            return Item(payloadIdentifier: identifier, payloadName: label, result: r)
        }

        /// The message of an importer's error, its problems each under the payload's label.
        mutating func absorb(_ error: Error, _ label: String, prefix: String = "", rename: (String) -> String = { $0 }) {
            if let e = error as? VPNError {
                if e.problems.isEmpty { problems.append("\(label): \(prefix)\(e.message)") }
                else { problems += e.problems.map { "\(label): \(prefix)\(rename($0))" } }
            } else {
                problems.append("\(label): \(prefix)\(error)")
            }
        }

        mutating func wireguard(_ vendor: [String: PropertyList], _ p: [String: PropertyList], _ label: String, name: String) -> ImportResult? {
            guard let text = vendor["WgQuickConfig"]?.string else {
                problems.append(L("\(label): VendorConfig has no WgQuickConfig string (the wg-quick configuration)"))
                return nil
            }
            let others = vendor.keys.filter { $0 != "WgQuickConfig" }.sorted()
            if !others.isEmpty { notes.append("\(label): VendorConfig keys not imported: \(others.joined(separator: ", "))") }
            do {
                return try WGQuick.parse(text, name: name, source: "WgQuickConfig")
            } catch {
                absorb(error, label, prefix: "WgQuickConfig ")
                return nil
            }
        }

        /// OpenVPN Connect's VendorConfig: one key per directive ("NOARGS" for
        /// a flag, `remote.1`/`remote.2` for repeats, inline files with literal
        /// `\n`), rewritten as an .ovpn and read by the .ovpn importer.
        mutating func openvpn(_ vendor: [String: PropertyList], _ vpn: [String: PropertyList], _ label: String, name: String) -> ImportResult? {
            let order = MobileConfig.directiveOrder
            guard let directives = vendorDirectives(vendor, label) else { return nil }
            var lines = directives.lines, blocks = directives.blocks
            if !directives.skipped.isEmpty {
                notes.append("\(label): OpenVPN Connect settings not imported: \(directives.skipped.joined(separator: ", "))")
            }
            let hasCA = blocks.contains { order($0.key).0 == "ca" } || lines.contains { order($0.key).0 == "ca" }
            if !hasCA, !anchors.isEmpty {
                blocks.append(("(certificate payloads)", "<ca>\n" + anchors.map(\.pem).joined() + "</ca>"))
            }
            let username = options.username ?? vpn["AuthName"]?.string
            let password = vpn["AuthPassword"]?.string
            let hasAuthUserPass = lines.contains { order($0.key).0 == "auth-user-pass" }
            if (username != nil || password != nil) && !hasAuthUserPass {
                lines.append(("VPN.AuthName", "auth-user-pass"))
            }
            guard identityBlocks(vpn, label, &blocks) else { return nil }
            let all = lines + blocks
            let text = all.map(\.text).joined(separator: "\n") + "\n"
            // The importer numbers lines of this text: name the key instead.
            var firstLine: [Int: String] = [:]
            var n = 1
            for entry in all {
                firstLine[n] = entry.key
                n += entry.text.split(separator: "\n", omittingEmptySubsequences: false).count
            }
            func rename(_ message: String) -> String {
                guard message.hasPrefix("line "), let colon = message.firstIndex(of: ":"),
                      let line = Int(message.dropFirst(5).prefix(while: \.isNumber)), let key = firstLine[line] else { return message }
                return "VendorConfig.\(key)\(message[colon...])"
            }
            do {
                var r = try OpenVPNImport.parse(text, name: name, source: "VendorConfig",
                                                options: ImportOptions(username: hasAuthUserPass || username != nil || password != nil ? username : nil))
                r.notes = r.notes.map(rename)
                if let password, let secret = r.profile.protocol.model.passwordSecret {
                    r.secrets[secret] = Array(password.utf8)
                    r.notes.removeAll { $0.contains("set the password with") }
                }
                return r
            } catch {
                absorb(error, label, rename: rename)
                return nil
            }
        }

        /// VendorConfig's keys as .ovpn lines and inline blocks, in key order
        /// (`remote.2` after `remote.1`), and the app's own settings skipped;
        /// nil when one cannot be carried.
        mutating func vendorDirectives(_ vendor: [String: PropertyList], _ label: String)
            -> (lines: [(key: String, text: String)], blocks: [(key: String, text: String)], skipped: [String])? {
            var lines: [(key: String, text: String)] = []
            var blocks: [(key: String, text: String)] = []
            var skipped: [String] = []
            let order = MobileConfig.directiveOrder
            let keys = vendor.keys.sorted { order($0) < order($1) }
            let before = problems.count
            for key in keys {
                let directive = order(key).0
                guard let raw = MobileConfig.text(vendor[key]!) else {
                    problems.append(L("\(label): VendorConfig.\(key) is \(vendor[key]!.kindName); OpenVPN directives are text"))
                    continue
                }
                if directive.hasPrefix("vpn-") || directive == "OVPN_ACCESS_SERVER_USERNAME" || directive.hasPrefix("OVPN_") {
                    skipped.append(key)
                    continue
                }
                if OpenVPNImport.blockTags.contains(directive.lowercased()) && raw.containsUTF8("-----BEGIN") {
                    let body = raw.replacingAll("\\n", with: "\n")
                    if body.split(whereSeparator: \.isNewline).contains(where: { String($0).trimmingSpaces().hasPrefix("<") }) {
                        problems.append(L("\(label): VendorConfig.\(key) has a line starting with '<' inside an inline file"))
                        continue
                    }
                    blocks.append((key, "<\(directive)>\n\(body)\n</\(directive)>"))
                    continue
                }
                if OpenVPNImport.blockTags.contains(directive.lowercased()) {
                    // A configuration profile is self-contained: a file name here
                    // would make the importer read a file of this machine.
                    problems.append(L("\(label): VendorConfig.\(key) is not an inline PEM; a configuration profile carries its files inline, never by name"))
                    continue
                }
                if raw.contains(where: \.isNewline) || raw.containsUTF8("\\n") {
                    problems.append(L("\(label): VendorConfig.\(key) spans lines; only inline files (ca, cert, key, tls-auth, ...) may"))
                    continue
                }
                if directive.unicodeScalars.contains(where: { $0 == " " || $0 == "\t" || $0.value < 0x20 }) {
                    problems.append(L("\(label): VendorConfig key \(key.quotedForMessage) is not a directive name"))
                    continue
                }
                lines.append((key, raw == "NOARGS" ? directive : "\(directive) \(raw)"))
            }
            guard problems.count == before else { return nil }
            return (lines, blocks, skipped)
        }

        /// The identity payload VPN.PayloadCertificateUUID names, as the
        /// <cert> and <key> blocks the file does not have; false when it names none.
        mutating func identityBlocks(_ vpn: [String: PropertyList], _ label: String, _ blocks: inout [(key: String, text: String)]) -> Bool {
            let order = MobileConfig.directiveOrder
            if let uuid = vpn["PayloadCertificateUUID"]?.string {
                guard let id = identities[uuid] else {
                    if !brokenIdentities.contains(uuid) {
                        problems.append(L("\(label): VPN.PayloadCertificateUUID \(uuid.quotedForMessage) names no identity (com.apple.security.pkcs12) payload in this profile"))
                    }
                    return false
                }
                usedIdentities.insert(uuid)
                if !blocks.contains(where: { order($0.key).0 == "cert" }) {
                    blocks.append(("(identity payload)", "<cert>\n\(id.certificate.pem)</cert>"))
                }
                if !blocks.contains(where: { order($0.key).0 == "key" }) {
                    blocks.append(("(identity payload)", "<key>\n\(String(decoding: id.privateKeyPEM, as: UTF8.self))</key>"))
                }
            }
            return true
        }

        mutating func provider(_ sub: String, _ vendor: [String: PropertyList], _ vpn: [String: PropertyList], _ label: String, name: String) -> ImportResult? {
            var config = ProviderConfiguration(providerIdentifier: sub)
            var secrets: [String: [UInt8]] = [:]
            for key in vendor.keys.sorted() {
                guard let value = MobileConfig.text(vendor[key]!) else {
                    problems.append(L("\(label): VendorConfig.\(key) is \(vendor[key]!.kindName); a provider configuration holds text, numbers and flags only"))
                    continue
                }
                if MobileConfig.looksSecret(key) {
                    var s = MobileConfig.secretName(for: key)
                    // Two keys that clean to one name ("api token", "api-token") keep apart.
                    var n = 2
                    while secrets[s] != nil { s = MobileConfig.secretName(for: key) + "-\(n)"; n += 1 }
                    secrets[s] = Array(value.utf8)
                    config.secrets[key] = s
                } else {
                    config.providerConfiguration[key] = value
                }
            }
            if let server = vpn["RemoteAddress"]?.string, config.providerConfiguration["serverAddress"] == nil {
                config.providerConfiguration["serverAddress"] = server
            }
            if let user = options.username ?? vpn["AuthName"]?.string, config.providerConfiguration["username"] == nil {
                config.providerConfiguration["username"] = user
            }
            if let password = vpn["AuthPassword"]?.string, config.secrets["password"] == nil {
                secrets["password"] = Array(password.utf8)
                config.secrets["password"] = "password"
            }
            if let bundle = vpn["ProviderBundleIdentifier"]?.string, bundle != sub {
                notes.append("\(label): VPN.ProviderBundleIdentifier \(bundle.quotedForMessage) differs from VPNSubType; the profile names \(sub.quotedForMessage)")
            }
            return ImportResult(profile: Profile(name: name, protocol: .provider(config)), secrets: secrets, notes: [])
        }

        static let ikev2Carried: Set<String> = [
            "RemoteAddress", "RemoteIdentifier", "LocalIdentifier", "AuthenticationMethod", "SharedSecret", "ExtendedAuthEnabled",
            "AuthName", "AuthPassword", "PayloadCertificateUUID", "ServerCertificateIssuerCommonName", "OnDemandEnabled", "OnDemandRules",
            "IncludeAllNetworks", "ExcludeLocalNetworks", "EnforceRoutes", "IKESecurityAssociationParameters",
            "ChildSecurityAssociationParameters", "DeadPeerDetectionRate", "DisableMOBIKE", "EnablePFS", "MTU",
        ]

        mutating func ikev2(_ p: [String: PropertyList], _ label: String, name: String) -> ImportResult? {
            guard let ike = p["IKEv2"]?.dict else {
                problems.append(L("\(label): VPNType IKEv2 needs an IKEv2 dictionary"))
                return nil
            }
            guard let server = ike["RemoteAddress"]?.string, !server.isEmpty else {
                problems.append(L("\(label): IKEv2.RemoteAddress is missing (the server)"))
                return nil
            }
            var c = IKEv2Configuration(serverAddress: server, remoteIdentifier: ike["RemoteIdentifier"]?.string,
                                       localIdentifier: ike["LocalIdentifier"]?.string)
            var secrets: [String: [UInt8]] = [:]
            switch ike["AuthenticationMethod"]?.string ?? "None" {
            case "None": c.authenticationMethod = .none
            case "SharedSecret":
                c.authenticationMethod = .sharedSecret
                guard let s = ike["SharedSecret"]?.string ?? ike["SharedSecret"]?.data.map({ String(decoding: $0, as: UTF8.self) }), !s.isEmpty else {
                    problems.append(L("\(label): IKEv2.AuthenticationMethod SharedSecret without a SharedSecret"))
                    return nil
                }
                secrets["shared-secret"] = Array(s.utf8)
                c.sharedSecretSecret = "shared-secret"
            case "Certificate":
                c.authenticationMethod = .certificate
                guard let uuid = ike["PayloadCertificateUUID"]?.string else {
                    problems.append(L("\(label): IKEv2.AuthenticationMethod Certificate without a PayloadCertificateUUID (the identity payload)"))
                    return nil
                }
                guard let id = identities[uuid] else {
                    if !brokenIdentities.contains(uuid) {
                        problems.append(L("\(label): IKEv2.PayloadCertificateUUID \(uuid.quotedForMessage) names no identity (com.apple.security.pkcs12) payload in this profile"))
                    }
                    return nil
                }
                usedIdentities.insert(uuid)
                secrets["identity"] = Array(id.certificate.pem.utf8) + id.privateKeyPEM
                c.identitySecret = "identity"
            case let other:
                problems.append(L("\(label): IKEv2.AuthenticationMethod \(other.quotedForMessage) is not None, SharedSecret or Certificate"))
                return nil
            }
            if MobileConfig.flag(ike["ExtendedAuthEnabled"]) == true || ike["AuthName"] != nil {
                guard let user = options.username ?? ike["AuthName"]?.string, !user.isEmpty else {
                    problems.append(L("\(label): IKEv2.ExtendedAuthEnabled (EAP) without AuthName; give the username with --username"))
                    return nil
                }
                c.username = user
                c.passwordSecret = "password"
                if let pw = ike["AuthPassword"]?.string { secrets["password"] = Array(pw.utf8) }
            }
            if !anchors.isEmpty {
                let cn = ike["ServerCertificateIssuerCommonName"]?.string
                let match = cn.flatMap { cn in anchors.first { $0.subject.containsUTF8("CN=\(cn)") } } ?? (anchors.count == 1 ? anchors[0] : nil)
                if let match { c.caFingerprint = match.fingerprint }
                else { notes.append("\(label): several certificate payloads and no ServerCertificateIssuerCommonName naming one: no trust anchor chosen") }
            }
            var later = ike.keys.filter { !Self.ikev2Carried.contains($0) }.sorted()
            guard readIKEv2Tuning(ike, label, into: &c, notCarried: &later) else { return nil }
            var r = ImportResult(profile: Profile(name: name, protocol: .ikev2(c)), secrets: secrets, notes: [])
            if c.username != nil && secrets["password"] == nil {
                r.notes.append("set the EAP password with 'vpnctl secret set \(name) password'")
            }
            if !later.isEmpty { r.notes.append("IKEv2 keys not carried by the ikev2 profile yet: \(later.joined(separator: ", "))") }
            return r
        }

        /// Proposals, DPD, MOBIKE, PFS and MTU. False (with problems) when a
        /// value is not one Apple's payload allows.
        mutating func readIKEv2Tuning(_ ike: [String: PropertyList], _ label: String, into c: inout IKEv2Configuration,
                                      notCarried: inout [String]) -> Bool {
            let before = problems.count
            let pfs = ike["EnablePFS"].map { MobileConfig.flag($0) }
            if let pfs, pfs == nil { problems.append(L("\(label): IKEv2.EnablePFS is \(ike["EnablePFS"]!.kindName), not a flag (true/false, 1/0)")) }
            if pfs == true { c.enablePFS = true }
            var lifetimes: [Int] = []
            for (key, isIKE) in [("IKESecurityAssociationParameters", true), ("ChildSecurityAssociationParameters", false)] {
                guard let value = ike[key] else { continue }
                guard let dict = value.dict else { problems.append(L("\(label): IKEv2.\(key) is \(value.kindName), not a dictionary")); continue }
                let r = AppleIKEv2Parameters.read(dict, field: "\(label): IKEv2.\(key)", ike: isIKE, withGroup: pfs == true)
                problems += r.problems
                notCarried += r.unknownKeys.map { "\(key).\($0)" }
                if let proposal = r.proposal {
                    if isIKE { c.ikeProposals = [proposal] } else { c.childProposals = [proposal] }
                }
                if let m = r.lifetimeMinutes { lifetimes.append(m) }
            }
            // The profile has one lifetime (charon's rekey time for both SAs): the shorter one.
            if let m = lifetimes.min() {
                c.lifetimeMinutes = m
                if Set(lifetimes).count > 1 {
                    notes.append("\(label): the IKE and child SA lifetimes differ (\(lifetimes.map(String.init).joined(separator: " and ")) min); both rekey after \(m) min")
                }
            }
            if let v = ike["DeadPeerDetectionRate"] {
                if let s = v.string, let rate = IKEv2Configuration.DeadPeerDetectionRate(rawValue: s.lowercased()) { c.deadPeerDetectionRate = rate }
                else { problems.append(L("\(label): IKEv2.DeadPeerDetectionRate \(AppleIKEv2Parameters.shown(v)) is not None, Low, Medium or High")) }
            }
            if let v = ike["DisableMOBIKE"] {
                switch MobileConfig.flag(v) {
                case true?: c.disableMOBIKE = true
                case false?: break
                case nil: problems.append(L("\(label): IKEv2.DisableMOBIKE is \(v.kindName), not a flag (true/false, 1/0)"))
                }
            }
            if let v = ike["MTU"] {
                if let n = AppleIKEv2Parameters.number(v), (1280...1500).contains(n) { c.mtu = n }
                else { problems.append(L("\(label): IKEv2.MTU \(AppleIKEv2Parameters.shown(v)) is not a number from 1280 to 1500")) }
            }
            return problems.count == before
        }

        // MARK: On demand, flags, DNS

        mutating func readOnDemand(_ p: [String: PropertyList], vpn: [String: PropertyList], _ label: String, into profile: inout Profile) {
            let enabledValue = p["OnDemandEnabled"] ?? vpn["OnDemandEnabled"]
            let rulesValue = p["OnDemandRules"] ?? vpn["OnDemandRules"]
            if let e = enabledValue {
                guard let b = MobileConfig.flag(e) else {
                    problems.append(L("\(label): OnDemandEnabled is \(e.kindName), not a flag (true/false, 1/0)"))
                    return
                }
                profile.onDemand.enabled = b
            }
            guard let rulesValue else { return }
            guard let rules = rulesValue.array else {
                problems.append(L("\(label): OnDemandRules is \(rulesValue.kindName), not an array"))
                return
            }
            var ignored = Set<String>()
            for (i, value) in rules.enumerated() {
                guard let r = value.dict else { problems.append(L("\(label): OnDemandRules[\(i)] is not a dictionary")); continue }
                let actions: [String: OnDemandRule.Action] = ["Connect": .connect, "Disconnect": .disconnect,
                                                              "EvaluateConnection": .evaluateConnection, "Ignore": .ignore]
                guard let a = r["Action"]?.string, let action = actions[a] else {
                    problems.append(L("\(label): OnDemandRules[\(i)].Action must be Connect, Disconnect, EvaluateConnection or Ignore"))
                    continue
                }
                if action == .evaluateConnection {
                    notes.append("\(label): OnDemandRules[\(i)] (EvaluateConnection) left out: Linux has no per-connection hook to run it; "
                                 + "a Connect rule with DNSDomainMatch does the nearest thing")
                    continue
                }
                var rule = OnDemandRule(action: action)
                if let t = r["InterfaceTypeMatch"] {
                    let types: [String: OnDemandRule.InterfaceType] = ["Ethernet": .ethernet, "WiFi": .wifi, "Cellular": .cellular, "Any": .any]
                    guard let s = t.string, let type = types[s] else {
                        problems.append(L("\(label): OnDemandRules[\(i)].InterfaceTypeMatch must be Ethernet, WiFi or Cellular"))
                        continue
                    }
                    rule.interfaceType = type
                }
                if let d = r["DNSDomainMatch"] {
                    guard let list = d.array?.compactMap(\.string), list.count == d.array?.count else {
                        problems.append(L("\(label): OnDemandRules[\(i)].DNSDomainMatch must be an array of strings"))
                        continue
                    }
                    rule.dnsSearchDomains = list
                }
                for (key, path) in [("SSIDMatch", \OnDemandRule.ssids), ("DNSServerAddressMatch", \OnDemandRule.dnsServerAddresses)] {
                    guard let d = r[key] else { continue }
                    guard let list = d.array?.compactMap(\.string), list.count == d.array?.count else {
                        problems.append("\(label): OnDemandRules[\(i)].\(key) must be an array of strings")
                        continue
                    }
                    rule[keyPath: path] = list
                }
                if let u = r["URLStringProbe"] {
                    guard let s = u.string else { problems.append(L("\(label): OnDemandRules[\(i)].URLStringProbe is not a string")); continue }
                    rule.probeURL = s
                }
                for k in r.keys where !["Action", "InterfaceTypeMatch", "SSIDMatch", "DNSDomainMatch", "DNSServerAddressMatch",
                                          "URLStringProbe"].contains(k) { ignored.insert(k) }
                profile.onDemand.rules.append(rule)
            }
            if !ignored.isEmpty {
                notes.append("\(label): on-demand rule keys vpnctl does not match on (ignored): \(ignored.sorted().joined(separator: ", "))")
            }
        }

        /// IncludeAllNetworks, ExcludeLocalNetworks and EnforceRoutes: the
        /// profile's kill-switch flags.
        mutating func readFlags(_ vpn: [String: PropertyList], _ label: String, into profile: inout Profile) {
            let flags: [(String, WritableKeyPath<Profile, Bool>)] = [
                ("IncludeAllNetworks", \.includeAllNetworks), ("ExcludeLocalNetworks", \.excludeLocalNetworks), ("EnforceRoutes", \.enforceRoutes),
            ]
            for (key, path) in flags {
                guard let v = vpn[key] else { continue }
                guard let b = MobileConfig.flag(v) else {
                    problems.append(L("\(label): \(key) is \(v.kindName), not a flag (true/false, 1/0)"))
                    continue
                }
                profile[keyPath: path] = b
            }
            if profile.excludeLocalNetworks && !profile.includeAllNetworks {
                notes.append("\(label): ExcludeLocalNetworks without IncludeAllNetworks changes nothing")
            }
        }

        mutating func readDNS(_ dns: [String: PropertyList]?, _ label: String, into profile: inout Profile) {
            guard let dns else { return }
            let servers = dns["ServerAddresses"]?.array?.compactMap(\.string) ?? []
            let domains = (dns["SearchDomains"]?.array?.compactMap(\.string) ?? []) + (dns["DomainName"]?.string.map { [$0] } ?? [])
            for s in servers where IPAddress(s) == nil {
                problems.append(L("\(label): DNS.ServerAddresses \(s.quotedForMessage) is not an IP address"))
            }
            for d in domains where !isDomainName(d) {
                problems.append(L("\(label): DNS search domain \(d.quotedForMessage) is not a domain name"))
            }
            let match = dns["SupplementalMatchDomains"]?.array?.compactMap(\.string) ?? []
            for d in match where !isDomainName(d) {
                problems.append(L("\(label): DNS.SupplementalMatchDomains \(d.quotedForMessage) is not a domain name"))
            }
            // Encrypted DNS (DoH, DoT) is not something vpnctl can set up:
            // its servers are not used in cleartext instead.
            if let proto = dns["DNSProtocol"]?.string, proto != "Cleartext" {
                notes.append("\(label): DNS.DNSProtocol \(proto.quotedForMessage): vpnctl sets cleartext DNS only, so the DNS dictionary is left out (the tunnel's own DNS applies)")
                return
            }
            let settings = DNSSettings(servers: servers, searchDomains: domains, matchDomains: match)
            if !settings.isEmpty { profile.dnsSettings = settings }
            let other = dns.keys.filter { !["ServerAddresses", "SearchDomains", "DomainName", "SupplementalMatchDomains", "DNSProtocol"].contains($0) }.sorted()
            if !other.isEmpty { notes.append("\(label): DNS keys not imported: \(other.joined(separator: ", "))") }
        }
    }
}
