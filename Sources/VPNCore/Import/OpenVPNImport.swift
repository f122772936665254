import FoundationEssentials
import VPNSystem

/// Real-world OpenVPN client files: directives one per line, inline blocks
/// (`<ca>`, `<cert>`, `<key>`, `<tls-crypt>`, `<tls-auth>`, `<tls-crypt-v2>`)
/// or file references. Keys go into secrets, each CA certificate into a trust
/// anchor of its own; directives that run programs are refused by name, the
/// ones passed on must fit OpenVPNDirectives' allow-list, and the others are
/// listed as not imported.
public enum OpenVPNImport {
    /// The transports a client 'proto' or 'remote' may name.
    static let protocols: Set<String> = ["udp", "udp4", "udp6", "tcp", "tcp4", "tcp6", "tcp-client", "tcp4-client", "tcp6-client"]

    /// Handled by vpnctl itself; not passed on.
    static let consumed: Set<String> = [
        "client", "dev", "dev-type", "proto", "port", "rport", "remote", "ca", "cert", "key", "tls-crypt", "tls-auth",
        "tls-crypt-v2", "auth-user-pass", "script-security",
    ]

    /// Directives not passed on because vpnctl does what they ask itself,
    /// or because they only matter to scripts that vpnctl never runs.
    static let doneByVpnctl: [String: String] = {
        var d: [String: String] = [:]
        for n in ["daemon", "log", "log-append", "syslog", "status", "status-version", "suppress-timestamps", "machine-readable-output",
                  "management", "management-query-passwords", "management-hold", "management-client", "management-up-down"] {
            d[n] = "vpnctl runs openvpn, talks to it and keeps its log"
        }
        d["writepid"] = "vpnctl tracks openvpn's process itself"
        for n in ["route-delay", "route-noexec", "ifconfig-noexec", "route-metric"] {
            d[n] = "vpnctl sets the addresses and routes itself once openvpn is up, with the kernel's default metric"
        }
        d["tun-ipv6"] = "obsolete; openvpn 2.6 ignores it"
        for n in ["setenv", "setenv-safe", "down-pre", "up-delay", "up-restart"] {
            d[n] = "it only matters to scripts, and vpnctl runs none"
        }
        return d
    }()

    static let blockTags: Set<String> = ["ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2", "extra-certs",
                                         "pkcs12", "secret", "dh", "crl-verify", "http-proxy-user-pass", "connection"]

    struct Directive {
        let line: Int
        let name: String
        let args: [String]
        /// "setenv opt " when the line was wrapped.
        var wrapped = ""
        /// The directive as the file wrote it, for messages.
        var shown: String { OpenVPNDirectives.shown(wrapped + name) }
        /// Where it came from, for messages: "line N", or the option of
        /// `vpnctl create` that gave it.
        var label: String? = nil
        var at: String { label ?? L("line \(line)") }
        /// The same, for the notes (English, as the notes are).
        var place: String { label ?? "line \(line)" }
    }

    public static func parse(_ text: String, name: String, source: String, options: ImportOptions) throws -> ImportResult {
        var importer = Importer(name: name, source: source, options: options)
        importer.read(text)
        importer.applyDirectives()
        importer.resolveRemotes()
        importer.importMaterial()
        return try importer.result()
    }

    /// One import in progress: the file's directives and blocks, and the
    /// profile, secrets and anchors made of them so far.
    struct Importer {
        let name: String
        let source: String
        let options: ImportOptions
        var problems: [String] = []
        var notes: [String] = []
        var directives: [Directive] = []
        var blocks: [String: (line: Int, text: String)] = [:]
        var config = OpenVPNConfiguration()
        var secrets: [String: [UInt8]] = [:]
        var anchors: [String: [UInt8]] = [:]
        var defaultProto = "udp", defaultPort = 1194
        var remoteDirectives: [Directive] = []
        /// Directives vpnctl does itself (or that only matter to scripts it never runs).
        var doneByVpnctl: [String] = []
        var noEffect: [String] = []
        /// Every program the file runs is a DNS script (see isDNSScript).
        var dnsScriptsOnly = false
        /// The names alone ("block-outside-dns", "dhcp-option WINS", "redirect-gateway bypass-dhcp").
        var noEffectNames: [String] = []
        /// The secrets an export's first line says it left out.
        var leftOut: [String] = []
        /// The username an export's comment names (used when --username is not given).
        var exportUsername: String?
        /// The last directive naming each key file, and auth-user-pass.
        var seen: [String: Directive] = [:]

