import FoundationEssentials
import VPNSystem

/// Real-world OpenVPN client files: directives one per line, inline blocks
/// (`<ca>`, `<cert>`, `<key>`, `<tls-crypt>`, `<tls-auth>`, `<tls-crypt-v2>`)
/// or file references. Keys go into secrets, the CA into the trust anchors;
/// directives that run programs are refused by name, and directives vpnctl
/// does not carry over are listed.
public enum OpenVPNImport {
    /// The transports a client 'proto' or 'remote' may name.
    static let protocols: Set<String> = ["udp", "udp4", "udp6", "tcp", "tcp4", "tcp6", "tcp-client", "tcp4-client", "tcp6-client"]

    /// Directives that make openvpn run a program.
    public static let refused: Set<String> = [
        "up", "down", "route-up", "route-pre-down", "ipchange", "client-connect", "client-disconnect",
        "learn-address", "tls-verify", "auth-user-pass-verify", "plugin", "iproute", "tls-crypt-v2-verify",
    ]

    /// Client directives passed through to openvpn as they are.
    public static let passed: Set<String> = [
        "cipher", "data-ciphers", "data-ciphers-fallback", "auth", "tls-version-min", "tls-version-max", "tls-cipher",
        "tls-ciphersuites", "tls-groups", "remote-cert-tls", "verify-x509-name", "remote-cert-ku", "remote-cert-eku",
        "key-direction", "tun-mtu", "mssfix", "fragment", "reneg-sec", "reneg-bytes", "reneg-pkts", "auth-nocache",
        "nobind", "persist-key", "persist-tun", "resolv-retry", "connect-retry", "connect-retry-max",
        "server-poll-timeout", "hand-window", "ping", "ping-restart", "ping-exit", "keepalive", "remote-random",
        "float", "sndbuf", "rcvbuf", "verb", "mute", "compress", "comp-lzo", "allow-compression", "pull",
        "ns-cert-type", "tls-timeout", "explicit-exit-notify", "route", "route-ipv6", "route-nopull", "pull-filter",
        "auth-retry", "tran-window", "replay-window", "mute-replay-warnings", "ifconfig-nowarn", "tls-client",
        "push-peer-info", "setenv", "ignore-unknown-option", "tun-mtu-extra", "mtu-disc", "connect-timeout",
    ]

    /// Handled by vpnctl itself; not passed on.
    static let consumed: Set<String> = [
        "client", "dev", "dev-type", "proto", "port", "rport", "remote", "ca", "cert", "key", "tls-crypt", "tls-auth",
        "tls-crypt-v2", "auth-user-pass", "script-security",
    ]

    static let blockTags: Set<String> = ["ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2", "extra-certs",
                                         "pkcs12", "secret", "dh", "crl-verify", "http-proxy-user-pass", "connection"]

    struct Directive {
        let line: Int
        let name: String
        let args: [String]
    }

