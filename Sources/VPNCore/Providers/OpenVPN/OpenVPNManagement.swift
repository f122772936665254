import VPNSystem

/// The openvpn management interface (management-notes.txt): real-time
/// messages start with '>', command replies with SUCCESS: or ERROR:.
public enum ManagementMessage: Equatable, Sendable {
    case state(name: String, detail: String)
    case password(String)
    case hold(String)
    case upDown(String)
    case upDownEnv(key: String, value: String)
    case upDownEnvEnd
    case log(flags: String, message: String)
    case fatal(String)
    case info(String)
    /// `>INFOMSG:`: what the server sent for the client's user (WEB_AUTH, OPEN_URL, CR_TEXT).
    case infoMessage(String)
    case success(String)
    case error(String)
    case other(String)

    public static func parse(_ raw: String) -> ManagementMessage {
        let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
        if line.hasPrefix("SUCCESS:") { return .success(String(line.dropFirst(8)).trimmingSpaces()) }
        if line.hasPrefix("ERROR:") { return .error(String(line.dropFirst(6)).trimmingSpaces()) }
        guard line.hasPrefix(">"), let colon = line.firstIndex(of: ":") else { return .other(line) }
        let kind = line[line.index(after: line.startIndex)..<colon]
        let body = String(line[line.index(after: colon)...])
        switch kind {
        case "STATE":
            // time,NAME,detail,local ip,remote ip,remote port,local addr,local port,local ipv6
            let f = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return .state(name: f.count > 1 ? f[1] : "", detail: f.count > 2 ? f[2] : "")
        case "PASSWORD": return .password(body)
        case "HOLD": return .hold(body)
        case "FATAL": return .fatal(body)
        case "INFO": return .info(body)
        case "INFOMSG": return .infoMessage(body)
        case "LOG":
            // time,flags,message (the message may itself contain commas)
            let f = body.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            return .log(flags: f.count > 1 ? f[1] : "", message: f.count > 2 ? f[2] : body)
        case "UPDOWN":
            if body.hasPrefix("ENV,") {
                let kv = body.dropFirst(4)
                if kv == "END" { return .upDownEnvEnd }
                guard let eq = kv.firstIndex(of: "=") else { return .other(line) }
                return .upDownEnv(key: String(kv[..<eq]), value: String(kv[kv.index(after: eq)...]))
            }
            return .upDown(body)
        default:
            return .other(line)
        }
    }

    /// Quotes a value for a management command (`password "Auth" "..."`).
    /// Nil for a value with a control character: a command is one line, and
    /// a line break in a password would start a command of its own.
    public static func quote(_ s: String) -> String? {
        if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return nil }
        return "\"" + s.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"") + "\""
    }
}

/// What an openvpn state means for vpnctl's status.
public enum OpenVPNState {
    public static func status(_ name: String) -> VPNStatus? {
        switch name {
        case "CONNECTING", "WAIT", "AUTH", "GET_CONFIG", "ASSIGN_IP", "ADD_ROUTES", "RESOLVE", "TCP_CONNECT", "AUTH_PENDING":
            return .connecting
        case "CONNECTED": return .connected
        case "RECONNECTING": return .reasserting
        case "EXITING": return .disconnecting
        default: return nil
        }
    }
}

/// The settings openvpn pushes (`>UPDOWN:ENV` lines), as vpnctl applies them.
public struct PushedSettings: Equatable, Sendable {
    public var addresses: [String] = []
    public var routes: [String] = []
    public var mtu: Int? = nil
    public var dns: [String] = []
    public var domains: [String] = []
    /// The server's address this session (`trusted_ip`, `trusted_ip6`).
    public var server: String? = nil
    /// Values the server pushed that are not addresses, prefixes or domain
    /// names ("key=value", control characters shown escaped).
    public var invalid: [String] = []

    public init() {}

    public init(env: [String: String]) {
        func add(_ cidr: String, to list: inout [String], _ key: String) {
            if let c = CIDR(cidr) { list.append(c.description) } else { invalid.append("\(key)=\(cidr)") }
        }
        if let local = env["ifconfig_local"] {
            if let mask = env["ifconfig_netmask"], let bits = PushedSettings.prefixLength(mask) {
                add("\(local)/\(bits)", to: &addresses, "ifconfig_local")
            } else {
                add("\(local)/32", to: &addresses, "ifconfig_local")
                if let remote = env["ifconfig_remote"] { add("\(remote)/32", to: &routes, "ifconfig_remote") }
            }
        }
        if let v6 = env["ifconfig_ipv6_local"] {
            add("\(v6)/\(env["ifconfig_ipv6_netbits"] ?? "128")", to: &addresses, "ifconfig_ipv6_local")
        }
        mtu = env["tun_mtu"].flatMap { Int($0) }
        server = (env["trusted_ip"] ?? env["trusted_ip6"]).flatMap { IPAddress($0)?.description }
        var n = 1
        while let network = env["route_network_\(n)"] {
            let bits = env["route_netmask_\(n)"].flatMap(PushedSettings.prefixLength) ?? 32
            if let c = CIDR("\(network)/\(bits)") { routes.append(c.network.description) } else { invalid.append("route_network_\(n)=\(network)") }
            n += 1
        }
        n = 1
        while let network = env["route_ipv6_network_\(n)"] {
            if let c = CIDR(network) { routes.append(c.network.description) } else { invalid.append("route_ipv6_network_\(n)=\(network)") }
            n += 1
        }
        n = 1
        while let option = env["foreign_option_\(n)"] {
            let words = option.split(separator: " ").map(String.init)
            if words.count >= 3, words[0] == "dhcp-option" {
                // Checked as a profile's dnsSettings are: what a server pushes
                // reaches resolv.conf and resolvectl's command line.
                switch words[1] {
                case "DNS", "DNS6":
                    if words.count == 3, IPAddress(words[2]) != nil { dns.append(words[2]) }
                    else { invalid.append("foreign_option_\(n)=\(OpenVPNDirectives.shown(option.escapingControls(keepLineBreaks: false)))") }
                case "DOMAIN", "DOMAIN-SEARCH", "ADAPTER_DOMAIN_SUFFIX":
                    if words.count == 3, isDomainName(words[2]) { domains.append(words[2]) }
                    else { invalid.append("foreign_option_\(n)=\(OpenVPNDirectives.shown(option.escapingControls(keepLineBreaks: false)))") }
                default: break
                }
            }
            n += 1
        }
    }

