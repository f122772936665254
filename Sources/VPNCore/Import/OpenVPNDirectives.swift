import FoundationEssentials

/// What vpnctl lets into the file openvpn reads. openvpn runs as root and
/// obeys every line of that file, so only directives on an allow-list go in:
/// none of them takes a program, a plugin or a file path, and each one's
/// arguments must fit its grammar (numbers where openvpn expects numbers, a
/// fixed set of words where that is the grammar). Import, `vpnctl edit` and
/// the rendering at start all use these rules.
public enum OpenVPNDirectives {
    /// Directives that make openvpn run a program (or allow it to).
    public static let runsProgram: Set<String> = [
        "up", "down", "route-up", "route-pre-down", "ipchange", "client-connect", "client-disconnect", "client-crresponse",
        "learn-address", "tls-verify", "auth-user-pass-verify", "plugin", "iproute", "tls-crypt-v2-verify", "dns-updown",
        "script-security",
    ]

    /// The directives vpnctl passes to openvpn, each with its grammar.
    public static let allowed: [String: Grammar] = {
        var g: [String: Grammar] = [:]
        for flag in ["auth-nocache", "nobind", "persist-key", "persist-tun", "remote-random", "float", "mute-replay-warnings",
                     "ifconfig-nowarn", "tls-client", "push-peer-info", "route-nopull", "pull", "fast-io", "passtos",
                     "persist-remote-ip", "ping-timer-rem", "allow-pull-fqdn", "remote-random-hostname"] {
            g[flag] = Grammar(flag) { $0.isEmpty }
        }
        for name in ["connect-retry-max", "server-poll-timeout", "connect-timeout", "hand-window", "ping", "ping-restart",
                     "ping-exit", "tls-timeout", "tran-window", "sndbuf", "rcvbuf", "mute", "reneg-bytes", "reneg-pkts", "tun-mtu-extra"] {
            g[name] = Grammar("\(name) N") { $0.count == 1 && isNumber($0[0]) }
        }
        for name in ["tun-mtu", "reneg-sec", "replay-window", "connect-retry"] {
            g[name] = Grammar("\(name) N [N]") { (1...2).contains($0.count) && $0.allSatisfy(isNumber) }
        }
        g["keepalive"] = Grammar("keepalive INTERVAL TIMEOUT") { $0.count == 2 && $0.allSatisfy(isNumber) }
        g["explicit-exit-notify"] = Grammar("explicit-exit-notify [N]") { $0.count <= 1 && $0.allSatisfy(isNumber) }
        g["verb"] = Grammar("verb 0-11") { $0.count == 1 && isNumber($0[0]) && (Int($0[0]) ?? 99) <= 11 }
        g["resolv-retry"] = Grammar("resolv-retry N|infinite") { $0.count == 1 && (isNumber($0[0]) || $0[0] == "infinite") }
        g["mssfix"] = Grammar("mssfix [N [mtu|fixed]]") {
            $0.count <= 2 && ($0.isEmpty || isNumber($0[0])) && ($0.count < 2 || ["mtu", "fixed"].contains($0[1]))
        }
        g["fragment"] = Grammar("fragment N [mtu]") { (1...2).contains($0.count) && isNumber($0[0]) && ($0.count < 2 || $0[1] == "mtu") }

        for name in ["cipher", "data-ciphers-fallback", "auth"] {
            g[name] = Grammar("\(name) ALGORITHM") { $0.count == 1 && isWord($0[0], extra: "-_.") }
        }
        g["data-ciphers"] = Grammar("data-ciphers ALG[:ALG...]") { $0.count == 1 && isWord($0[0], extra: "-_.:?") }
        for name in ["tls-cipher", "tls-ciphersuites", "tls-groups"] {
            g[name] = Grammar("\(name) LIST (OpenSSL names, ':'-separated)") { $0.count == 1 && isWord($0[0], extra: "-_.:!+@=") }
        }
        let tlsVersions = ["1.0", "1.1", "1.2", "1.3"]
        g["tls-version-min"] = Grammar("tls-version-min 1.0|1.1|1.2|1.3 [or-highest]") {
            (1...2).contains($0.count) && tlsVersions.contains($0[0]) && ($0.count < 2 || $0[1] == "or-highest")
        }
        g["tls-version-max"] = Grammar("tls-version-max 1.0|1.1|1.2|1.3") { $0.count == 1 && tlsVersions.contains($0[0]) }
        g["remote-cert-tls"] = oneOf("remote-cert-tls", ["server", "client"])
        g["ns-cert-type"] = oneOf("ns-cert-type", ["server", "client"])
        g["verify-x509-name"] = Grammar("verify-x509-name NAME [subject|name|name-prefix]") {
            (1...2).contains($0.count) && !$0[0].isEmpty && ($0.count < 2 || ["subject", "name", "name-prefix"].contains($0[1]))
        }
        g["remote-cert-ku"] = Grammar("remote-cert-ku [HEX ...]") {
            $0.count <= 12 && $0.allSatisfy { !$0.isEmpty && $0.count <= 4 && $0.allSatisfy(\.isHexDigit) }
        }
        g["remote-cert-eku"] = Grammar("remote-cert-eku OID|NAME") { $0.count == 1 && !$0[0].isEmpty }
        g["key-direction"] = oneOf("key-direction", ["0", "1"])
        g["compress"] = Grammar("compress [lzo|lz4|lz4-v2|stub|stub-v2|migrate]") {
            $0.isEmpty || ($0.count == 1 && ["lzo", "lz4", "lz4-v2", "stub", "stub-v2", "migrate"].contains($0[0]))
        }
        g["comp-lzo"] = Grammar("comp-lzo [yes|no|adaptive]") { $0.isEmpty || ($0.count == 1 && ["yes", "no", "adaptive"].contains($0[0])) }
        g["allow-compression"] = oneOf("allow-compression", ["yes", "no", "asym"])
        g["auth-retry"] = oneOf("auth-retry", ["none", "nointeract", "interact"])
        g["mtu-disc"] = oneOf("mtu-disc", ["no", "maybe", "yes"])
        g["pull-filter"] = Grammar("pull-filter accept|ignore|reject TEXT") {
            $0.count == 2 && ["accept", "ignore", "reject"].contains($0[0]) && !$0[1].isEmpty
        }
        g["route"] = Grammar("route NETWORK [NETMASK [GATEWAY [METRIC]]] (IPv4 addresses, host names, 'default')") { a in
            guard (1...4).contains(a.count), isRouteHost(a[0]) else { return false }
            return (a.count < 2 || a[1] == "default" || isIPv4(a[1]))
                && (a.count < 3 || a[2] == "default" || isRouteHost(a[2]))
                && (a.count < 4 || a[3] == "default" || isNumber(a[3]))
        }
        g["redirect-gateway"] = Grammar("redirect-gateway [def1] [local] [autolocal] [block-local] [bypass-dhcp] [bypass-dns] [ipv6] [!ipv4]") {
            $0.count <= 8 && $0.allSatisfy(RedirectGateway.flags.contains)
        }
        g["dhcp-option"] = Grammar("dhcp-option DNS|DNS6 ADDRESS, or DOMAIN|DOMAIN-SEARCH|ADAPTER_DOMAIN_SUFFIX NAME") { a in
            guard a.count == 2 else { return false }
            switch a[0] {
            case "DNS", "DNS6": return IPAddress(a[1]) != nil
            case "DOMAIN", "DOMAIN-SEARCH", "ADAPTER_DOMAIN_SUFFIX": return isDomainName(a[1])
            default: return false
            }
        }
        // Which unknown directives openvpn may skip (Nyr's files name block-outside-dns); never one that runs a program.
        g["ignore-unknown-option"] = Grammar("ignore-unknown-option NAME [NAME ...] (no directive that runs a program)") {
            (1...16).contains($0.count) && $0.allSatisfy { isWord($0, extra: "-_") && !runsProgram.contains($0.lowercased()) }
        }
        g["route-ipv6"] = Grammar("route-ipv6 PREFIX/BITS [GATEWAY [METRIC]]") { a in
            guard (1...3).contains(a.count), let c = CIDR(a[0]), c.address.isIPv6, a[0].contains("/") else { return false }
            return (a.count < 2 || a[1] == "default" || IPAddress(a[1])?.isIPv6 == true)
                && (a.count < 3 || a[2] == "default" || isNumber(a[2]))
        }
        return g
    }()