    public static func parse(_ text: String, name: String, source: String, options: ImportOptions) throws -> ImportResult {
        var problems: [String] = []
        var notes: [String] = []
        var directives: [Directive] = []
        var blocks: [String: (line: Int, text: String)] = [:]

        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = String(first.dropFirst()) }
        var i = 0
        while i < lines.count {
            let lineNumber = i + 1
            let trimmed = lines[i].trimmingSpaces()
            i += 1
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
            if trimmed.hasPrefix("<") && trimmed.hasSuffix(">") && !trimmed.hasPrefix("</") {
                let tag = String(trimmed.dropFirst().dropLast()).lowercased()
                var body: [String] = []
                var closed = false
                while i < lines.count {
                    let l = lines[i].trimmingSpaces()
                    i += 1
                    if l.lowercased() == "</\(tag)>" { closed = true; break }
                    body.append(lines[i - 1])
                }
                if !closed {
                    problems.append("line \(lineNumber): <\(tag)> is never closed (truncated file?)")
                } else if !blockTags.contains(tag) {
                    problems.append("line \(lineNumber): unknown inline block <\(tag)>")
                } else if blocks[tag] != nil {
                    problems.append("line \(lineNumber): a second <\(tag)> block")
                } else {
                    blocks[tag] = (lineNumber, body.joined(separator: "\n") + "\n")
                }
                continue
            }
            let words = tokenize(trimmed)
            guard let first = words.first else { continue }
            // What vpnctl passes on is written into the file openvpn reads, so a
            // control character (a lone CR, NUL, ESC...) never gets through.
            if trimmed.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                problems.append("line \(lineNumber): a control character in '\(first.lowercased())' (binary or corrupted file?)")
                continue
            }
            directives.append(Directive(line: lineNumber, name: first.lowercased().trimmingPrefix("--"), args: Array(words.dropFirst())))
        }

        var config = OpenVPNConfiguration()
        var secrets: [String: [UInt8]] = [:]
        var anchors: [String: [UInt8]] = [:]
        var defaultProto = "udp", defaultPort = 1194
        var remoteDirectives: [Directive] = []
        var unsupported: [String] = []

        func material(_ tag: String, _ d: Directive?) -> [UInt8]? {
            if let d, let path = d.args.first, path != "[inline]" {
                let full = path.hasPrefix("/") ? path : "\(options.baseDirectory ?? ".")/\(path)"
                do {
                    guard let bytes = try FileSystem.readFileIfPresent(full, followSymlinks: true, limit: ImportFormat.maximumSize) else {
                        problems.append("line \(d.line): \(tag) file '\(path)' does not exist")
                        return nil
                    }
                    return bytes
                } catch {
                    problems.append("line \(d.line): cannot read \(tag) file '\(path)': \(error)")
                    return nil
                }
            }
            return blocks[tag].map { Array($0.text.utf8) }
        }

        var seen: [String: Directive] = [:]
        for d in directives {
            let at = "line \(d.line)"
            if refused.contains(d.name) {
                problems.append("\(at): '\(d.name)' runs a program; vpnctl refuses to import it (remove the line)")
                continue
            }
            switch d.name {
            case "script-security":
                if let level = d.args.first.flatMap(Int.init), level >= 2 {
                    problems.append("\(at): 'script-security \(level)' allows running programs; vpnctl refuses it (remove the line)")
                }
            case "client", "tls-client", "pull": continue
            case "dev":
                let dev = d.args.first ?? ""
                if dev.hasPrefix("tap") { problems.append("\(at): 'dev \(dev)': tap (layer 2) tunnels are not supported; vpnctl needs 'dev tun'") }
            case "dev-type":
                if d.args.first != "tun" { problems.append("\(at): 'dev-type \(d.args.first ?? "")': only tun is supported") }
            case "proto":
                if let p = d.args.first, OpenVPNImport.protocols.contains(p) {
                    defaultProto = p
                } else {
                    problems.append("\(at): 'proto \(d.args.first ?? "")': use one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))")
                }
            case "port", "rport":
                if let p = d.args.first.flatMap(Int.init), (1...65535).contains(p) {
                    defaultPort = p
                } else {
                    problems.append("\(at): '\(d.name) \(d.args.first ?? "")': the port must be 1–65535")
                }
            case "remote": remoteDirectives.append(d)
            case "ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2": seen[d.name] = d
                if d.name == "tls-auth", d.args.count > 1 { config.options.append("key-direction \(d.args[1])") }
            case "auth-user-pass":
                seen["auth-user-pass"] = d
                if d.args.first != nil { notes.append("\(at): the credentials file of auth-user-pass is not read; set the password with 'vpnctl secret set \(name) password'") }
            default:
                if passed.contains(d.name) {
                    config.options.append(([d.name] + d.args).map(quoteIfNeeded).joined(separator: " "))
                } else {
                    unsupported.append("'\(d.name)' (line \(d.line))")
                }
            }
        }
        for d in remoteDirectives {
            guard let host = d.args.first, !host.isEmpty else { problems.append("line \(d.line): 'remote' needs a host"); continue }
            guard Endpoint.isHostName(host) || IPAddress(host) != nil else {
                problems.append("line \(d.line): remote host '\(host)' is not a host name or an IP address")
                continue
            }
            let proto = d.args.count > 2 ? d.args[2] : defaultProto
            guard OpenVPNImport.protocols.contains(proto) else {
                problems.append("line \(d.line): remote protocol '\(proto)': use one of \(OpenVPNImport.protocols.sorted().joined(separator: ", "))")
                continue
            }
            // Without its own port a remote uses 'port' (already checked).
            let port = d.args.count > 1 ? Int(d.args[1]) : defaultPort
            guard let port, (1...65535).contains(port) else {
                problems.append("line \(d.line): remote port '\(d.args.count > 1 ? d.args[1] : String(defaultPort))' is not 1–65535")
                continue
            }
            config.remotes.append(.init(host: host, port: port, proto: proto))
        }
        if config.remotes.isEmpty && remoteDirectives.isEmpty { problems.append("no 'remote' directive (the server to connect to)") }

        if let ca = material("ca", seen["ca"]) {
            switch TrustStore.fingerprint(pem: ca) {
            case .some(let fp):
                anchors[fp] = ca
                config.caFingerprint = fp
            case .none:
                problems.append("<ca>: no PEM certificate in it")
            }
        } else if seen["ca"] == nil && blocks["ca"] == nil {
            problems.append("no CA (<ca> block or 'ca' file): vpnctl never trusts a server without one")
        }
        if let cert = material("cert", seen["cert"]) {
            guard String(decoding: cert, as: UTF8.self).containsUTF8("-----BEGIN CERTIFICATE-----") else {
                problems.append("<cert>: no PEM certificate in it")
                return try finish()
            }
            config.certificate = String(decoding: cert, as: UTF8.self)
        }
        if let key = material("key", seen["key"]) {
            guard String(decoding: key, as: UTF8.self).containsUTF8("PRIVATE KEY-----") else {
                problems.append("<key>: no PEM private key in it")
                return try finish()
            }
            secrets["key"] = key
            config.keySecret = "key"
        }
        for (tag, secretName) in [("tls-crypt", "tls-crypt"), ("tls-auth", "tls-auth"), ("tls-crypt-v2", "tls-crypt-v2")] {
            guard let m = material(tag, seen[tag]) else { continue }
            guard String(decoding: m, as: UTF8.self).containsUTF8("-----BEGIN OpenVPN") else {
                problems.append("<\(tag)>: not an OpenVPN static key")
                continue
            }
            secrets[secretName] = m
            switch tag {
            case "tls-crypt": config.tlsCryptSecret = secretName
            case "tls-auth": config.tlsAuthSecret = secretName
            default: config.tlsCryptV2Secret = secretName
            }
        }
        if seen["auth-user-pass"] != nil {
            config.username = options.username
            config.passwordSecret = "password"
            if options.username == nil {
                notes.append("auth-user-pass: give the username with 'import --username U' or 'vpnctl edit \(name)'")
            }
            notes.append("auth-user-pass: set the password with 'vpnctl secret set \(name) password'")
        }
        for tag in blocks.keys.sorted() where !["ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2"].contains(tag) {
            unsupported.append("<\(tag)> (line \(blocks[tag]!.line))")
        }
        if !unsupported.isEmpty { notes.append("not imported (vpnctl does not support them): \(unsupported.joined(separator: ", "))") }
        return try finish()

        func finish() throws -> ImportResult {
            if !problems.isEmpty {
                throw VPNError.invalid("\(source) is not a usable OpenVPN client file (\(problems.count) problem\(problems.count == 1 ? "" : "s"))",
                                       problems: problems, hint: "fix the file and import it again")
            }
            var result = ImportResult(profile: Profile(name: name, protocol: .openvpn(config)), secrets: secrets, notes: notes)
            result.anchors = anchors
            return result
        }
    }

    /// Splits a directive line as openvpn does: whitespace, with "double" and
    /// 'single' quotes and backslash escapes.
    static func tokenize(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character? = nil
        var escape = false
        for ch in line {
            if escape { current.append(ch); escape = false; continue }
            if ch == "\\" && quote != "'" { escape = true; inWord = true; continue }
            if let q = quote {
                if ch == q { quote = nil } else { current.append(ch) }
                continue
            }
            if ch == "\"" || ch == "'" { quote = ch; inWord = true; continue }
            if ch == " " || ch == "\t" {
                if inWord { words.append(current); current = ""; inWord = false }
                continue
            }
            if (ch == "#" || ch == ";") && !inWord { break }
            current.append(ch)
            inWord = true
        }
        if inWord { words.append(current) }
        return words
    }

    static func quoteIfNeeded(_ word: String) -> String {
        word.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" || $0 == "#" || $0 == ";" })
            ? "\"" + word.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"") + "\"" : word
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

