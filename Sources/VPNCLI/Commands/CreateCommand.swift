import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl create NAME wireguard|openvpn|ikev2 ...`: a profile without a
/// file. Secret values come from standard input or a file, never from the
/// command line. WireGuard and OpenVPN profiles are made by the importers'
/// own readers (`WGQuick.profile`, `OpenVPNImport.profile`).
enum CreateCommand {
    static let spec = CommandSpec(
        name: "create", abstract: L("Create a WireGuard, OpenVPN or IKEv2 profile from options, without a file."),
        discussion: L("""
        vpnctl create office ikev2 --server vpn.example.com --remote-id vpn.example.com \\
          --auth psk --local-id me@example.com < psk.txt
        --auth psk reads the shared secret, --auth eap the password, from --secret-file
        (or standard input; on a terminal vpnctl asks without echoing). --auth certificate
        takes --cert and --key (PEM), or --identity FILE.p12 (its password from --secret-file
        or standard input); the pair becomes the secret 'identity'. --ca installs
        the CA certificate as a trust anchor (the config dir's trust/, named by its SHA-256):
        the server's certificate must chain to it and carry the remote identifier.
        Then 'vpnctl start NAME'; 'vpnctl edit NAME' changes proposals, DPD, MOBIKE, MTU.
        """) + "\n" + L("""
        wireguard: the fields of a wg-quick file with one peer. The private key comes
        from --private-key-file FILE ('-': standard input) or --generate-key, the
        preshared key from --preshared-key-file; both become secrets, as import makes
        them. Needs --address, --peer-public-key, --allowed-ips and --endpoint.
        openvpn: the fields of a .ovpn client file. Needs --remote HOST[:PORT[:PROTO]]
        (again for more servers; --port and --proto are the defaults, 1194 and udp) and --ca;
        then --cert and --key, or --username (the password from --secret-file or
        standard input), or both. --tls-crypt and --tls-auth take static key files;
        --option 'DIRECTIVE ARGS' passes a directive that an imported file could carry.
        The profile is the one importing the equivalent file makes.
        """),
        examples: [
            "vpnctl create office ikev2 --server vpn.example.com --remote-id vpn.example.com --auth psk < psk.txt",
            "vpnctl create road ikev2 --server 198.18.0.1 --remote-id vpn.lab.test --auth eap --username bob --ca ca.crt",
            "vpnctl genkey | vpnctl create home wireguard --private-key-file - --address 10.0.0.2/32 --peer-public-key KEY --allowed-ips 0.0.0.0/0 --endpoint vpn.example.com:51820",
            "vpnctl create work openvpn --remote vpn.example.com:1194 --ca ca.crt --cert me.crt --key me.key",
        ],
        options: [OptionSpec("server", value: "host", help: L("The server's name or address.")),
                  OptionSpec("remote-id", value: "id", help: L("The server's IKE identity (its certificate's name).")),
                  OptionSpec("local-id", value: "id", help: L("This client's IKE identity.")),
                  OptionSpec("auth", value: "method", kind: .choice(["psk", "eap", "certificate"]), help: L("psk, eap (EAP-MSCHAPv2) or certificate.")),
                  OptionSpec("username", value: "user", help: L("The EAP username (ikev2), or the auth-user-pass username (openvpn).")),
                  OptionSpec("ca", value: "file", kind: .file, help: L("The CA certificate (PEM) the server's certificate must chain to.")),
                  OptionSpec("cert", value: "file", kind: .file, help: L("The client certificate (PEM), with --auth certificate.")),
                  OptionSpec("key", value: "file", kind: .file, help: L("The client's private key (PEM), with --auth certificate.")),
                  OptionSpec("identity", value: "file", kind: .file, help: L("The client certificate and key as PKCS#12 (.p12, or a .mobileconfig's identity payload; its password from --secret-file or stdin).")),
                  OptionSpec("identity-payload", value: "name", help: L("Which identity payload of a .mobileconfig --identity (PayloadDisplayName, PayloadIdentifier or PayloadUUID).")),
                  OptionSpec("secret-file", value: "file", kind: .file, help: L("Read the shared secret or password from this file ('-': standard input)."))]
            + wireGuardOptions + openVPNOptions,
        positionals: [PositionalSpec("name", help: L("The new profile's name.")),
                      PositionalSpec("protocol", kind: .choice(["wireguard", "openvpn", "ikev2"]), help: L("The protocol: wireguard, openvpn or ikev2."))],
        run: run)

    static let wireGuardOptions: [OptionSpec] = [
        OptionSpec("private-key-file", value: "file", kind: .file, help: L("wireguard: read the interface's private key (base64) from this file ('-': standard input).")),
        OptionSpec("generate-key", help: L("wireguard: make a new private key (as 'vpnctl genkey'); its public key is printed.")),
        OptionSpec("address", value: "prefix", repeatable: true, help: L("wireguard: the interface's address with its prefix (again, or comma-separated, for more).")),
        OptionSpec("dns", value: "server", repeatable: true, help: L("wireguard: a DNS server or search domain (again, or comma-separated, for more).")),
        OptionSpec("mtu", value: "bytes", help: L("wireguard: the interface's MTU (576–65535).")),
        OptionSpec("listen-port", value: "port", help: L("wireguard: the UDP port to listen on (default: any).")),
        OptionSpec("peer-public-key", value: "key", help: L("wireguard: the server's public key (base64).")),
        OptionSpec("preshared-key-file", value: "file", kind: .file, help: L("wireguard: read the peer's preshared key (base64) from this file ('-': standard input).")),
        OptionSpec("allowed-ips", value: "prefixes", repeatable: true, help: L("wireguard: what goes through the tunnel (0.0.0.0/0, ::/0 for everything; again, or comma-separated).")),
        OptionSpec("endpoint", value: "host:port", help: L("wireguard: the server's address and port.")),
        OptionSpec("persistent-keepalive", value: "seconds", help: L("wireguard: send a keepalive this often (off, or 1–65535 seconds).")),
    ]

    static let openVPNOptions: [OptionSpec] = [
        OptionSpec("remote", value: "host[:port[:proto]]", repeatable: true, help: L("openvpn: a server (again for more; tried in order).")),
        OptionSpec("port", value: "port", help: L("openvpn: the port of a --remote that names none (default 1194).")),
        OptionSpec("proto", value: "proto", kind: .choice(OpenVPNImport.transports), help: L("openvpn: udp or tcp (tcp-client), udp4, tcp6...; default udp.")),
        OptionSpec("dev-type", value: "type", kind: .choice(["tun"]), help: L("openvpn: the device type; only tun is supported.")),
        OptionSpec("tls-crypt", value: "file", kind: .file, help: L("openvpn: the tls-crypt static key file.")),
        OptionSpec("tls-auth", value: "file", kind: .file, help: L("openvpn: the tls-auth static key file (its direction with --option 'key-direction 1').")),
        OptionSpec("option", value: "directive", repeatable: true, help: L("openvpn: one more client directive, as a .ovpn line ('cipher AES-256-GCM'); checked as an import checks it.")),
    ]

    /// The options each protocol takes; the others are refused by name.
    static let optionsOf: [String: Set<String>] = [
        "ikev2": ["server", "remote-id", "local-id", "auth", "username", "ca", "cert", "key", "identity", "identity-payload", "secret-file"],
        "wireguard": Set(wireGuardOptions.map(\.name)),
        "openvpn": Set(openVPNOptions.map(\.name)).union(["ca", "cert", "key", "username", "secret-file"]),
    ]

    static func run(_ inv: Invocation) throws -> ExitCode {
        let name = inv.args.positionals[0], proto = inv.args.positionals[1]
        if let problem = ProfileName.problems(name).first {
            throw VPNError(.usage, L("invalid profile name \(name.quotedForMessage): \(problem)"))
        }
        guard let allowed = optionsOf[proto] else {
            throw VPNError(.usage, L("create makes wireguard, openvpn and ikev2 profiles; \(proto.quotedForMessage) is none of them"),
                           hint: L("a profile of another kind comes from its file: vpnctl import FILE"))
        }
        let own = Set(spec.options.map(\.name))
        let foreign = inv.args.values.keys.filter { own.contains($0) && !allowed.contains($0) }
            + inv.args.flags.filter { own.contains($0) && !allowed.contains($0) }
        if !foreign.isEmpty {
            let list = foreign.sorted().map { "--" + $0 }.joined(separator: ", ")
            let owners = foreign.sorted().compactMap { o in ["wireguard", "openvpn", "ikev2"].first { optionsOf[$0]!.contains(o) }.map { "--\(o): \($0)" } }
            throw VPNError(.usage, L("create \(name) \(proto) takes no \(list)"),
                           hint: owners.isEmpty ? L("see 'vpnctl help create'") : L("those are for other protocols (\(owners.joined(separator: ", "))); see 'vpnctl help create'"))
        }
        switch proto {
        case "wireguard": return try commit(inv, try wireGuard(inv, name: name))
        case "openvpn": return try commit(inv, try openVPN(inv, name: name))
        default: return try commit(inv, try ikev2(inv, name: name))
        }
    }

    /// `create NAME ikev2`: a server, its identity, and psk, eap or a certificate.
    static func ikev2(_ inv: Invocation, name: String) throws -> ImportResult {
        try checkIKEv2Options(inv, name: name)
        let server = inv.args.value("server"), remoteID = inv.args.value("remote-id"), auth = inv.args.value("auth")
        var c = IKEv2Configuration(serverAddress: server!, remoteIdentifier: remoteID, localIdentifier: inv.args.value("local-id"))
        var secrets: [String: [UInt8]] = [:]
        switch auth! {
        case "psk":
            c.authenticationMethod = .sharedSecret
            c.sharedSecretSecret = "shared-secret"
            secrets["shared-secret"] = try readSecret(inv, what: "the shared secret")
        case "eap":
            c.authenticationMethod = .none
            c.username = inv.args.value("username")
            c.passwordSecret = "password"
            secrets["password"] = try readSecret(inv, what: "the EAP password")
        case "certificate":
            c.authenticationMethod = .certificate
            c.identitySecret = "identity"
            if let p12 = inv.args.value("identity") {
                secrets["identity"] = try identity(inv, p12)
            } else {
                let cert = try readFile(inv.args.value("cert")!, "the client certificate")
                let key = try readFile(inv.args.value("key")!, "the private key")
                secrets["identity"] = cert + (cert.last == 0x0A ? [] : [0x0A]) + key
            }
        default:
            throw VPNError(.usage, L("--auth \(auth!.quotedForMessage) is not psk, eap or certificate"))
        }
        var anchors: [String: [UInt8]] = [:]
        if let ca = inv.args.value("ca") {
            let blocks = PEM.blocks(String(decoding: try readFile(ca, "the CA certificate"), as: UTF8.self)).filter { $0.label == "CERTIFICATE" }
            guard blocks.count == 1, let der = blocks[0].der else {
                throw VPNError(.configurationInvalid, L("\(ca.abbreviated(200)) must hold exactly one PEM certificate (the CA's); it holds \(blocks.count)"))
            }
            let fp = SHA256.hex(der)
            c.caFingerprint = fp
            anchors[fp] = Array(PEM.encode(label: "CERTIFICATE", der: der).utf8)
        }
        return ImportResult(created: Profile(name: name, protocol: .ikev2(c)), secrets: secrets, anchors: anchors)
    }

    /// The options `create NAME ikev2` cannot go without, named all at once.
    static func checkIKEv2Options(_ inv: Invocation, name: String) throws {
        var missing: [String] = []
        let server = inv.args.value("server"), remoteID = inv.args.value("remote-id"), auth = inv.args.value("auth")
        if server == nil { missing.append("--server <host>") }
        if remoteID == nil { missing.append("--remote-id <id>") }
        if auth == nil { missing.append("--auth psk|eap|certificate") }
        if auth == "eap" && inv.args.value("username") == nil { missing.append("--username <user> (with --auth eap)") }
        if auth == "certificate" && inv.args.value("identity") == nil {
            switch (inv.args.value("cert"), inv.args.value("key")) {
            case (nil, nil): missing.append("--cert <file> and --key <file>, or --identity <file.p12> (with --auth certificate)")
            case (nil, _): missing.append("--cert <file> (with --key)")
            case (_, nil): missing.append("--key <file> (with --cert)")
            default: break
            }
        }
        if (auth == "eap" || auth == "certificate") && inv.args.value("ca") == nil {
            missing.append("--ca <file> (the server's certificate is checked against it)")
        }
        if !missing.isEmpty {
            throw VPNError(.usage, L("create \(name) ikev2 needs \(missing.joined(separator: ", "))"), hint: L("see 'vpnctl help create'"))
        }
    }

    /// `--identity FILE`: a .mobileconfig's identity payload, or a .p12.
    static func identity(_ inv: Invocation, _ p12: String) throws -> [UInt8] {
        let bytes = try readFile(p12, "the identity", limit: ImportFormat.maximumSize)
        if MobileConfig.recognizes(bytes) { return try identityPayload(inv, bytes, file: p12) }
        if inv.args.value("identity-payload") != nil {
            throw VPNError.usage(L("--identity-payload picks a payload of a .mobileconfig, and \(p12.abbreviated(200)) is not one"))
        }
        return try readPKCS12(bytes, file: p12, password: try readSecret(inv, what: "the password of \(p12.abbreviated(100))"))
    }

    /// Saves a new profile as import does: its secrets (0600 files, keyed by
    /// its id) and trust anchors first, then the profile; a failure removes
    /// the secrets again. The output is import's, `--json` included.
    static func commit(_ inv: Invocation, _ made: ImportResult) throws -> ExitCode {
        let imports = ProfileImport(store: inv.store, runtime: inv.controller.runtime)
        let c = try imports.commit(try imports.planCreate(made)).plan.changes[0]
        for note in c.notes { inv.output.note(L("note: \(note)")) }
        let p = c.profile
        ImportCommand.render(inv, c, headline: L("created '\(p.name)' (\(p.protocol.kind.rawValue), id \(p.id.lowercasedString))"),
                             nextSteps: p.protocol.model.createPrintsNextSteps)
        return .ok
    }

    /// `create NAME wireguard`: the fields of a one-peer wg-quick file.
    static func wireGuard(_ inv: Invocation, name: String) throws -> ImportResult {
        let a = inv.args
        var missing: [String] = []
        if a.value("private-key-file") == nil && !a.flag("generate-key") {
            missing.append("--private-key-file <file> ('-': standard input) or --generate-key")
        }
        if a.all("address").isEmpty { missing.append("--address <prefix>") }
        if a.value("peer-public-key") == nil { missing.append("--peer-public-key <key>") }
        if a.all("allowed-ips").isEmpty { missing.append("--allowed-ips <prefixes>") }
        if a.value("endpoint") == nil { missing.append("--endpoint <host:port>") }
        if !missing.isEmpty {
            throw VPNError(.usage, L("create \(name) wireguard needs \(missing.joined(separator: ", "))"), hint: L("see 'vpnctl help create'"))
        }
        if a.value("private-key-file") != nil && a.flag("generate-key") {
            throw VPNError.usage(L("--private-key-file and --generate-key both give the private key; choose one"))
        }
        if a.value("private-key-file") == "-" && a.value("preshared-key-file") == "-" {
            throw VPNError.usage(L("--private-key-file and --preshared-key-file cannot both read standard input"),
                                 hint: L("name a file for one of them"))
        }
        let privateKey: [UInt8]
        if let file = a.value("private-key-file") {
            privateKey = try readKey(inv, file, what: "the private key")
        } else {
            do { privateKey = Array(Data(try X25519.generatePrivateKey()).base64EncodedString().utf8) } catch let p as Crypto.Problem {
                throw VPNError(.failure, L("cannot make a key: \(p.message)"))
            }
        }
        var f = WireGuardFields(privateKey: privateKey, peerPublicKey: a.value("peer-public-key")!)
        f.addresses = a.all("address")
        f.dns = a.all("dns")
        f.mtu = a.value("mtu")
        f.listenPort = a.value("listen-port")
        f.allowedIPs = a.all("allowed-ips")
        f.endpoint = a.value("endpoint")
        f.persistentKeepalive = a.value("persistent-keepalive")
        if let file = a.value("preshared-key-file") { f.presharedKey = try readKey(inv, file, what: "the preshared key") }
        return try WGQuick.profile(f, name: name)
    }

    /// `create NAME openvpn`: the fields of a .ovpn client file.
    static func openVPN(_ inv: Invocation, name: String) throws -> ImportResult {
        let a = inv.args
        var missing: [String] = []
        if a.all("remote").isEmpty { missing.append("--remote <host[:port[:proto]]>") }
        if a.value("ca") == nil { missing.append("--ca <file> (the server's certificate is checked against it)") }
        switch (a.value("cert"), a.value("key"), a.value("username")) {
        case (nil, nil, nil): missing.append("--cert <file> and --key <file>, or --username <user>")
        case (nil, .some, _): missing.append("--cert <file> (with --key)")
        case (.some, nil, _): missing.append("--key <file> (with --cert)")
        default: break
        }
        if !missing.isEmpty {
            throw VPNError(.usage, L("create \(name) openvpn needs \(missing.joined(separator: ", "))"), hint: L("see 'vpnctl help create'"))
        }
        if a.value("username") == nil, a.value("secret-file") != nil {
            throw VPNError.usage(L("--secret-file gives the password of --username, and there is no --username"))
        }
        var f = OpenVPNFields(ca: try readFile(a.value("ca")!, "the CA certificate"))
        for (i, text) in a.all("remote").enumerated() {
            let option = a.all("remote").count == 1 ? "--remote" : "--remote (\(i + 1))"
            f.remotes.append(try remote(text, option: option))
        }
        f.proto = a.value("proto")
        f.port = a.value("port")
        f.devType = a.value("dev-type")
        if let c = a.value("cert") { f.certificate = try readFile(c, "the client certificate") }
        if let k = a.value("key") { f.key = try readFile(k, "the private key") }
        if let t = a.value("tls-crypt") { f.tlsCrypt = try readFile(t, "the tls-crypt key") }
        if let t = a.value("tls-auth") { f.tlsAuth = try readFile(t, "the tls-auth key") }
        f.options = a.all("option")
        f.username = a.value("username")
        var result = try OpenVPNImport.profile(f, name: name)
        if let user = f.username { result.secrets["password"] = try readSecret(inv, what: "the password of \(user.abbreviated(100))") }
        return result
    }

    /// `--remote HOST`, `HOST:PORT` or `[IPv6]:PORT`, each optionally with
    /// `:PROTO` after it, as nmcli writes remotes (a bare IPv6 address has
    /// neither).
    static func remote(_ text: String, option: String) throws -> OpenVPNFields.Remote {
        var text = text, proto: String?
        if let colon = text.lastIndex(of: ":"), OpenVPNImport.transports.contains(String(text[text.index(after: colon)...])) {
            proto = String(text[text.index(after: colon)...])
            text = String(text[..<colon])
        }
        if IPAddress(text) != nil || !text.contains(":") { return .init(host: text, proto: proto) }
        switch Endpoint.parse(text) {
        case .success(let e): return .init(host: e.host, port: e.port, proto: proto)
        case .failure(.badPort):
            throw VPNError(.configurationInvalid, L("\(option) \(text.abbreviated(100).quotedForMessage): the port must be 1–65535"))
        case .failure:
            throw VPNError(.configurationInvalid, L("\(option) \(text.abbreviated(100).quotedForMessage) is not HOST, HOST:PORT or [IPv6]:PORT (then optionally :udp or :tcp)"))
        }
    }

    /// A key file ('-': standard input; on a terminal, asked without echo),
    /// surrounding spaces and line breaks removed.
    static func readKey(_ inv: Invocation, _ file: String, what: String) throws -> [UInt8] {
        var bytes: [UInt8]
        if file == "-" && inv.context.stdinIsTerminal {
            bytes = inv.context.readSecretFromTerminal("\(what): ")
        } else if file == "-" {
            do { bytes = try inv.context.readStdin(4096) } catch {
                throw VPNError(.usage, L("cannot read \(what) from standard input: \(error)"))
            }
        } else {
            bytes = try readFile(file, what)
        }
        while let l = bytes.last, l == 0x0A || l == 0x0D || l == 0x20 || l == 0x09 { bytes.removeLast() }
        while let f = bytes.first, f == 0x0A || f == 0x0D || f == 0x20 || f == 0x09 { bytes.removeFirst() }
        if bytes.isEmpty {
            throw VPNError(.usage, L("no value for \(what) on \(file == "-" ? "standard input" : file.abbreviated(200))"),
                           hint: L("make one with 'vpnctl genkey', or pipe it in: vpnctl genkey | vpnctl create ... --private-key-file -"))
        }
        return bytes
    }

    /// `--identity FILE.mobileconfig`: its PKCS#12 payload (the one `--identity-payload`
    /// names when it has several), opened with the payload's Password or the one
    /// from --secret-file or standard input; as PEM, certificate then key.
    static func identityPayload(_ inv: Invocation, _ bytes: [UInt8], file: String) throws -> [UInt8] {
        let source = file.abbreviated(200)
        let payload = try MobileConfig.identityPayload(bytes, source: source, named: inv.args.value("identity-payload"))
        let shown = payload.name.escapingControls(keepLineBreaks: false).abbreviated(100).quotedForMessage
        let password = try payload.password ?? String(decoding: readSecret(inv, what: "the password of \(file.abbreviated(100))'s PKCS#12 \(shown)"), as: UTF8.self)
        do {
            let id = try Crypto.pkcs12(payload.content, password: password)
            return Array(id.certificate.pem.utf8) + id.privateKeyPEM
        } catch let p as Crypto.Problem {
            throw VPNError(.configurationInvalid, L("\(source): identity payload \(shown): \(p.message)"),
                           hint: payload.password == nil ? L("check the password (from --secret-file or standard input)") : L("the payload's own Password does not open it; get a fresh copy of the profile"))
        }
    }

    static func readSecret(_ inv: Invocation, what: String) throws -> [UInt8] {
        var value: [UInt8]
        let file = inv.args.value("secret-file") ?? "-"
        if file == "-" && inv.context.stdinIsTerminal {
            value = inv.context.readSecretFromTerminal("\(what): ")
        } else if file == "-" {
            do { value = try inv.context.readStdin(SecretStore.maximumSize) } catch {
                throw VPNError(.usage, L("cannot read \(what) from standard input: \(error)"))
            }
        } else {
            value = try readFile(file, what)
        }
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
        if value.isEmpty {
            throw VPNError(.usage, L("no value for \(what) on \(file == "-" ? "standard input" : file.abbreviated(200))"),
                           hint: L("pipe it in (vpnctl create ... < file) or name a file with --secret-file FILE"))
        }
        return value
    }

    /// The client certificate and key of a .p12, as PEM (certificate, then
    /// key), opened with libcrypto as a .mobileconfig's identity payload is.
    static func readPKCS12(_ bytes: [UInt8], file: String, password: [UInt8]) throws -> [UInt8] {
        do {
            let id = try Crypto.pkcs12(bytes, password: String(decoding: password, as: UTF8.self))
            return Array(id.certificate.pem.utf8) + id.privateKeyPEM
        } catch let p as Crypto.Problem {
            throw VPNError(.configurationInvalid, "\(file.abbreviated(200)): \(p.message)",
                           hint: L("check the password (from --secret-file or standard input)"))
        }
    }

    static func readFile(_ path: String, _ what: String, limit: Int = SecretStore.maximumSize) throws -> [UInt8] {
        do {
            guard let b = try FileSystem.readFileIfPresent(path, followSymlinks: true, limit: limit,
                                                            acceptPipe: ImportCommand.isDescriptorPath(path)) else {
                throw VPNError(.failure, L("cannot read \(what) from \(path.abbreviated(200)): no such file"))
            }
            return b
        } catch let e as SystemError {
            throw VPNError.from(e)
        } catch let e as FileSystem.FileProblem {
            throw VPNError(.failure, L("cannot read \(what): \(e.description)"))
        }
    }
}
