import FoundationEssentials
import VPNSystem

/// NetworkManager connection keyfiles (`nmcli connection export`,
/// /etc/NetworkManager/system-connections/*.nmconnection): `type=wireguard`,
/// and `type=vpn` with the openvpn or strongswan plugin, mapped to vpnctl's
/// WireGuard, OpenVPN and IKEv2 models. Secrets go into secrets; a secret
/// whose `*-flags` say NetworkManager keeps it elsewhere stays unset, named.
/// Every key not carried is listed.
public enum NMKeyfileImport {
    public static let openVPNService = "org.freedesktop.NetworkManager.openvpn"
    public static let strongSwanService = "org.freedesktop.NetworkManager.strongswan"

    /// A `[connection]` section with a `type=` in it, before any line that
    /// belongs to no key-file syntax.
    static func recognizes(_ text: String) -> Bool {
        var inConnection = false
        for raw in text.split(whereSeparator: \.isNewline).prefix(400) {
            let line = raw.drop(while: { $0 == " " || $0 == "\t" || $0 == "\u{FEFF}" })
            // Sections and keys only NetworkManager writes, so that a file
            // missing its [connection] is told so rather than not recognised.
            if line.hasPrefix("[wireguard-peer.") || line.hasPrefix("service-type=org.freedesktop.NetworkManager.") { return true }
            if line.hasPrefix("[") {
                inConnection = line.hasPrefix("[connection]")
            } else if inConnection, line.hasPrefix("type") {
                let rest = line.dropFirst(4).drop(while: { $0 == " " || $0 == "\t" })
                if rest.first == "=" { return true }
            }
        }
        return false
    }

    public static func parse(_ text: String, name: String, source: String, options: ImportOptions) throws -> ImportResult {
        let (file, syntax) = NMKeyfile.parse(text)
        var importer = Importer(file: file, name: name, source: source, options: options)
        importer.problems = syntax
        return try importer.run()
    }

    /// NM_SETTING_SECRET_FLAG_AGENT_OWNED (1) and NOT_SAVED (2): the secret lives elsewhere.
    static let keptElsewhere = 0b11
    /// NM_SETTING_SECRET_FLAG_NOT_REQUIRED.
    static let notRequired = 0b100

    static let noEffect: [String: Set<String>] = [
        "connection": ["uuid", "timestamp", "autoconnect", "autoconnect-priority", "autoconnect-retries", "autoconnect-slaves",
                       "autoconnect-ports", "permissions", "zone", "secondaries", "stable-id", "metered", "read-only",
                       "auth-retries", "wait-device-timeout", "gateway-ping-timeout", "multi-connect", "llmnr", "mdns",
                       "lldp", "mud-url", "wait-activation-delay", "dns-over-tls"],
        "vpn": ["user-name", "persistent", "timeout"],
        "ipv4": ["may-fail", "dns-priority", "dad-timeout", "required-timeout", "dhcp-timeout", "dhcp-send-hostname",
                 "dhcp-hostname", "dhcp-client-id", "dhcp-iaid", "dhcp-fqdn", "dhcp-vendor-class-identifier", "link-local",
                 "dns-options", "auto-route-ext-gw", "replace-local-rule"],
        "ipv6": ["may-fail", "dns-priority", "addr-gen-mode", "ip6-privacy", "required-timeout", "dhcp-timeout",
                 "dhcp-send-hostname", "dhcp-hostname", "dhcp-duid", "dhcp-iaid", "token", "ra-timeout", "dns-options",
                 "auto-route-ext-gw", "replace-local-rule", "mtu"],
    ]

    struct Importer {
        let file: NMKeyfile
        let name: String
        let source: String
        let options: ImportOptions
        var problems: [String] = []
        var notes: [String] = []
        var used = Set<String>()
        var secrets: [String: [UInt8]] = [:]
        var anchors: [String: [UInt8]] = [:]
        var unsetSecrets: [String] = []
        /// The keys with no effect here, for the import summary.
        var noEffectKeys: [String] = []

        // MARK: Reading values

        func entry(_ section: String, _ key: String) -> NMKeyfile.Entry? { file.section(section)?.entry(key) }

        func at(_ section: String, _ key: String) -> String {
            L("line \(entry(section, key)?.line ?? 0) (\(section).\(key))")
        }

        mutating func string(_ section: String, _ key: String) -> String? {
            guard let e = entry(section, key) else { return nil }
            used.insert("\(section).\(key)")
            var problem: String?
            guard let v = NMKeyfile.unescape(Substring(e.raw), problem: &problem) else {
                problems.append("\(at(section, key)): \(problem ?? "")")
                return nil
            }
            return v
        }

        mutating func list(_ section: String, _ key: String) -> [String] {
            guard let e = entry(section, key) else { return [] }
            used.insert("\(section).\(key)")
            var out: [String] = []
            for item in NMKeyfile.splitList(e.raw) {
                var problem: String?
                guard let v = NMKeyfile.unescape(item, problem: &problem) else {
                    problems.append("\(at(section, key)): \(problem ?? "")")
                    continue
                }
                let t = v.trimmingSpaces()
                if !t.isEmpty { out.append(t) }
            }
            return out
        }

        /// GLib's booleans (true/false, 1/0) and the plugins' yes/no.
        mutating func bool(_ section: String, _ key: String) -> Bool? {
            guard let v = string(section, key) else { return nil }
            switch v.lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default:
                problems.append(L("\(at(section, key)): \(v.quotedForMessage) is not true or false"))
                return nil
            }
        }