/// vpnctl's trust anchors: `<config-dir>/trust/<sha256>.pem`, one file per
/// anchor, installed by an administrator or an imported profile. vpnctl never
/// generates a CA.
public struct TrustStore: Sendable {
    public let directory: String

    public init(configDirectory: String) { directory = configDirectory + "/trust" }

    public func path(_ fingerprint: String) -> String { "\(directory)/\(fingerprint).pem" }

    public func exists(_ fingerprint: String) -> Bool { FileSystem.exists(path(fingerprint)) }

    public func install(_ pem: [UInt8], fingerprint: String) throws {
        do {
            try FileSystem.ensurePrivateDirectory(FileSystem.parentDirectory(of: directory))
            try FileSystem.ensurePrivateDirectory(directory, mode: 0o755)
            if !exists(fingerprint) { try AtomicFile.write(pem, to: path(fingerprint), mode: 0o644) }
        } catch {
            throw storeError(error)
        }
    }

    /// SHA-256 of the DER of the first certificate in a PEM text.
    public static func fingerprint(pem: [UInt8]) -> String? {
        let text = String(decoding: pem, as: UTF8.self)
        guard let begin = text.firstRange(of: "-----BEGIN CERTIFICATE-----"),
              let end = text[begin.upperBound...].firstRange(of: "-----END CERTIFICATE-----") else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)), !der.isEmpty else { return nil }
        return SHA256.hex(Array(der))
    }
}