    /// "255.255.255.0" -> 24; nil for a non-contiguous mask.
    static func prefixLength(_ mask: String) -> Int? {
        guard let a = IPAddress(mask), !a.isIPv6 else { return nil }
        var bits = 0, seenZero = false
        for byte in a.bytes {
            for i in (0..<8).reversed() {
                if byte & (1 << i) != 0 {
                    if seenZero { return nil }
                    bits += 1
                } else {
                    seenZero = true
                }
            }
        }
        return bits
    }
}

/// Turns openvpn's own words into a last-disconnect error, quoting them.
public struct OpenVPNDiagnosis: Sendable {
    public private(set) var heardFromServer = false
    public private(set) var lastReason: String? = nil
    /// An error that ends the attempt at once (no point retrying).
    public private(set) var fatal: ConnectionError? = nil
    /// The tunnel answers a refused login itself (a challenge, auth-retry):
    /// AUTH_FAILED is not the end of the attempt here.
    public var tunnelDecidesAuth = false

    public init() {}

    public mutating func observe(_ m: ManagementMessage) {
        switch m {
        case .password(let text) where text.containsUTF8("Verification Failed"):
            if !tunnelDecidesAuth {
                fatal = ConnectionError(.authenticationFailed, "the server rejected the username or password (openvpn: \(text))")
            }
        case .state(let name, let detail) where name == "RECONNECTING" || name == "EXITING":
            if detail == "auth-failure" && fatal == nil && !tunnelDecidesAuth {
                fatal = ConnectionError(.authenticationFailed, "the server rejected the credentials (openvpn: AUTH_FAILED)")
            }
        case .fatal(let text):
            lastReason = text
            if fatal == nil { fatal = classify(text) ?? ConnectionError(.configurationFailed, "openvpn: \(text)") }
        case .log(let flags, let message):
            if message.hasPrefix("TLS: Initial packet from") || message.containsUTF8("Peer Connection Initiated")
                || message.hasPrefix("VERIFY OK") || message.hasPrefix("VERIFY ERROR") {
                heardFromServer = true
            }
            if let e = classify(message) {
                if fatal == nil { fatal = e }
            } else if flags.contains("F") || flags.contains("N") || message.hasPrefix("TLS Error") || message.containsUTF8("error") {
                lastReason = message
            }
        default:
            break
        }
    }

    func classify(_ message: String) -> ConnectionError? {
        let quoted = "openvpn: \(message)"
        if message.containsUTF8("AUTH_FAILED") { return tunnelDecidesAuth ? nil : ConnectionError(.authenticationFailed, quoted) }
        if message.hasPrefix("VERIFY ERROR") || message.hasPrefix("VERIFY KU ERROR") || message.hasPrefix("VERIFY EKU ERROR")
            || message.hasPrefix("VERIFY X509NAME ERROR") {
            if message.containsUTF8("certificate has expired") { return ConnectionError(.serverCertificateExpired, quoted) }
            if message.containsUTF8("not yet valid") { return ConnectionError(.serverCertificateNotYetValid, quoted) }
            return ConnectionError(.serverCertificateInvalid, quoted)
        }
        if message.containsUTF8("alert certificate expired") { return ConnectionError(.clientCertificateExpired, quoted) }
        if message.containsUTF8("alert bad certificate") || message.containsUTF8("alert unknown ca")
            || message.containsUTF8("alert certificate unknown") { return ConnectionError(.clientCertificateInvalid, quoted) }
        if message.containsUTF8("Cannot load certificate file") || message.containsUTF8("Cannot load private key")
            || message.containsUTF8("Private key does not match") { return ConnectionError(.clientCertificateInvalid, quoted) }
        if message.hasPrefix("RESOLVE: Cannot resolve host address") { return ConnectionError(.serverAddressResolutionFailed, quoted) }
        // openvpn itself only warns about a pushed option it does not know
        // (block-outside-dns, which Windows servers push) and goes on.
        if message.hasPrefix("Options error"), !message.containsUTF8("[PUSH-OPTIONS]") { return ConnectionError(.configurationFailed, quoted) }
        return nil
    }

    /// The error for a start that ran out of time.
    public func timeoutError(seconds: Int64, remote: String) -> ConnectionError {
        let why = lastReason.map { " (openvpn: \($0))" } ?? ""
        if heardFromServer {
            return ConnectionError(.negotiationFailed, "the server at \(remote) answered but the TLS negotiation did not complete within \(seconds) s\(why)")
        }
        return ConnectionError(.serverNotResponding, "no answer from the server at \(remote) within \(seconds) s\(why)")
    }
}