        mutating func int(_ section: String, _ key: String, _ range: ClosedRange<Int>) -> Int? {
            guard let v = string(section, key) else { return nil }
            guard let n = Int(v), range.contains(n) else {
                problems.append(L("\(at(section, key)): \(v.quotedForMessage) must be a number from \(range.lowerBound) to \(range.upperBound)"))
                return nil
            }
            return n
        }

        /// A secret and its flags: the value into `secrets` under `secretName`.
        /// Absent from the file (kept by an agent, not saved, or left out),
        /// the reference stays, unset, when the profile needs it.
        mutating func secret(_ section: String, _ key: String, flags flagsAt: (String, String), as secretName: String,
                             required: Bool, isValid: (String) -> Bool = { _ in true }, invalid: String = "") -> String? {
            let flags = int(flagsAt.0, flagsAt.1, 0...15) ?? 0
            if let v = string(section, key), !v.isEmpty {
                guard isValid(v) else {
                    problems.append("\(at(section, key)): \(invalid)")
                    return nil
                }
                secrets[secretName] = Array(v.utf8)
                return secretName
            }
            if flags & NMKeyfileImport.notRequired != 0 && flags & NMKeyfileImport.keptElsewhere == 0 { return nil }
            guard required || flags & NMKeyfileImport.keptElsewhere != 0 else { return nil }
            let why = flags & 1 != 0 ? L("\(flagsAt.0).\(flagsAt.1)=\(flags): a secret agent keeps it")
                : flags & 2 != 0 ? L("\(flagsAt.0).\(flagsAt.1)=\(flags): NetworkManager does not save it")
                : L("the file does not hold \(section).\(key)")
            notes.append(L("secret '\(secretName)' is unset (\(why)); set it with: vpnctl secret set \(name.shellQuoted) \(secretName)"))
            unsetSecrets.append(secretName)
            return secretName
        }

        /// A file a setting names: relative to the keyfile's directory, a
        /// `file://` URI, or inline (`data:;base64,...`, or the PEM itself).
        mutating func material(_ section: String, _ key: String) -> [UInt8]? {
            guard let v = string(section, key), !v.isEmpty else { return nil }
            if v.hasPrefix("data:;base64,") {
                guard let d = Data(base64Encoded: String(v.dropFirst(13))) else {
                    problems.append(L("\(at(section, key)): the inline data is not valid base64"))
                    return nil
                }
                return Array(d)
            }
            if v.hasPrefix("-----BEGIN ") { return Array(v.utf8) }
            let path = v.hasPrefix("file://") ? String(v.dropFirst(7)) : v
            do {
                guard let bytes = try options.readReferenced(path) else {
                    problems.append(L("\(at(section, key)): the file \(path.quotedForMessage) does not exist (a relative path is read from the keyfile's directory)"))
                    return nil
                }
                return bytes
            } catch {
                problems.append(L("\(at(section, key)): cannot read \(path.quotedForMessage): \(error)"))
                return nil
            }
        }

        /// The CA file's certificates, each a trust anchor of its own (PEM by fingerprint), in order.
        mutating func certificates(_ pem: [UInt8], _ section: String, _ key: String) -> [(fingerprint: String, pem: [UInt8])] {
            let text = String(decoding: pem, as: UTF8.self)
            if text.containsUTF8("PRIVATE KEY-----") {
                problems.append(L("\(at(section, key)): the CA file holds a private key; a CA holds certificates only (remove the key, and treat it as exposed)"))
                return []
            }
            var out: [(fingerprint: String, pem: [UInt8])] = []
            var bad = false
            for block in PEM.blocks(text) where block.label == "CERTIFICATE" {
                guard let der = block.der else {
                    problems.append(L("\(at(section, key)): a certificate in it is not valid base64"))
                    bad = true
                    continue
                }
                let fp = SHA256.hex(der)
                if !out.contains(where: { $0.fingerprint == fp }) { out.append((fp, Array(PEM.encode(label: "CERTIFICATE", der: der).utf8))) }
            }
            if out.isEmpty && !bad { problems.append(L("\(at(section, key)): no PEM certificate in it")) }
            return out
        }

        // MARK: The connection

        mutating func run() throws -> ImportResult {
            guard problems.isEmpty else { throw failure() }
            guard file.section("connection") != nil else {
                problems.append(L("no [connection] section"))
                throw failure()
            }
            let type = string("connection", "type") ?? ""
            var profile: Profile?
            switch type {
            case "wireguard":
                profile = wireguard()
            case "vpn":
                let service = string("vpn", "service-type") ?? ""
                switch service {
                case NMKeyfileImport.openVPNService: profile = openVPN()
                case NMKeyfileImport.strongSwanService: profile = strongSwan()
                case "":
                    problems.append(L("[vpn] has no service-type (the NetworkManager VPN plugin)"))
                default:
                    problems.append(L("vpn.service-type \(service.quotedForMessage): vpnctl imports \(NMKeyfileImport.openVPNService) and \(NMKeyfileImport.strongSwanService) connections only"))
                }
            case "":
                problems.append(L("[connection] has no type"))
            default:
                problems.append(L("connection.type \(type.quotedForMessage) is not a VPN; vpnctl imports wireguard and vpn (openvpn, strongswan) connections"))
            }
            let id = string("connection", "id")
            // NetworkManager's own id for the connection: the one --keep-id gives the profile.
            let fileID = entry("connection", "uuid").flatMap { UUID.parse($0.raw) }
            if fileID != nil { used.insert("connection.uuid") }
            guard problems.isEmpty, var profile else { throw failure() }
            if options.username != nil && !profile.protocol.secretReferences.contains(where: { $0.name == "password" }) {
                throw VPNError.usage(L("--username is for a profile that logs in with a username and password, and \(source) does not"),
                                     hint: L("import it without --username"))
            }
            if let id, id != name {
                notes.append(L("connection.id \(id.quotedForMessage): the profile is named '\(name)' (another with --name NAME)"))
            }
            listLeftOver()
            profile.name = name
            var result = ImportResult(profile: profile, secrets: secrets, notes: notes)
            result.anchors = anchors
            result.noEffect = noEffectKeys
            result.fileID = fileID
            return result
        }

