import FoundationEssentials

/// `vpnctl create NAME wireguard|openvpn`: a profile from command-line
/// fields, made by the same readers the wg-quick and .ovpn importers use,
/// so that a created profile is the one the equivalent file imports as.
/// Each problem names the option that gave the value.

/// The fields of a one-peer wg-quick file. Key values are base64 text.
public struct WireGuardFields: Sendable {
    public var privateKey: [UInt8]
    public var addresses: [String] = []
    public var dns: [String] = []
    public var mtu: String?
    public var listenPort: String?
    public var peerPublicKey: String
    public var presharedKey: [UInt8]?
    public var allowedIPs: [String] = []
    public var endpoint: String?
    public var persistentKeepalive: String?

    public init(privateKey: [UInt8], peerPublicKey: String) {
        self.privateKey = privateKey
        self.peerPublicKey = peerPublicKey
    }
}

/// The fields of an OpenVPN client file: its remotes, the CA, the client
/// certificate and key or an auth-user-pass username, static keys, and
/// further directives (checked against the same allow-list as an import's).
public struct OpenVPNFields: Sendable {
    public struct Remote: Sendable {
        public var host: String
        public var port: Int?
        public var proto: String?
        public init(host: String, port: Int? = nil, proto: String? = nil) {
            self.host = host
            self.port = port
            self.proto = proto
        }
    }
    public var remotes: [Remote] = []
    public var proto: String?
    public var port: String?
    public var devType: String?
    public var ca: [UInt8]
    public var certificate: [UInt8]?
    public var key: [UInt8]?
    public var username: String?
    public var tlsCrypt: [UInt8]?
    public var tlsAuth: [UInt8]?
    /// `DIRECTIVE ARGS...`, each as one line of a .ovpn file would be.
    public var options: [String] = []

    public init(ca: [UInt8]) { self.ca = ca }
}

extension WGQuick {
    /// The profile (and its secrets) a wg-quick file with these fields
    /// imports as; every problem at once, each naming its option.
    public static func profile(_ f: WireGuardFields, name: String) throws -> ImportResult {
        var r = Reader()
        r.section = "interface"
        r.seen.insert("[interface]")
        r.setInterface("privatekey", "PrivateKey", String(decoding: f.privateKey, as: UTF8.self), at: "--private-key-file")
        if !f.addresses.isEmpty { r.setInterface("address", "Address", f.addresses.joined(separator: ","), at: "--address") }
        if !f.dns.isEmpty { r.setInterface("dns", "DNS", f.dns.joined(separator: ","), at: "--dns") }
        if let m = f.mtu { r.setInterface("mtu", "MTU", m, at: "--mtu") }
        if let p = f.listenPort { r.setInterface("listenport", "ListenPort", p, at: "--listen-port") }
        r.section = "peer"
        r.peer = WireGuardPeer(publicKey: "")
        r.setPeer("publickey", "PublicKey", f.peerPublicKey, at: "--peer-public-key")
        if let k = f.presharedKey { r.setPeer("presharedkey", "PresharedKey", String(decoding: k, as: UTF8.self), at: "--preshared-key-file") }
        if !f.allowedIPs.isEmpty { r.setPeer("allowedips", "AllowedIPs", f.allowedIPs.joined(separator: ","), at: "--allowed-ips") }
        if let e = f.endpoint { r.setPeer("endpoint", "Endpoint", e, at: "--endpoint") }
        if let k = f.persistentKeepalive { r.setPeer("persistentkeepalive", "PersistentKeepalive", k, at: "--persistent-keepalive") }
        r.finishPeer()
        try CreateFields.check(r.problems, name: name, protocol: "wireguard")
        return try r.result(name: name, source: "create")
    }
}