    public struct Grammar: Sendable {
        public let usage: String
        let accepts: @Sendable ([String]) -> Bool
        init(_ usage: String, _ accepts: @escaping @Sendable ([String]) -> Bool) {
            self.usage = usage
            self.accepts = accepts
        }
    }

    static func oneOf(_ name: String, _ words: [String]) -> Grammar {
        Grammar("\(name) \(words.joined(separator: "|"))") { $0.count == 1 && words.contains($0[0]) }
    }

    static func isNumber(_ s: String) -> Bool { !s.isEmpty && s.count <= 18 && s.allSatisfy { $0.isASCII && $0.isNumber } }

    static func isWord(_ s: String, extra: String) -> Bool {
        !s.isEmpty && s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || extra.unicodeScalars.contains($0)) }
    }

    static func isIPv4(_ s: String) -> Bool { IPAddress(s).map { !$0.isIPv6 } ?? false }

    static func isRouteHost(_ s: String) -> Bool {
        isIPv4(s) || ["vpn_gateway", "net_gateway", "remote_host"].contains(s) || (Endpoint.isHostName(s) && IPAddress(s) == nil)
    }

    /// What a directive is to vpnctl.
    public enum Verdict: Equatable, Sendable {
        case allowed
        case runsProgram
        /// A directive that makes openvpn read other directives (the reason).
        case wrapper(String)
        case notAllowed
        /// The arguments do not fit the grammar (its usage line).
        case badArguments(String)
        /// A directive that means something only on another system (Windows):
        /// accepted, listed as having no effect, not passed on.
        case noEffectOnLinux
    }

    /// Windows' directives (and dhcp-options other than DNS and domains):
    /// openvpn on Linux refuses most of them as unknown.
    public static let noEffectOnLinux: Set<String> = [
        "block-outside-dns", "register-dns", "dhcp-renew", "dhcp-release", "dhcp-pre-release", "route-method", "win-sys",
        "ip-win32", "tap-sleep", "allow-nonadmin", "windows-driver",
    ]

    /// The directive name openvpn sees in `words` (a leading "--" dropped), lowercased.
    public static func name(_ words: [String]) -> String {
        let first = words.first ?? ""
        return (first.count >= 3 && first.hasPrefix("--") ? String(first.dropFirst(2)) : first).lowercased()
    }

    public static func verdict(_ words: [String]) -> Verdict {
        let name = name(words)
        let args = Array(words.dropFirst())
        if runsProgram.contains(name) { return .runsProgram }
        switch name {
        case "setenv" where args.first?.lowercased() == "opt":
            return .wrapper("'setenv opt' makes openvpn read the rest of the line as a directive; write the directive itself")
        case "config":
            return .wrapper("'config' makes openvpn read another file of directives; vpnctl keeps every directive in the profile")
        default: break
        }
        if noEffectOnLinux.contains(name) { return .noEffectOnLinux }
        if name == "dhcp-option", let kind = args.first, !["DNS", "DNS6", "DOMAIN", "DOMAIN-SEARCH", "ADAPTER_DOMAIN_SUFFIX"].contains(kind) {
            return .noEffectOnLinux
        }
        guard let grammar = allowed[name] else { return .notAllowed }
        return grammar.accepts(args) ? .allowed : .badArguments(grammar.usage)
    }

    /// openvpn's line limit: a longer line stops it ("Maximum option line length (256) exceeded").
    public static let maximumLineLength = 254

    /// Why one entry of `protocol.options` may not go into openvpn's config, or nil.
    public static func problem(in option: String) -> String? {
        if option.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "a control character (a line break?) in \(shown(option).debugDescription)"
        }
        guard let words = tokenize(option) else {
            return "openvpn cannot read '\(shown(option))' (a quote never closed, or '\\' before something other than '\\', '\"' or a space)"
        }
        guard !words.isEmpty else { return "empty (or only a comment)" }
        let name = name(words)
        switch verdict(words) {
        case .allowed:
            if render(words).utf8.count > maximumLineLength {
                return "'\(shown(name))' is longer than \(maximumLineLength) characters, the most openvpn reads in one line"
            }
            return nil
        case .runsProgram: return "'\(name)' can run programs; vpnctl refuses it"
        case .wrapper(let why): return why
        case .notAllowed: return "'\(shown(name))' is not a directive vpnctl passes to openvpn"
        case .badArguments(let usage): return "'\(shown(option))' does not fit '\(usage)'"
        case .noEffectOnLinux: return "'\(shown(name))' has no effect on Linux; remove it"
        }
    }

    /// One directive line as vpnctl writes it: the name as openvpn knows it,
    /// each word quoted so that openvpn reads back exactly these words.
    public static func render(_ words: [String]) -> String {
        ([name(words)] + words.dropFirst()).map(quote).joined(separator: " ")
    }

    /// Splits a line into words as openvpn 2.6 does (parse_line in options.c):
    /// whitespace between words; a word that starts with " or ' is quoted up
    /// to the matching quote; backslash escapes outside single quotes; '#' or
    /// ';' where a word would start ends the line. Quotes inside a word are
    /// ordinary characters (`O'Brien`). nil when openvpn would refuse the
    /// line: a quote never closed, or a backslash before anything but a
    /// backslash, a double quote or a space.
    public static func tokenize(_ line: String) -> [String]? {
        enum State { case between, bare, doubleQuoted, singleQuoted }
        var words: [String] = []
        var word = String.UnicodeScalarView()
        var state = State.between
        var backslash = false
        func isSpace(_ c: Unicode.Scalar) -> Bool { c == " " || ("\t"..."\r").contains(c) }
        for c in line.unicodeScalars {
            if !backslash && c == "\\" && state != .singleQuoted { backslash = true; continue }
            // openvpn refuses a backslash before anything but \, " or a space.
            if backslash && !(c == "\\" || c == "\"" || isSpace(c)) && !(state == .between && (c == "#" || c == ";")) {
                return nil
            }
            defer { backslash = false }
            switch state {
            case .between:
                if isSpace(c) { continue }
                if c == "#" || c == ";" { return words }
                if !backslash && c == "\"" { state = .doubleQuoted } else if !backslash && c == "'" { state = .singleQuoted } else {
                    word.append(c)
                    state = .bare
                }
            case .bare:
                if !backslash && isSpace(c) {
                    words.append(String(word)); word = .init(); state = .between
                } else { word.append(c) }
            case .doubleQuoted:
                if !backslash && c == "\"" {
                    words.append(String(word)); word = .init(); state = .between
                } else { word.append(c) }
            case .singleQuoted:
                if c == "'" {
                    words.append(String(word)); word = .init(); state = .between
                } else { word.append(c) }
            }
        }
        switch state {
        case .between: return words
        case .bare where !backslash: words.append(String(word)); return words
        case .bare, .doubleQuoted, .singleQuoted: return nil
        }
    }

    /// A word written so that `tokenize` (and openvpn) reads it back unchanged.
    public static func quote(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy {
            $0.value > 0x20 && $0.value != 0x7F && !"\"'\\#;".unicodeScalars.contains($0)
        }
        if plain { return word }
        var s = "\""
        for c in word.unicodeScalars {
            if c == "\\" || c == "\"" { s.unicodeScalars.append("\\") }
            s.unicodeScalars.append(c)
        }
        return s + "\""
    }

    /// At most ~100 characters of a value, for messages.
    public static func shown(_ s: String) -> String { s.count > 100 ? String(s.prefix(100)) + "…" : s }
}