        // MARK: Reading the file

        /// Splits the file into directives and inline blocks; nothing is interpreted yet.
        mutating func read(_ text: String) {
            var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
            if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = String(first.dropFirst()) }
            var i = 0
            while i < lines.count {
                let lineNumber = i + 1
                let trimmed = lines[i].trimmingSpaces()
                i += 1
                if lineNumber == 1, let names = ExportMarker.secrets(in: Substring(trimmed)) { leftOut = names }
                if lineNumber <= 3, let u = ExportMarker.username(in: trimmed) { exportUsername = u }
                if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
                if trimmed.hasPrefix("<") && trimmed.hasSuffix(">") && !trimmed.hasPrefix("</") {
                    let tag = String(trimmed.dropFirst().dropLast()).lowercased()
                    i = readBlock(tag, openedAt: lineNumber, lines: lines, from: i)
                    continue
                }
                readDirective(trimmed, at: lineNumber)
            }
        }

        /// Reads the body of `<tag>` up to its closing line; returns the index of the line after it.
        mutating func readBlock(_ tag: String, openedAt lineNumber: Int, lines: [String], from start: Int) -> Int {
            var i = start
            var body: [String] = []
            var closed = false
            while i < lines.count {
                let l = lines[i].trimmingSpaces()
                i += 1
                if l.lowercased() == "</\(tag)>" { closed = true; break }
                body.append(lines[i - 1])
            }
            if !closed {
                problems.append(L("line \(lineNumber): <\(tag)> is never closed (truncated file?)"))
            } else if !blockTags.contains(tag) {
                problems.append(L("line \(lineNumber): unknown inline block <\(tag)>"))
            } else if blocks[tag] != nil {
                problems.append(L("line \(lineNumber): a second <\(tag)> block"))
            } else {
                blocks[tag] = (lineNumber, body.joined(separator: "\n") + "\n")
            }
            return i
        }