extension OpenVPNImport {
    /// The profile, secrets and trust anchors an .ovpn file with these
    /// fields imports as (the key material inline); every problem at once,
    /// each naming its option.
    public static func profile(_ f: OpenVPNFields, name: String) throws -> ImportResult {
        var im = Importer(name: name, source: "create", options: ImportOptions(username: f.username))
        func directive(_ words: [String], _ option: String) -> Directive {
            Directive(line: 0, name: OpenVPNDirectives.name(words), args: Array(words.dropFirst()), label: option)
        }
        if let t = f.devType { im.directives.append(directive(["dev-type", t], "--dev-type")) }
        if let p = f.proto { im.directives.append(directive(["proto", p], "--proto")) }
        if let p = f.port { im.directives.append(directive(["port", p], "--port")) }
        for option in f.options {
            guard let words = OpenVPNDirectives.tokenize(option), !words.isEmpty else {
                im.problems.append(L("--option '\(OpenVPNDirectives.shown(option))': not one directive with its arguments (a quote never closed, or a stray '\\')"))
                continue
            }
            if option.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                im.problems.append(L("--option: a control character in '\(OpenVPNDirectives.shown(option))'"))
                continue
            }
            let d = directive(words, "--option '\(OpenVPNDirectives.shown(option))'")
            if d.name == "script-security" {
                im.problems.append(L("--option '\(OpenVPNDirectives.shown(option))': vpnctl runs no scripts, so there is nothing for script-security to allow"))
                continue
            }
            // The fields have options of their own; a second way to say them would disagree.
            if OpenVPNImport.consumed.contains(d.name) && d.name != "client" {
                im.problems.append(L("--option '\(OpenVPNDirectives.shown(option))': '\(d.shown)' is given with its own option of 'vpnctl create' (see 'vpnctl help create')"))
                continue
            }
            im.directives.append(d)
        }
        im.applyDirectives()
        for (i, remote) in f.remotes.enumerated() {
            let option = f.remotes.count == 1 ? "--remote" : "--remote (\(i + 1))"
            let proto = remote.proto ?? im.defaultProto
            if !Endpoint.isHostName(remote.host) && IPAddress(remote.host) == nil {
                im.problems.append(L("\(option): '\(OpenVPNDirectives.shown(remote.host))' is not a host name or an IP address"))
            } else if let p = remote.port, !(1...65535).contains(p) {
                im.problems.append(L("\(option): the port \(p) is not 1–65535"))
            } else if !OpenVPNImport.protocols.contains(proto) {
                im.problems.append(L("\(option): the protocol '\(OpenVPNDirectives.shown(proto))' is not one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))"))
            } else {
                im.remoteDirectives.append(directive(["remote", remote.host, String(remote.port ?? im.defaultPort), proto], option))
            }
        }
        if !im.problems.isEmpty { try CreateFields.check(im.problems, name: name, protocol: "openvpn") }
        im.resolveRemotes()
        let material: [(tag: String, option: String, bytes: [UInt8]?)] = [
            ("ca", "--ca", f.ca), ("cert", "--cert", f.certificate), ("key", "--key", f.key),
            ("tls-crypt", "--tls-crypt", f.tlsCrypt), ("tls-auth", "--tls-auth", f.tlsAuth),
        ]
        for m in material {
            guard let bytes = m.bytes else { continue }
            im.blocks[m.tag] = (0, String(decoding: bytes, as: UTF8.self))
        }
        if f.username != nil { im.seen["auth-user-pass"] = Directive(line: 0, name: "auth-user-pass", args: [], label: "--username") }
        let before = im.problems.count
        im.importMaterial()
        for i in before..<im.problems.count {
            if let m = material.first(where: { im.problems[i].hasPrefix("<\($0.tag)>:") }) {
                im.problems[i] = "\(m.option): " + im.problems[i]
            }
        }
        try CreateFields.check(im.problems, name: name, protocol: "openvpn")
        var result = try im.result()
        // The password is read by create, not left for later: the notes saying so are an import's.
        result.notes.removeAll { $0.hasPrefix("auth-user-pass:") }
        return result
    }
}

enum CreateFields {
    static func check(_ problems: [String], name: String, protocol: String) throws {
        guard !problems.isEmpty else { return }
        throw VPNError.invalid(problems.count == 1 ? L("create \(name) \(`protocol`): 1 problem")
                                                   : L("create \(name) \(`protocol`): \(problems.count) problems"),
                               problems: problems, hint: L("see 'vpnctl help create'"))
    }
}

extension OpenVPNImport {
    /// The transports a remote may use, sorted (for help and completion).
    public static var transports: [String] { protocols.sorted() }
}

extension ImportResult {
    /// A profile made from options (`vpnctl create ikev2`), with its secrets and anchors.
    public init(created profile: Profile, secrets: [String: [UInt8]], anchors: [String: [UInt8]]) {
        self.init(profile: profile, secrets: secrets, notes: [])
        self.anchors = anchors
    }
}