        func failure() -> VPNError {
            VPNError.invalid(problems.count == 1 ? L("\(source) is not a usable NetworkManager keyfile (1 problem)")
                                                 : L("\(source) is not a usable NetworkManager keyfile (\(problems.count) problems)"),
                             problems: problems, hint: L("fix the file and import it again"))
        }

        /// Every key read by nothing: with no effect here, or not carried.
        mutating func listLeftOver() {
            var none: [String] = [], notCarried: [String] = []
            for section in file.sections {
                for e in section.entries where !used.contains("\(section.name).\(e.key)") {
                    let full = "\(section.name).\(e.key)"
                    if section.name == "proxy" || NMKeyfileImport.noEffect[section.name]?.contains(e.key) == true
                        || (section.name == "connection" && e.key == "interface-name") {
                        none.append(full)
                    } else {
                        notCarried.append(full)
                    }
                }
            }
            noEffectKeys = none
            if !none.isEmpty { notes.append(L("no effect here (vpnctl keeps its own state, names and users): \(none.joined(separator: ", "))")) }
            if !notCarried.isEmpty { notes.append(L("not carried (vpnctl has no such setting for this profile): \(notCarried.joined(separator: ", "))")) }
        }

        // MARK: IP settings

        /// `[ipv4]`/`[ipv6]` DNS: servers, search domains and `~` routing domains.
        mutating func dns() -> (servers: [String], search: [String], match: [String]) {
            var servers: [String] = [], search: [String] = [], match: [String] = []
            for family in ["ipv4", "ipv6"] {
                for s in list(family, "dns") {
                    if IPAddress(s) != nil { servers.append(s) }
                    else { problems.append(L("\(at(family, "dns")): \(s.quotedForMessage) is not an IP address")) }
                }
                for d in list(family, "dns-search") {
                    let routing = d.hasPrefix("~")
                    let domain = routing ? String(d.dropFirst()) : d
                    if routing && (domain == "." || domain.isEmpty) {
                        notes.append(L("\(at(family, "dns-search")): '~.' (every query to this connection's DNS) is not carried; a full tunnel sends every query to the tunnel's DNS"))
                    } else if isDomainName(domain) {
                        if routing { if !match.contains(domain) { match.append(domain) } }
                        else if !search.contains(domain) { search.append(domain) }
                    } else {
                        problems.append(L("\(at(family, "dns-search")): \(d.quotedForMessage) is not a domain name"))
                    }
                }
            }
            return (servers, search, match)
        }