        mutating func readDirective(_ trimmed: String, at lineNumber: Int) {
            guard var words = OpenVPNDirectives.tokenize(trimmed) else {
                problems.append(L("line \(lineNumber): openvpn cannot read '\(OpenVPNDirectives.shown(trimmed))' (a quote never closed, or a stray '\\')"))
                return
            }
            guard !words.isEmpty else { return }
            // What vpnctl passes on is written into the file openvpn reads, so a
            // control character (a lone CR, NUL, ESC...) never gets through.
            if trimmed.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                problems.append(L("line \(lineNumber): a control character in '\(OpenVPNDirectives.shown(OpenVPNDirectives.name(words)))' (binary or corrupted file?)"))
                return
            }
            // openvpn reads 'setenv opt D ...' as D itself: so does vpnctl, with D's rules.
            var wrapped = ""
            while OpenVPNDirectives.name(words) == "setenv", words.count > 2, words[1].lowercased() == "opt" {
                wrapped += "setenv opt "
                words.removeFirst(2)
            }
            directives.append(Directive(line: lineNumber, name: OpenVPNDirectives.name(words), args: Array(words.dropFirst()), wrapped: wrapped))
        }

        // MARK: Directives

        mutating func applyDirectives() {
            let dnsScripts = directives.filter(Importer.isDNSScript)
            // Every program the file runs is a DNS script vpnctl replaces: the
            // script-security that lets them run goes with them.
            dnsScriptsOnly = !dnsScripts.isEmpty
                && directives.allSatisfy { OpenVPNDirectives.runsProgram.contains($0.name) && $0.name != "script-security" ? Importer.isDNSScript($0) : true }
            for d in directives { apply(d) }
            if dnsScriptsOnly {
                let lines = dnsScripts.map { "'\($0.shown) \(OpenVPNDirectives.shown($0.args.joined(separator: " ")))' (\($0.place))" }
                notes.append(L("vpnctl applies the server's DNS itself, so these scripts are not imported and never run: \(lines.joined(separator: ", "))"))
            }
        }

        /// The scripts commercial providers' files run only to hand the pushed
        /// DNS to the resolver (update-resolv-conf, update-systemd-resolved):
        /// what vpnctl's DNS backends do for every tunnel.
        static func isDNSScript(_ d: Directive) -> Bool {
            guard ["up", "down", "down-pre"].contains(d.name), d.wrapped.isEmpty, d.args.count == 1 else { return false }
            let base = d.args[0].split(separator: "/").last.map(String.init) ?? ""
            return ["update-resolv-conf", "update-resolv-conf.sh", "update-systemd-resolved", "update-systemd-resolved.sh"].contains(base)
        }

        mutating func apply(_ d: Directive) {
            let at = d.at
            if d.name == "script-security" {
                checkScriptSecurity(d)
                return
            }
            if dnsScriptsOnly && Importer.isDNSScript(d) { return }
            if OpenVPNDirectives.runsProgram.contains(d.name) {
                problems.append(L("\(at): '\(d.shown)' runs a program; vpnctl refuses to import it (remove the line)"))
                return
            }
            if case .wrapper(let why) = OpenVPNDirectives.verdict([d.name] + d.args) {
                problems.append("\(at): \(why)")
                return
            }
            switch d.name {
            case "client", "tls-client", "pull": return
            case "dev", "dev-type": checkDevice(d)
            case "proto", "port", "rport": setDefaultTransport(d)
            case "remote": remoteDirectives.append(d)
            case "ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2": seen[d.name] = d
                if d.name == "tls-auth", d.args.count > 1 { setKeyDirection(d.args[1], at: at) }
            case "auth-user-pass":
                seen["auth-user-pass"] = d
                if d.args.first != nil { notes.append("\(at): the credentials file of auth-user-pass is not read; the password is a secret of its own, 'password'") }
            default: passOn(d)
            }
        }

        /// Levels 0 and 1 run no program and are dropped; any other is refused.
        mutating func checkScriptSecurity(_ d: Directive) {
            if let level = d.args.first.flatMap(Int.init), (0...1).contains(level) { return }
            if dnsScriptsOnly, d.wrapped.isEmpty, d.args == ["2"] { return }
            problems.append(L("line \(d.line): '\(d.wrapped)script-security \(OpenVPNDirectives.shown(d.args.joined(separator: " ")))' allows running programs; vpnctl refuses it (remove the line)"))
        }

        /// 'dev' and 'dev-type': vpnctl makes tun devices only.
        mutating func checkDevice(_ d: Directive) {
            let at = d.at
            if d.name == "dev" {
                let dev = d.args.first ?? ""
                if dev.hasPrefix("tap") { problems.append(L("\(at): 'dev \(OpenVPNDirectives.shown(dev))': tap (layer 2) tunnels are not supported; vpnctl needs 'dev tun'")) }
            } else if d.args.first != "tun" {
                problems.append(L("\(at): 'dev-type \(OpenVPNDirectives.shown(d.args.first ?? ""))': only tun is supported"))
            }
        }

        /// 'proto', 'port' and 'rport': what a remote without its own uses.
        mutating func setDefaultTransport(_ d: Directive) {
            let at = d.at
            if d.name == "proto" {
                if let p = d.args.first, OpenVPNImport.protocols.contains(p) {
                    defaultProto = p
                } else {
                    problems.append(L("\(at): 'proto \(OpenVPNDirectives.shown(d.args.first ?? ""))': use one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))"))
                }
            } else if let p = d.args.first.flatMap(Int.init), (1...65535).contains(p) {
                defaultPort = p
            } else {
                problems.append(L("\(at): '\(d.name) \(OpenVPNDirectives.shown(d.args.first ?? ""))': the port must be 1–65535"))
            }
        }

        /// The direction argument of 'tls-auth', passed on as 'key-direction'.
        mutating func setKeyDirection(_ direction: String, at: String) {
            if ["0", "1"].contains(direction) {
                config.options.append("key-direction \(direction)")
            } else {
                problems.append(L("\(at): tls-auth direction '\(OpenVPNDirectives.shown(direction))' must be 0 or 1"))
            }
        }

        /// Any other directive: passed on if the allow-list has it, else listed as not imported.
        mutating func passOn(_ d: Directive) {
            let at = d.at
            let words = [d.name] + d.args
            switch OpenVPNDirectives.verdict(words) {
            case .allowed:
                if let problem = OpenVPNDirectives.problem(in: OpenVPNDirectives.render(words)) {
                    problems.append("\(at): \(problem)")
                } else {
                    config.options.append(OpenVPNDirectives.render(words))
                }
            case .badArguments(let usage):
                let line = OpenVPNDirectives.shown(d.wrapped + words.joined(separator: " "))
                problems.append(L("\(at): '\(line)' does not fit '\(usage)'"))
            case .noEffectOnLinux:
                // dhcp-option's kind is the part that has no effect ("dhcp-option WINS").
                let kind = d.name == "dhcp-option" ? d.args.first.map { " " + OpenVPNDirectives.shown($0.escapingControls(keepLineBreaks: false)) } ?? "" : ""
                noEffect.append("'\(d.shown)\(kind)' (\(d.place))")
                if !noEffectNames.contains(d.name + kind) { noEffectNames.append(d.name + kind) }
            default:
                if let why = OpenVPNImport.doneByVpnctl[d.name] {
                    doneByVpnctl.append("'\(d.shown)' (\(d.place): \(why))")
                    if !noEffectNames.contains(d.name) { noEffectNames.append(d.name) }
                } else if d.name == "static-challenge" {
                    staticChallenge(d)
                } else {
                    // Never a footnote after a success: what the file asks for
                    // and vpnctl cannot carry stops the import, by name.
                    problems.append(L("\(at): '\(d.shown)' is not a directive vpnctl carries, so the tunnel would not do what the file says; remove the line if the tunnel does not need it"))
                }
            }
        }

        /// Checks each 'remote' against the defaults the whole file set.
        mutating func resolveRemotes() {
            for d in remoteDirectives {
                guard let host = d.args.first, !host.isEmpty else { problems.append(L("line \(d.line): 'remote' needs a host")); continue }
                guard Endpoint.isHostName(host) || IPAddress(host) != nil else {
                    problems.append(L("line \(d.line): remote host '\(OpenVPNDirectives.shown(host))' is not a host name or an IP address"))
                    continue
                }
                let proto = d.args.count > 2 ? d.args[2] : defaultProto
                guard OpenVPNImport.protocols.contains(proto) else {
                    problems.append(L("line \(d.line): remote protocol '\(OpenVPNDirectives.shown(proto))': use one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))"))
                    continue
                }
                // Without its own port a remote uses 'port' (already checked).
                let port = d.args.count > 1 ? Int(d.args[1]) : defaultPort
                guard let port, (1...65535).contains(port) else {
                    problems.append(L("line \(d.line): remote port '\(OpenVPNDirectives.shown(d.args.count > 1 ? d.args[1] : String(defaultPort)))' is not 1–65535"))
                    continue
                }
                config.remotes.append(.init(host: host, port: port, proto: proto))
            }
            if config.remotes.isEmpty && remoteDirectives.isEmpty { problems.append(L("no 'remote' directive (the server to connect to)")) }
        }

        // MARK: Keys and certificates

        /// The CA, certificate, keys and credentials, in that order. A bad
        /// certificate or key ends the import: nothing after it is checked.
        mutating func importMaterial() {
            importCA()
            guard importCertificate(), importKey() else { return }
            importStaticKeys()
            keepLeftOutSecrets()
            noteAuthUserPass()
            noteUnsupported()
        }

        /// A vpnctl export without its secrets: the key and static keys it
        /// left out stay the profile's, unset, for `vpnctl secret set`.
        mutating func keepLeftOutSecrets() {
            var unset: [String] = []
            if config.keySecret == nil, config.certificate != nil, leftOut.contains("key") { config.keySecret = "key"; unset.append("key") }
            if config.tlsCryptSecret == nil, config.tlsAuthSecret == nil, config.tlsCryptV2Secret == nil {
                if leftOut.contains("tls-crypt") { config.tlsCryptSecret = "tls-crypt"; unset.append("tls-crypt") }
                else if leftOut.contains("tls-auth") { config.tlsAuthSecret = "tls-auth"; unset.append("tls-auth") }
                else if leftOut.contains("tls-crypt-v2") { config.tlsCryptV2Secret = "tls-crypt-v2"; unset.append("tls-crypt-v2") }
            }
            if !unset.isEmpty {
                notes.append(ExportMarker.unsetNote(unset))
            }
        }

        /// The bytes of a key file or inline block: the file a directive names,
        /// else the `<tag>` block. Nil, with a problem, when the file cannot be read.
        mutating func material(_ tag: String, _ d: Directive?) -> [UInt8]? {
            if let d, let path = d.args.first, path != "[inline]" {
                do {
                    guard let bytes = try options.readReferenced(path) else {
                        problems.append(L("line \(d.line): \(tag) file '\(OpenVPNDirectives.shown(path))' does not exist"))
                        return nil
                    }
                    return bytes
                } catch {
                    problems.append(L("line \(d.line): cannot read \(tag) file '\(OpenVPNDirectives.shown(path))': \(error)"))
                    return nil
                }
            }
            return blocks[tag].map { Array($0.text.utf8) }
        }

        mutating func importCA() {
            if let ca = material("ca", seen["ca"]) {
                addAnchors(String(decoding: ca, as: UTF8.self))
            } else if seen["ca"] == nil && blocks["ca"] == nil {
                problems.append(L("no CA (<ca> block or 'ca' file): vpnctl never trusts a server without one"))
            }
        }

        /// Each certificate becomes an anchor of its own, so a profile
        /// trusts exactly the CAs it brought, never what another one did.
        mutating func addAnchors(_ text: String) {
            let pem = PEM.blocks(text)
            if text.containsUTF8("PRIVATE KEY-----") {
                problems.append(L("<ca>: it holds a private key; a CA holds certificates only: remove the key from the file (and treat it as exposed)"))
                return
            }
            guard pem.contains(where: { $0.label == "CERTIFICATE" }) else {
                problems.append(L("<ca>: no PEM certificate in it"))
                return
            }
            for (i, block) in pem.enumerated() where block.label == "CERTIFICATE" {
                guard let der = block.der else {
                    problems.append(L("<ca>: certificate \(i + 1) is not valid base64"))
                    continue
                }
                let fp = SHA256.hex(der)
                if anchors[fp] == nil {
                    anchors[fp] = Array(PEM.encode(label: "CERTIFICATE", der: der).utf8)
                    config.caFingerprints.append(fp)
                }
            }
            let others = pem.filter { $0.label != "CERTIFICATE" }.map { OpenVPNDirectives.shown($0.label) }
            if !others.isEmpty { notes.append("<ca>: not kept (vpnctl keeps certificates only): \(others.joined(separator: ", "))") }
        }

        /// False when the certificate is not PEM (the import stops there).
        mutating func importCertificate() -> Bool {
            guard let cert = material("cert", seen["cert"]) else { return true }
            guard String(decoding: cert, as: UTF8.self).containsUTF8("-----BEGIN CERTIFICATE-----") else {
                problems.append(L("<cert>: no PEM certificate in it"))
                return false
            }
            config.certificate = String(decoding: cert, as: UTF8.self)
            return true
        }

        /// False when the key is not a PEM private key (the import stops there).
        mutating func importKey() -> Bool {
            guard let key = material("key", seen["key"]) else { return true }
            guard String(decoding: key, as: UTF8.self).containsUTF8("PRIVATE KEY-----") else {
                problems.append(L("<key>: no PEM private key in it"))
                return false
            }
            // PiVPN's clients made with a password: openvpn would ask for it at
            // every start, and vpnctl never gives it one.
            let text = String(decoding: key, as: UTF8.self)
            if text.containsUTF8("BEGIN ENCRYPTED PRIVATE KEY") || text.containsUTF8("Proc-Type: 4,ENCRYPTED") {
                problems.append(L("<key>: the key is encrypted, and vpnctl cannot give openvpn its passphrase: decrypt it (openssl pkey -in KEY -out PLAIN), put the plain key in the file and import again"))
                return false
            }
            secrets["key"] = key
            config.keySecret = "key"
            return true
        }

        /// tls-crypt, tls-auth and tls-crypt-v2 keys, each a secret of the same name.
        mutating func importStaticKeys() {
            for (tag, secretName) in [("tls-crypt", "tls-crypt"), ("tls-auth", "tls-auth"), ("tls-crypt-v2", "tls-crypt-v2")] {
                guard let m = material(tag, seen[tag]) else { continue }
                guard String(decoding: m, as: UTF8.self).containsUTF8("-----BEGIN OpenVPN") else {
                    problems.append(L("<\(tag)>: not an OpenVPN static key"))
                    continue
                }
                secrets[secretName] = m
                switch tag {
                case "tls-crypt": config.tlsCryptSecret = secretName
                case "tls-auth": config.tlsAuthSecret = secretName
                default: config.tlsCryptV2Secret = secretName
                }
            }
        }

        /// `static-challenge "text" 0|1`: the code asked for at each start, sent with the password.
        mutating func staticChallenge(_ d: Directive) {
            guard d.args.count == 2, ["0", "1"].contains(d.args[1]), !d.args[0].isEmpty,
                  !d.args[0].unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                return problems.append(L("\(d.at): '\(d.shown)' does not fit 'static-challenge TEXT 0|1'"))
            }
            config.staticChallenge = .init(text: d.args[0], echo: d.args[1] == "1")
            notes.append(L("static-challenge: a one-time code ('\(d.args[0])') is asked for at each start and sent with the password"))
        }

        mutating func noteAuthUserPass() {
            guard seen["auth-user-pass"] != nil else { return }
            config.username = options.username ?? exportUsername
            config.passwordSecret = "password"
            if options.username == nil, let u = exportUsername {
                notes.append(L("auth-user-pass: the username '\(u)' is the export's (its comment line names it)"))
            } else if options.username == nil {
                notes.append("auth-user-pass: the file names no username; the profile needs one (protocol.username)")
            }
            notes.append("auth-user-pass: the password is not in the file; it is the secret 'password' if you set it, else start asks for it")
        }

        /// One note for every directive and block left out.
        mutating func noteUnsupported() {
            for tag in blocks.keys.sorted() where !["ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2"].contains(tag) {
                let line = blocks[tag]!.line
                problems.append(tag == "connection"
                    ? L("line \(line): <connection> blocks are not supported; write each server as a 'remote HOST PORT PROTO' line")
                    : L("line \(line): vpnctl does not carry an inline <\(tag)> block, so the tunnel would not do what the file says; remove it if the tunnel does not need it"))
            }
            if !noEffect.isEmpty { notes.append("no effect on Linux, so not passed to openvpn: \(noEffect.joined(separator: ", "))") }
            if !doneByVpnctl.isEmpty { notes.append("not passed to openvpn (vpnctl does it itself, or only scripts would use it): \(doneByVpnctl.joined(separator: ", "))") }
            let compression = config.options.first { $0.hasPrefix("compress") || $0.hasPrefix("comp-lzo") }
            if let compression, !config.options.contains(where: { $0.hasPrefix("allow-compression") }) {
                notes.append("'\(compression)': openvpn 2.6's default, allow-compression asym, applies: it decompresses what the server sends but never compresses what it sends (compression with encryption leaks data, VORACLE)")
            }
            let words = config.options.map { OpenVPNDirectives.tokenize($0) ?? [] }
            if let r = words.compactMap(RedirectGateway.init).last {
                noEffectNames += r.ignored.map { "redirect-gateway " + ($0.split(separator: " ").first.map(String.init) ?? $0) }
                notes.append("full tunnel (redirect-gateway): \(r.ipv4 && r.ipv6 ? "IPv4 and IPv6" : r.ipv6 ? "IPv6" : "IPv4") through the tunnel, the server kept outside"
                             + (r.ignored.isEmpty ? "" : "; no effect here: \(r.ignored.joined(separator: ", "))"))
            }
        }

        // MARK: Result

        func result() throws -> ImportResult {
            if !problems.isEmpty {
                throw VPNError.invalid(problems.count == 1 ? L("\(source) is not a usable OpenVPN client file (1 problem)")
                                      : L("\(source) is not a usable OpenVPN client file (\(problems.count) problems)"),
                                       problems: problems, hint: L("fix the file and import it again"))
            }
            if options.username != nil && seen["auth-user-pass"] == nil {
                throw VPNError.usage(L("--username is for a profile with auth-user-pass, and \(source) has none"),
                                     hint: L("import it without --username (it authenticates with its certificate)"))
            }
            var result = ImportResult(profile: Profile(name: name, protocol: .openvpn(config)), secrets: secrets, notes: notes)
            result.anchors = anchors
            result.noEffect = noEffectNames
            return result
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" || f == "\u{FEFF}" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" { s = s.dropLast() }
        return String(s)
    }

    func trimmingPrefix(_ p: String) -> String { hasPrefix(p) ? String(dropFirst(p.count)) : self }

    func replacingAll(_ a: String, with b: String) -> String {
        split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}

