import FoundationEssentials

/// openvpn's `redirect-gateway` (client-side or pushed): the default route
/// through the tunnel. openvpn 2.6 with `route-noexec` hands a management
/// client its routes as `>UPDOWN:ENV` lines but not this one (only IPv6's
/// halves come as routes), so vpnctl reads it from the profile's options and
/// from the server's PUSH_REPLY, which openvpn logs at verb 3.
public struct RedirectGateway: Equatable, Sendable {
    public var ipv4 = true
    public var ipv6 = false
    /// Routes to the pushed DNS servers stay on the underlay.
    public var bypassDNS = false
    /// Flags that mean nothing on Linux, or that vpnctl does not do.
    public var ignored: [String] = []

    public static let flags: Set<String> = ["def1", "local", "autolocal", "block-local", "bypass-dhcp", "bypass-dns", "ipv6", "!ipv4"]

    /// From a directive's words ("redirect-gateway def1 bypass-dhcp"); nil
    /// for anything else (redirect-private changes no route).
    public init?(_ words: [String]) {
        guard words.first == "redirect-gateway" else { return nil }
        for flag in words.dropFirst() {
            switch flag {
            // vpnctl always routes the two halves (def1's way): the default route is never replaced.
            case "def1", "local", "autolocal": break
            case "ipv6": ipv6 = true
            case "!ipv4": ipv4 = false
            case "bypass-dns": bypassDNS = true
            case "bypass-dhcp": ignored.append("bypass-dhcp (the DHCP server is on the local link)")
            case "block-local": ignored.append("block-local (the local subnet stays outside the tunnel)")
            default: ignored.append(flag)
            }
        }
    }

    /// The routes through the tunnel: the two halves of each family.
    public var routes: [String] {
        (ipv4 ? ["0.0.0.0/1", "128.0.0.0/1"] : []) + (ipv6 ? ["::/1", "8000::/1"] : [])
    }

    /// The options of a PUSH_REPLY that openvpn logged
    /// ("PUSH: Received control message: 'PUSH_REPLY,route …,ping 2'"), or nil.
    public static func pushedOptions(_ logMessage: String) -> [String]? {
        let prefix = "PUSH: Received control message: '"
        guard logMessage.hasPrefix(prefix) else { return nil }
        var body = logMessage.dropFirst(prefix.count)
        if body.hasSuffix("'") { body = body.dropLast() }
        guard body.hasPrefix("PUSH_REPLY") else { return nil }
        return body.split(separator: ",").dropFirst().map { String($0) }
    }

    /// The pushed redirect-gateway of those options (the last one wins).
    public static func pushed(_ options: [String]) -> RedirectGateway? {
        options.compactMap { RedirectGateway($0.split(separator: " ").map(String.init)) }.last
    }
}

/// The profile's `pull-filter accept|ignore|reject TEXT` lines, as openvpn
/// applies them to what a server pushes: in order, the first whose TEXT
/// starts the option (leading spaces skipped) decides; none: accepted.
/// openvpn filters the options it acts on itself, but the PUSH_REPLY it logs
/// is the server's, unfiltered, so vpnctl filters it the same way before it
/// reads a redirect-gateway from it (`pull-filter ignore redirect-gateway`
/// is how a user keeps a full-tunnel server's client split).
public struct PullFilter: Equatable, Sendable {
    public enum Action: String, Sendable { case accept, ignore, reject }
    public struct Rule: Equatable, Sendable {
        public var action: Action
        public var text: String
    }
    public var rules: [Rule]

    public init(options: [String]) {
        rules = options.compactMap { option in
            guard let words = OpenVPNDirectives.tokenize(option), words.count == 3, OpenVPNDirectives.name(words) == "pull-filter",
                  let action = Action(rawValue: words[1]) else { return nil }
            return Rule(action: action, text: words[2])
        }
    }

    /// What openvpn does with one pushed option.
    public func action(for option: String) -> Action {
        let line = option.drop(while: { $0 == " " || $0 == "\t" })
        return rules.first(where: { line.hasPrefix($0.text) })?.action ?? .accept
    }

    /// The pushed options openvpn keeps (a rejected one makes it restart the session).
    public func kept(_ options: [String]) -> [String] { options.filter { action(for: $0) == .accept } }
}