        /// `routeN=dest/prefix[,gateway[,metric]]`, in N order.
        mutating func routes(_ family: String) -> [(key: String, prefix: CIDR, gateway: String?, metric: Int?)] {
            let keys = (file.section(family)?.entries ?? []).map(\.key).compactMap { k -> (Int, String)? in
                guard k.hasPrefix("route"), let n = Int(k.dropFirst(5)), n > 0 else { return nil }
                return (n, k)
            }.sorted { $0.0 < $1.0 }
            var out: [(String, CIDR, String?, Int?)] = []
            for (_, key) in keys {
                guard let v = string(family, key) else { continue }
                let parts = v.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces() }
                guard let prefix = CIDR(parts[0]), parts[0].contains("/"), prefix.address.isIPv6 == (family == "ipv6") else {
                    problems.append(L("\(at(family, key)): \(v.quotedForMessage) is not 'address/prefix[,gateway[,metric]]' of \(family)"))
                    continue
                }
                // NetworkManager writes 0.0.0.0 (or ::) for "no gateway" when a metric follows.
                let gateway = parts.count > 1 && !parts[1].isEmpty && IPAddress(parts[1])?.bytes.allSatisfy({ $0 == 0 }) != true ? parts[1] : nil
                if let gateway, IPAddress(gateway) == nil {
                    problems.append(L("\(at(family, key)): gateway \(gateway.quotedForMessage) is not an IP address"))
                    continue
                }
                var metric: Int?
                if parts.count > 2, !parts[2].isEmpty {
                    guard let m = Int(parts[2]), m >= 0 else {
                        problems.append(L("\(at(family, key)): metric \(parts[2].quotedForMessage) is not a number"))
                        continue
                    }
                    metric = m
                }
                // The route's options (table, mtu...): vpnctl has none of them.
                if entry(family, "\(key)_options") != nil { continue }
                out.append((key, prefix, gateway, metric))
            }
            return out
        }

        /// True when the flag is set to its non-default value.
        mutating func isTrue(_ section: String, _ key: String) -> Bool { bool(section, key) == true }

        // MARK: WireGuard

        mutating func wireguard() -> Profile? {
            var c = WireGuardConfiguration()
            let notAKey = L("not a WireGuard key (44 characters of base64 encoding 32 bytes)")
            c.privateKeySecret = secret("wireguard", "private-key", flags: ("wireguard", "private-key-flags"),
                                        as: WGQuick.privateKeySecret, required: true, isValid: WireGuardKey.isValid, invalid: notAKey)
            c.listenPort = int("wireguard", "listen-port", 0...65535).flatMap { $0 == 0 ? nil : $0 }
            c.fwmark = int("wireguard", "fwmark", 0...Int(UInt32.max)).flatMap { $0 == 0 ? nil : String($0) }
            c.mtu = int("wireguard", "mtu", 0...65535).flatMap { $0 == 0 ? nil : $0 }
            if let m = c.mtu, !(576...65535).contains(m) { problems.append(L("\(at("wireguard", "mtu")): \(m) must be 0 (automatic) or 576–65535")) }
            if bool("wireguard", "peer-routes") == false { c.table = "off" }
            if let ifname = string("connection", "interface-name") {
                if InterfaceName.isValid(ifname) { c.interfaceName = ifname }
                else { problems.append(L("\(at("connection", "interface-name")): \(ifname.quotedForMessage) is not a valid interface name")) }
            }
            for family in ["ipv4", "ipv6"] {
                _ = string(family, "method")
                var keys = (file.section(family)?.entries ?? []).map(\.key).filter { $0.hasPrefix("address") && Int($0.dropFirst(7)) != nil }
                if entry(family, "addresses") != nil { keys.insert("addresses", at: 0) }
                for key in keys {
                    for item in key == "addresses" ? list(family, key) : [string(family, key) ?? ""] where !item.isEmpty {
                        let parts = item.split(separator: ",", maxSplits: 1).map { String($0).trimmingSpaces() }
                        guard let a = CIDR(parts[0]), a.address.isIPv6 == (family == "ipv6") else {
                            problems.append(L("\(at(family, key)): \(item.quotedForMessage) is not an \(family) address with a /prefix"))
                            continue
                        }
                        c.addresses.append(parts[0])
                        if parts.count > 1 { notes.append(L("\(at(family, key)): the gateway \(parts[1].quotedForMessage) has no effect on a WireGuard interface")) }
                    }
                }
                // A WireGuard connection has no automatic DNS or routes to ignore.
                _ = bool(family, "ignore-auto-dns")
                _ = bool(family, "ignore-auto-routes")
            }
            let d = dns()
            c.dns = d.servers + d.search
            for section in file.sections where section.name.hasPrefix("wireguard-peer.") {
                if let peer = wireguardPeer(section, index: c.peers.count) { c.peers.append(peer) }
            }
            for family in ["ipv4", "ipv6"] {
                for r in routes(family) {
                    let covered = c.table != "off" && c.peers.contains { $0.allowedIPs.compactMap(CIDR.init).contains { covers($0, r.prefix) } }
                    if !covered {
                        notes.append(L("\(at(family, r.key)): \(r.prefix.description) is not carried: vpnctl routes a WireGuard tunnel's allowed IPs; add it to a peer's allowed-ips"))
                    } else if r.gateway != nil || r.metric != nil {
                        notes.append(L("\(at(family, r.key)): routed through the tunnel as a peer's allowed IPs; its gateway and metric are not carried"))
                    }
                }
                let wholeFamily = family == "ipv4" ? "0.0.0.0/0" : "::/0"
                // ip4-auto-default-route=0 says for WireGuard what never-default says (-1, the default, follows never-default).
                let autoKey = family == "ipv4" ? "ip4-auto-default-route" : "ip6-auto-default-route"
                var noDefault: (String, String)? = isTrue(family, "never-default") ? (family, "never-default") : nil
                if let v = string("wireguard", autoKey) {
                    switch v.lowercased() {
                    case "0", "false", "no": noDefault = ("wireguard", autoKey)
                    case "-1", "1", "true", "yes": break
                    default: problems.append(L("\(at("wireguard", autoKey)): \(v.quotedForMessage) is not -1 (default), 0 or 1"))
                    }
                }
                if let (section, key) = noDefault, c.table != "off",
                   c.peers.contains(where: { $0.allowedIPs.compactMap(CIDR.init).contains { $0.prefixLength == 0 && $0.address.isIPv6 == (family == "ipv6") } }) {
                    notes.append(L("\(at(section, key)): not carried: a peer's allowed-ips hold \(wholeFamily), so vpnctl sends all of \(family) through the tunnel; narrow allowed-ips to keep the default route outside"))
                }
            }
            if c.peers.isEmpty { problems.append(L("no [wireguard-peer.KEY] section (the server)")) }
            var p = Profile(name: name, protocol: .wireguard(c))
            if !d.match.isEmpty { p.dnsSettings = DNSSettings(matchDomains: d.match) }
            return p
        }

        mutating func wireguardPeer(_ section: NMKeyfile.Section, index: Int) -> WireGuardPeer? {
            let s = section.name
            let key = String(s.dropFirst("wireguard-peer.".count))
            guard WireGuardKey.isValid(key) else {
                problems.append(L("line \(section.line): [\(s)]: \(key.quotedForMessage) is not a WireGuard public key"))
                return nil
            }
            var peer = WireGuardPeer(publicKey: key)
            if let e = string(s, "endpoint") {
                if case .success = Endpoint.parse(e) { peer.endpoint = e }
                else { problems.append(L("\(at(s, "endpoint")): \(e.quotedForMessage) is not host:port")) }
            }
            for a in list(s, "allowed-ips") {
                if CIDR(a) != nil { peer.allowedIPs.append(a) }
                else { problems.append(L("\(at(s, "allowed-ips")): \(a.quotedForMessage) is not a CIDR prefix")) }
            }
            peer.presharedKeySecret = secret(s, "preshared-key", flags: (s, "preshared-key-flags"),
                                             as: WGQuick.presharedKeySecret(peer: index), required: false, isValid: WireGuardKey.isValid,
                                             invalid: L("not a WireGuard key (44 characters of base64 encoding 32 bytes)"))
            peer.persistentKeepalive = int(s, "persistent-keepalive", 0...65535)
            return peer
        }

        // MARK: OpenVPN

        mutating func openVPN() -> Profile? {
            var c = OpenVPNConfiguration()
            let v = "vpn"
            let tcp = bool(v, "proto-tcp") == true
            let port = int(v, "port", 1...65535) ?? 1194
            for r in (string(v, "remote") ?? "").split(whereSeparator: { $0 == "," || $0 == " " }) {
                if let remote = openVPNRemote(String(r), port: port, proto: tcp ? "tcp" : "udp") { c.remotes.append(remote) }
            }
            if c.remotes.isEmpty && entry(v, "remote")?.raw.isEmpty ?? true { problems.append(L("vpn.remote: missing (the server to connect to)")) }
            if let t = string(v, "dev-type"), t != "tun" { problems.append(L("\(at(v, "dev-type")): \(t.quotedForMessage): only tun is supported")) }
            if bool(v, "tap-dev") == true { problems.append(L("\(at(v, "tap-dev")): tap (layer 2) tunnels are not supported; vpnctl needs tun")) }
            if let dev = string(v, "dev"), dev.hasPrefix("tap") { problems.append(L("\(at(v, "dev")): tap (layer 2) tunnels are not supported; vpnctl needs tun")) }

            let type = string(v, "connection-type") ?? "tls"
            let usesCertificate = ["tls", "password-tls"].contains(type)
            let usesPassword = ["password", "password-tls"].contains(type)
            if !usesCertificate && !usesPassword {
                problems.append(L("\(at(v, "connection-type")): \(type.quotedForMessage) is not supported; vpnctl imports tls, password and password-tls"))
                return nil
            }
            if let ca = material(v, "ca") {
                for cert in certificates(ca, v, "ca") {
                    anchors[cert.fingerprint] = cert.pem
                    c.caFingerprints.append(cert.fingerprint)
                }
            }
            else if entry(v, "ca") == nil { problems.append(L("vpn.ca: missing: vpnctl never trusts a server without its CA")) }
            if usesCertificate { openVPNClientCertificate(into: &c, type: type) }
            if usesPassword {
                // --username wins over the file's: the person importing says who they are.
                let fileUser = string(v, "username").flatMap { $0.isEmpty ? nil : $0 }
                c.username = options.username ?? fileUser
                if c.username == nil { notes.append(L("vpn.username: missing; the profile needs one (protocol.username; or import again with --username)")) }
                c.passwordSecret = secret("vpn-secrets", "password", flags: (v, "password-flags"), as: "password", required: true)
            }
            for (key, secretName) in [("tls-crypt", "tls-crypt"), ("tls-crypt-v2", "tls-crypt-v2"), ("ta", "tls-auth"), ("tls-auth", "tls-auth")] {
                guard let m = material(v, key) else { continue }
                guard String(decoding: m, as: UTF8.self).containsUTF8("-----BEGIN OpenVPN") else {
                    problems.append(L("\(at(v, key)): not an OpenVPN static key"))
                    continue
                }
                secrets[secretName] = m
                switch secretName {
                case "tls-crypt": c.tlsCryptSecret = secretName
                case "tls-auth": c.tlsAuthSecret = secretName
                default: c.tlsCryptV2Secret = secretName
                }
            }
            if let dir = string(v, "ta-dir"), !dir.isEmpty { option(["key-direction", dir], v, "ta-dir", into: &c) }
            openVPNOptions(into: &c)
            openVPNAddressing(into: &c)
            var p = Profile(name: name, protocol: .openvpn(c))
            let d = dns()
            if !d.servers.isEmpty || !d.search.isEmpty || !d.match.isEmpty {
                p.dnsSettings = DNSSettings(servers: d.servers, searchDomains: d.search, matchDomains: d.match)
                if !d.servers.isEmpty && !isTrue("ipv4", "ignore-auto-dns") {
                    notes.append(L("ipv4.dns: vpnctl uses these servers in place of the ones the server pushes (NetworkManager would add them to those)"))
                }
            }
            return p
        }

        /// The client certificate and its key (unencrypted: openvpn gets no
        /// passphrase from vpnctl), for the tls connection types.
        mutating func openVPNClientCertificate(into c: inout OpenVPNConfiguration, type: String) {
            let v = "vpn"
            if let cert = material(v, "cert") {
                if String(decoding: cert, as: UTF8.self).containsUTF8("-----BEGIN CERTIFICATE-----") { c.certificate = String(decoding: cert, as: UTF8.self) }
                else { problems.append(L("\(at(v, "cert")): no PEM certificate in it")) }
            } else if entry(v, "cert") == nil { problems.append(L("vpn.cert: missing (connection-type \(type) needs the client certificate)")) }
            if let key = material(v, "key") {
                let text = String(decoding: key, as: UTF8.self)
                if !text.containsUTF8("PRIVATE KEY-----") {
                    problems.append(L("\(at(v, "key")): no PEM private key in it"))
                } else if text.containsUTF8("ENCRYPTED") {
                    problems.append(L("\(at(v, "key")): the key is encrypted, and vpnctl cannot give openvpn its passphrase: decrypt it (openssl pkey -in KEY -out PLAIN) and import again"))
                } else {
                    secrets["key"] = key
                    c.keySecret = "key"
                }
            } else if entry(v, "key") == nil { problems.append(L("vpn.key: missing (connection-type \(type) needs the client key)")) }
            _ = int(v, "cert-pass-flags", 0...15)
            if string("vpn-secrets", "cert-pass") != nil {
                notes.append(L("vpn-secrets.cert-pass is not kept: the key is not encrypted"))
            }
        }

        /// `host[:port[:proto]]`, or `[v6]:port:proto`.
        mutating func openVPNRemote(_ text: String, port: Int, proto: String) -> OpenVPNConfiguration.Remote? {
            var host = text, rest: [Substring] = []
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                host = String(text[text.index(after: text.startIndex)..<close])
                rest = text[text.index(after: close)...].split(separator: ":", omittingEmptySubsequences: false).dropFirst().map { $0 }
            } else if text.filter({ $0 == ":" }).count <= 2 {
                let parts = text.split(separator: ":", omittingEmptySubsequences: false)
                host = String(parts[0])
                rest = Array(parts.dropFirst())
            }
            guard Endpoint.isHostName(host) || IPAddress(host) != nil else {
                problems.append(L("\(at("vpn", "remote")): \(host.quotedForMessage) is not a host name or an IP address"))
                return nil
            }
            var r = OpenVPNConfiguration.Remote(host: host, port: port, proto: proto)
            if let p = rest.first, !p.isEmpty {
                guard let n = Int(p), (1...65535).contains(n) else {
                    problems.append(L("\(at("vpn", "remote")): port \(String(p).quotedForMessage) is not 1–65535"))
                    return nil
                }
                r.port = n
            }
            if rest.count > 1, !rest[1].isEmpty {
                guard OpenVPNImport.protocols.contains(String(rest[1])) else {
                    problems.append(L("\(at("vpn", "remote")): protocol \(String(rest[1]).quotedForMessage) is not one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))"))
                    return nil
                }
                r.proto = String(rest[1])
            }
            return r
        }

        /// One directive into the profile's options, if vpnctl's allow-list takes it.
        mutating func option(_ words: [String], _ section: String, _ key: String, into c: inout OpenVPNConfiguration) {
            let line = OpenVPNDirectives.render(words)
            if let problem = OpenVPNDirectives.problem(in: line) {
                problems.append("\(at(section, key)): \(problem)")
            } else if !c.options.contains(line) {
                c.options.append(line)
            }
        }

        /// The plugin's data keys that are openvpn directives.
        mutating func openVPNOptions(into c: inout OpenVPNConfiguration) {
            let v = "vpn"
            let same: [(String, String)] = [("cipher", "cipher"), ("data-ciphers", "data-ciphers"),
                                             ("data-ciphers-fallback", "data-ciphers-fallback"), ("auth", "auth"),
                                             ("tls-cipher", "tls-cipher"), ("remote-cert-tls", "remote-cert-tls"),
                                             ("ns-cert-type", "ns-cert-type"), ("tunnel-mtu", "tun-mtu"), ("fragment-size", "fragment"),
                                             ("reneg-seconds", "reneg-sec"), ("ping", "ping"), ("ping-exit", "ping-exit"),
                                             ("ping-restart", "ping-restart"), ("connect-timeout", "connect-timeout"),
                                             ("mtu-disc", "mtu-disc"), ("allow-compression", "allow-compression"),
                                             ("tls-version-min", "tls-version-min"), ("tls-version-max", "tls-version-max")]
            for (key, directive) in same {
                guard let value = string(v, key), !value.isEmpty else { continue }
                option([directive] + value.split(separator: " ").map(String.init), v, key, into: &c)
            }
            for (key, directive) in [("float", "float"), ("remote-random", "remote-random"), ("push-peer-info", "push-peer-info")] {
                if bool(v, key) == true { option([directive], v, key, into: &c) }
            }
            if let m = string(v, "mssfix"), !m.isEmpty {
                option(["yes", "true"].contains(m.lowercased()) ? ["mssfix"] : ["mssfix", m], v, "mssfix", into: &c)
            }
            if let x = string(v, "verify-x509-name"), !x.isEmpty {
                // "subject:CN=...", "name:host" or "name-prefix:host".
                let parts = x.split(separator: ":", maxSplits: 1).map(String.init)
                if parts.count == 2, ["subject", "name", "name-prefix"].contains(parts[0]) {
                    option(["verify-x509-name", parts[1], parts[0]], v, "verify-x509-name", into: &c)
                } else {
                    problems.append(L("\(at(v, "verify-x509-name")): \(x.quotedForMessage) is not TYPE:NAME (subject, name or name-prefix)"))
                }
            }
            if let lzo = string(v, "comp-lzo"), !lzo.isEmpty {
                option(["comp-lzo", lzo == "no-by-default" ? "no" : lzo], v, "comp-lzo", into: &c)
            }
            if let z = string(v, "compress"), !z.isEmpty {
                option(z == "yes" ? ["compress"] : ["compress", z], v, "compress", into: &c)
            }
            if let z = c.options.first(where: { $0.hasPrefix("compress") || $0.hasPrefix("comp-lzo") }),
               z != "comp-lzo no", !c.options.contains(where: { $0.hasPrefix("allow-compression") }) {
                notes.append(L("'\(z)': openvpn 2.6's default, allow-compression asym, applies: it decompresses what the server sends but never compresses what it sends (compression with encryption leaks data, VORACLE)"))
            }
            // tun-ipv6 is obsolete in openvpn 2.6; max-routes too.
            for key in ["tun-ipv6", "max-routes"] where entry(v, key) != nil {
                used.insert("vpn.\(key)")
                notes.append(L("\(at(v, key)): no effect with openvpn 2.6"))
            }
            _ = string(v, "dev")
        }

        /// never-default, ignore-auto-*, and the routes of [ipv4]/[ipv6], as directives.
        mutating func openVPNAddressing(into c: inout OpenVPNConfiguration) {
            _ = string("ipv4", "method")
            // IPv6 off in NetworkManager: what the server pushes for IPv6 is not applied either.
            if let m = string("ipv6", "method"), m == "disabled" || m == "ignore" {
                option(["pull-filter", "ignore", "ifconfig-ipv6"], "ipv6", "method", into: &c)
                option(["pull-filter", "ignore", "route-ipv6"], "ipv6", "method", into: &c)
            }
            let v4 = isTrue("ipv4", "never-default"), v6 = isTrue("ipv6", "never-default")
            if v4 || v6 {
                // pull-filter cannot tell the families apart: the pushed redirect-gateway goes as a whole.
                option(["pull-filter", "ignore", "redirect-gateway"], v4 ? "ipv4" : "ipv6", "never-default", into: &c)
                if v4 != v6 {
                    notes.append(L("\(v4 ? "ipv4" : "ipv6").never-default: vpnctl ignores the server's redirect-gateway for both IPv4 and IPv6 (openvpn's pull-filter cannot tell them apart)"))
                }
            }
            if isTrue("ipv4", "ignore-auto-routes") || isTrue("ipv6", "ignore-auto-routes") {
                option(["pull-filter", "ignore", "route"], isTrue("ipv4", "ignore-auto-routes") ? "ipv4" : "ipv6", "ignore-auto-routes", into: &c)
            }
            if isTrue("ipv4", "ignore-auto-dns") || isTrue("ipv6", "ignore-auto-dns") {
                option(["pull-filter", "ignore", "dhcp-option"], isTrue("ipv4", "ignore-auto-dns") ? "ipv4" : "ipv6", "ignore-auto-dns", into: &c)
            }
            for r in routes("ipv4") {
                var words = ["route", r.prefix.address.description, netmask(r.prefix.prefixLength)]
                if r.gateway != nil || r.metric != nil { words.append(r.gateway ?? "vpn_gateway") }
                if let m = r.metric { words.append(String(m)) }
                option(words, "ipv4", r.key, into: &c)
            }
            for r in routes("ipv6") {
                var words = ["route-ipv6", r.prefix.description]
                if r.gateway != nil || r.metric != nil { words.append(r.gateway ?? "default") }
                if let m = r.metric { words.append(String(m)) }
                option(words, "ipv6", r.key, into: &c)
            }
        }

        func netmask(_ bits: Int) -> String {
            let m: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - UInt32(bits))
            return [24, 16, 8, 0].map { String((m >> UInt32($0)) & 0xFF) }.joined(separator: ".")
        }

        // MARK: strongSwan (IKEv2)

        mutating func strongSwan() -> Profile? {
            let v = "vpn"
            guard let address = string(v, "address"), !address.isEmpty else {
                problems.append(L("vpn.address: missing (the IKEv2 server)"))
                return nil
            }
            guard Endpoint.isHostName(address) || IPAddress(address) != nil else {
                problems.append(L("\(at(v, "address")): \(address.quotedForMessage) is not a host name or an IP address"))
                return nil
            }
            // The plugin checks the server's certificate against its address when no identity is given.
            var c = IKEv2Configuration(serverAddress: address, remoteIdentifier: string(v, "remote-identity").flatMap { $0.isEmpty ? nil : $0 } ?? address,
                                       localIdentifier: string(v, "local-identity").flatMap { $0.isEmpty ? nil : $0 })
            let method = string(v, "method") ?? "key"
            switch method {
            case "eap":
                c.authenticationMethod = .none
                let fileUser = string(v, "user").flatMap { $0.isEmpty ? nil : $0 }
                c.username = options.username ?? fileUser
                if c.username == nil { problems.append(L("vpn.user: missing (EAP needs a username; or import with --username)")) }
                c.passwordSecret = secret("vpn-secrets", "password", flags: (v, "password-flags"), as: "password", required: true)
            case "psk":
                c.authenticationMethod = .sharedSecret
                c.sharedSecretSecret = secret("vpn-secrets", "password", flags: (v, "password-flags"), as: "shared-secret", required: true)
            case "key", "cert":
                guard strongSwanCertificate(&c, method: method) else { return nil }
            default:
                problems.append(L("\(at(v, "method")): \(method.quotedForMessage) is not supported; vpnctl imports eap, psk and key (a certificate and its key file), not an ssh-agent or a smartcard"))
                return nil
            }
            if let ca = material(v, "certificate") {
                // An IKEv2 profile trusts one anchor: the first certificate (the plugin's file is one CA, or the server's own).
                let certs = certificates(ca, v, "certificate")
                if let first = certs.first {
                    anchors[first.fingerprint] = first.pem
                    c.caFingerprint = first.fingerprint
                }
                if certs.count > 1 { notes.append(L("\(at(v, "certificate")): only its first certificate is kept as the trust anchor (an IKEv2 profile has one); \(certs.count - 1) more left out")) }
            } else if entry(v, "certificate") == nil && method != "psk" {
                problems.append(L("vpn.certificate: missing: the plugin would trust the system's CAs; vpnctl needs the CA that signs the server's certificate (certificate=FILE)"))
            }
            readStrongSwanProposals(&c)
            // Set to yes these change the tunnel, and vpnctl cannot: listed as not carried.
            for k in ["encap", "ipcomp"] where bool(v, k) == true { used.remove("vpn.\(k)") }
            for family in ["ipv4", "ipv6"] {
                // IPv6 off is not one vpnctl's IKEv2 profile can say: listed as not carried.
                if let m = string(family, "method"), family == "ipv6", m == "disabled" || m == "ignore" { used.remove("ipv6.method") }
                for k in ["never-default", "ignore-auto-routes", "ignore-auto-dns"] where bool(family, k) == true {
                    used.remove("\(family).\(k)")
                }
            }
            var p = Profile(name: name, protocol: .ikev2(c))
            let d = dns()
            if !d.servers.isEmpty || !d.search.isEmpty || !d.match.isEmpty {
                p.dnsSettings = DNSSettings(servers: d.servers, searchDomains: d.search, matchDomains: d.match)
            }
            return p
        }

        /// method key (or cert): the client certificate and its unencrypted
        /// key, as the secret 'identity'; false when they cannot be used.
        mutating func strongSwanCertificate(_ c: inout IKEv2Configuration, method: String) -> Bool {
            let v = "vpn"
            c.authenticationMethod = .certificate
            guard let cert = material(v, "usercert"), let key = material(v, "userkey") else {
                for k in ["usercert", "userkey"] where entry(v, k) == nil {
                    problems.append(L("vpn.\(k): missing (method \(method) needs the client certificate and its key)"))
                }
                return false
            }
            let keyText = String(decoding: key, as: UTF8.self)
            guard String(decoding: cert, as: UTF8.self).containsUTF8("-----BEGIN CERTIFICATE-----") else {
                problems.append(L("\(at(v, "usercert")): no PEM certificate in it"))
                return false
            }
            guard keyText.containsUTF8("PRIVATE KEY-----"), !keyText.containsUTF8("ENCRYPTED") else {
                problems.append(L("\(at(v, "userkey")): not an unencrypted PEM private key (decrypt it with openssl pkey -in KEY -out PLAIN, and import again)"))
                return false
            }
            var identity = cert
            if identity.last != 0x0A { identity.append(0x0A) }
            secrets["identity"] = identity + key
            c.identitySecret = "identity"
            _ = int(v, "password-flags", 0...15)
            if string("vpn-secrets", "password") != nil { notes.append(L("vpn-secrets.password is not kept: the key is not encrypted")) }
            return true
        }

        /// vpn.virtual, and the proposals when vpn.proposal is yes.
        mutating func readStrongSwanProposals(_ c: inout IKEv2Configuration) {
            let v = "vpn"
            if let virtual = bool(v, "virtual") { c.useServerVirtualIP = virtual }
            if isTrue(v, "proposal") {
                let ike = (string(v, "ike") ?? "").split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
                let esp = (string(v, "esp") ?? "").split(separator: ",").map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
                if !ike.isEmpty { c.ikeProposals = ike }
                if !esp.isEmpty { c.childProposals = esp }
            } else {
                for k in ["ike", "esp"] where entry(v, k) != nil {
                    used.insert("vpn.\(k)")
                    notes.append(L("\(at(v, k)): not used, since vpn.proposal is not yes (the plugin ignores it too)"))
                }
            }
        }
    }

    /// Whether prefix `a` holds all of `b`.
    static func covers(_ a: CIDR, _ b: CIDR) -> Bool {
        guard a.address.isIPv6 == b.address.isIPv6, a.prefixLength <= b.prefixLength else { return false }
        var bits = a.prefixLength
        for (x, y) in zip(a.address.bytes, b.address.bytes) {
            if bits <= 0 { return true }
            let mask: UInt8 = bits >= 8 ? 0xFF : ~UInt8(0) << UInt8(8 - bits)
            if x & mask != y & mask { return false }
            bits -= 8
        }
        return true
    }
}

extension NMKeyfileImport.Importer {
    func covers(_ a: CIDR, _ b: CIDR) -> Bool { NMKeyfileImport.covers(a, b) }
}