/// PEM text: `-----BEGIN LABEL-----`, base64, `-----END LABEL-----`.
public enum PEM {
    public struct Block: Equatable, Sendable {
        public let label: String
        /// The decoded body; nil when it is not base64 or the block never ends.
        public let der: [UInt8]?
    }

    /// Every block of a text, in order. Text between blocks is skipped.
    public static func blocks(_ text: String) -> [Block] {
        var blocks: [Block] = []
        var label: String?
        var body = ""
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = String(raw).trimmingSpaces()
            if let open = label {
                if line == "-----END \(open)-----" {
                    let der = Data(base64Encoded: body).map(Array.init)
                    blocks.append(Block(label: open, der: der?.isEmpty == false ? der : nil))
                    label = nil
                } else if line.hasPrefix("-----BEGIN ") {
                    blocks.append(Block(label: open, der: nil))
                    label = String(line.dropFirst(11).prefix { $0 != "-" })
                    body = ""
                } else {
                    body += line
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                body = ""
            }
        }
        if let open = label { blocks.append(Block(label: open, der: nil)) }
        return blocks
    }

    public static func encode(label: String, der: [UInt8]) -> String {
        let b64 = Data(der).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(b64)
        while !rest.isEmpty {
            lines.append(rest.prefix(64))
            rest = rest.dropFirst(64)
        }
        return "-----BEGIN \(label)-----\n" + lines.joined(separator: "\n") + "\n-----END \(label)-----\n"
    }
}
