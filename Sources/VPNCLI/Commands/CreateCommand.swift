#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl create NAME ikev2 ...`: a profile without a file. Secret values
/// come from standard input or a file, never from the command line.
enum CreateCommand {
    static let spec = CommandSpec(
        name: "create", abstract: L("Create a profile from options (IKEv2), without a file."),
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
        """),
        examples: [
            "vpnctl create office ikev2 --server vpn.example.com --remote-id vpn.example.com --auth psk < psk.txt",
            "vpnctl create road ikev2 --server 198.18.0.1 --remote-id vpn.lab.test --auth eap --username bob --ca ca.crt",
        ],
        options: [OptionSpec("server", value: "host", help: L("The server's name or address.")),
                  OptionSpec("remote-id", value: "id", help: L("The server's IKE identity (its certificate's name).")),
                  OptionSpec("local-id", value: "id", help: L("This client's IKE identity.")),
                  OptionSpec("auth", value: "method", help: L("psk, eap (EAP-MSCHAPv2) or certificate.")),
                  OptionSpec("username", value: "user", help: L("The EAP username.")),
                  OptionSpec("ca", value: "file", kind: .file, help: L("The CA certificate (PEM) the server's certificate must chain to.")),
                  OptionSpec("cert", value: "file", kind: .file, help: L("The client certificate (PEM), with --auth certificate.")),
                  OptionSpec("key", value: "file", kind: .file, help: L("The client's private key (PEM), with --auth certificate.")),
                  OptionSpec("identity", value: "file", kind: .file, help: L("The client certificate and key as PKCS#12 (.p12; its password from --secret-file or stdin).")),
                  OptionSpec("secret-file", value: "file", kind: .file, help: L("Read the shared secret or password from this file ('-': standard input)."))],
        positionals: [PositionalSpec("name", help: L("The new profile's name.")),
                      PositionalSpec("protocol", help: L("The protocol: ikev2."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let name = inv.args.positionals[0], proto = inv.args.positionals[1]
        if let problem = ProfileName.problems(name).first {
            throw VPNError(.usage, L("invalid profile name \(name.quotedForMessage): \(problem)"))
        }
        guard proto == "ikev2" else {
            throw VPNError(.usage, L("create makes ikev2 profiles; \(proto.quotedForMessage) is not one"),
                           hint: L("WireGuard and OpenVPN profiles come from their files: vpnctl import FILE"))
        }
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
                secrets["identity"] = try readPKCS12(p12, password: try readSecret(inv, what: "the password of \(p12.abbreviated(100))"))
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
        let profile = Profile(name: name, protocol: .ikev2(c))
        let provider = try ProviderRegistry.provider(for: profile)
        for (n, v) in secrets { try provider.checkSecret(name: n, value: v) }
        let validator = ProfileValidator(secretExists: { secrets[$0] != nil })
        let problems = validator.problems(in: profile)
        if !problems.isEmpty {
            throw VPNError.invalid(problems.count == 1 ? L("profile '\(name)' would be invalid (1 problem)")
                                                       : L("profile '\(name)' would be invalid (\(problems.count) problems)"), problems: problems)
        }
        let store = inv.store
        if try store.load().contains(where: { $0.name == name }) {
            throw VPNError(.configurationInvalid, L("a profile named '\(name)' already exists"), hint: L("choose another name, or remove the old one first"))
        }
        var saved = profile
        do {
            for (n, v) in secrets.sorted(by: { $0.key < $1.key }) { try store.secrets.set(profile.id, name: n, value: v) }
            let trust = TrustStore(configDirectory: inv.options.configDirectory)
            for (fp, pem) in anchors { try trust.install(pem, fingerprint: fp) }
            saved = try store.save(profile)
        } catch {
            try? store.secrets.removeAll(profile.id)
            throw error
        }
        if inv.options.json {
            // The same document as `import --json`'s: a script reads both alike.
            inv.output.emit(ImportCommand.Result(id: saved.id.lowercasedString, name: saved.name, protocol: "ikev2", revision: saved.revision,
                                                 secrets: secrets.keys.sorted(), trustAnchors: anchors.keys.sorted(), notes: [], publicKey: nil,
                                                 summary: ImportSummary.of(saved)))
        } else {
            inv.output.line(L("created '\(saved.name)' (ikev2, id \(saved.id.lowercasedString))"))
            inv.output.line(L("tunnel: \(ImportSummary.of(saved).text)"))
            if !secrets.isEmpty { inv.output.line(L("secrets stored: \(secrets.keys.sorted().joined(separator: ", "))")) }
            for fp in anchors.keys.sorted() { inv.output.line(L("trust anchor: \(fp)")) }
        }
        return .ok
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

    /// The client certificate and key of a .p12, as PEM, through
    /// `openssl pkcs12` (the password goes to it on a pipe, fd 3, never argv).
    static func readPKCS12(_ path: String, password: [UInt8]) throws -> [UInt8] {
        guard let openssl = Processes.which("openssl", path: nil) else {
            throw VPNError(.providerUnavailable, L("reading a .p12 needs openssl"),
                           hint: L("apt-get install --no-install-recommends openssl, or give --cert and --key (PEM)"))
        }
        guard FileSystem.exists(path) else { throw VPNError(.failure, L("cannot read \(path.abbreviated(200)): no such file")) }
        var out: [Int32] = [-1, -1], pw: [Int32] = [-1, -1]
        func cloexecPipe(_ fds: inout [Int32]) -> Bool {
            guard pipe(&fds) == 0 else { return false }
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            return true
        }
        guard cloexecPipe(&out) else { throw VPNError(.failure, L("cannot make a pipe: \(Errno.current)")) }
        defer { if out[0] >= 0 { close(out[0]) } }
        guard cloexecPipe(&pw) else { close(out[1]); throw VPNError(.failure, L("cannot make a pipe: \(Errno.current)")) }
        let line = password + [0x0A]
        let written = line.withUnsafeBytes { write(pw[1], $0.baseAddress, $0.count) }
        close(pw[1])
        let pid: pid_t
        do {
            pid = try Processes.spawn(openssl, [openssl, "pkcs12", "-in", path, "-nodes", "-clcerts", "-passin", "fd:3"],
                                      environment: ["PATH": "/usr/bin:/bin"], passFDs: [pw[0]], outputFD: out[1])
        } catch {
            close(pw[0]); close(out[1])
            throw VPNError(.failure, L("cannot run openssl: \(error)"))
        }
        close(pw[0]); close(out[1])
        let output = (try? FileSystem.readAll(fd: out[0], path: "openssl's output", limit: SecretStore.maximumSize)) ?? []
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = String(decoding: output, as: UTF8.self)
        let blocks = PEM.blocks(text)
        let certs = blocks.filter { $0.label == "CERTIFICATE" }, keys = blocks.filter { $0.label.hasSuffix("PRIVATE KEY") }
        guard written == line.count, status == 0, certs.count >= 1, keys.count == 1 else {
            let said = text.split(separator: "\n").first { !$0.hasPrefix("Bag") && !$0.hasPrefix(" ") && !$0.isEmpty }.map(String.init) ?? ""
            let file = path.abbreviated(200), openssl = said.abbreviated(200)
            throw VPNError(.configurationInvalid, said.isEmpty ? L("cannot read the certificate and key from \(file)")
                                                               : L("cannot read the certificate and key from \(file) (openssl: \(openssl))"),
                           hint: L("check the .p12 password, or give --cert and --key (PEM)"))
        }
        return Array((certs + keys).compactMap { b in b.der.map { PEM.encode(label: b.label, der: $0) } }.joined().utf8)
    }

    static func readFile(_ path: String, _ what: String) throws -> [UInt8] {
        do {
            guard let b = try FileSystem.readFileIfPresent(path, followSymlinks: true, limit: SecretStore.maximumSize,
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
