import FoundationEssentials

/// Checks a profile and reports every problem at once, each naming the field
/// and what is wrong. The platform's single "configuration invalid" is
/// exactly what vpnctl avoids.
public struct ProfileValidator {
    /// Whether the named secret of this profile is set.
    public var secretExists: (String) -> Bool

    public init(secretExists: @escaping (String) -> Bool) {
        self.secretExists = secretExists
    }

    public func problems(in profile: Profile) -> [String] {
        var p: [String] = []
        p += ProfileName.problems(profile.name).map { "name: \($0)" }
        p += profile.protocol.model.problems(self)
        p += onDemand(profile.onDemand)
        p += policy(profile.policy)
        p += networkPolicy(profile)
        return p
    }

    /// dnsSettings and the kill-switch flags.
    func networkPolicy(_ profile: Profile) -> [String] {
        var p: [String] = []
        if let d = profile.dnsSettings {
            for s in d.servers where IPAddress(s) == nil {
                p.append(L("dnsSettings.servers: '\(OpenVPNDirectives.shown(s))' is not an IP address"))
            }
            for (field, list) in [("searchDomains", d.searchDomains), ("matchDomains", d.matchDomains)] {
                for n in list where !isDomainName(n) {
                    p.append(L("dnsSettings.\(field): '\(OpenVPNDirectives.shown(n))' is not a domain name"))
                }
            }
        }
        if profile.excludeLocalNetworks && !profile.includeAllNetworks {
            p.append(L("excludeLocalNetworks: only has a meaning with includeAllNetworks (set both, or neither)"))
        }
        if let a = profile.appRules {
            p += a.problems()
            if profile.enforceRoutes {
                p.append(L("appRules: cannot be combined with enforceRoutes yet (its rules send every program's traffic to the tunnel's routes); remove one"))
            }
            if profile.protocol.kind == .ikev2 {
                p.append(L("appRules: not for ikev2 yet: kernel-libipsec puts a full tunnel's routes in the main table itself, where every program uses them"))
            }
        }
        if profile.persistent && !profile.protocol.model.keepsTrying {
            p.append(L("persistent: \(profile.protocol.model.persistentRefusal) (remove the key)"))
        }
        return p
    }

    /// The problems that only a secret can fix. `import` and `edit` save a
    /// profile with these (and say so); `start` refuses it.
    public func missingSecrets(in profile: Profile, except asked: [String] = []) -> [String] {
        profile.secretReferences.compactMap { ref in
            (SecretStore.isValidName(ref.name) && !asked.contains(ref.name) && !secretExists(ref.name))
                ? "\(ref.field): secret '\(ref.name)' is not set" : nil
        }
    }

    func secretRef(_ field: String, _ name: String?, required: Bool, what: String) -> [String] {
        guard let name else { return required ? ["\(field): missing (\(what))"] : [] }
        if !SecretStore.isValidName(name) { return ["\(field): '\(name)' is not a valid secret name (letters, digits, '.', '_', '-')"] }
        return []
    }

    func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || c.value == 0x7F }



    func onDemand(_ o: OnDemand) -> [String] {
        var p: [String] = []
        for (i, r) in o.rules.enumerated() {
            if r.action == .evaluateConnection {
                p.append(L("onDemand.rules[\(i)].action: evaluateConnection needs a per-connection hook that Linux does not give; use connect with dnsSearchDomains (or dnsServerAddresses) conditions instead"))
            }
            if let url = r.probeURL, !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                p.append(L("onDemand.rules[\(i)].probeURL: '\(url)' must be an http:// or https:// URL"))
            } else if let url = r.probeURL, url.hasPrefix("http://"), ProbeURL(url) == nil {
                p.append(L("onDemand.rules[\(i)].probeURL: '\(url)' is not a URL vpnctl can probe (http://host[:port]/path)"))
            }
            for d in r.dnsSearchDomains ?? [] where !(d == "*" || isDomainName(d.hasPrefix("*.") ? String(d.dropFirst(2)) : d)) {
                p.append(L("onDemand.rules[\(i)].dnsSearchDomains: '\(OpenVPNDirectives.shown(d))' is not a domain name (or *.domain)"))
            }
            for a in r.dnsServerAddresses ?? [] where a.isEmpty || !a.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" || $0 == "*" }) {
                p.append(L("onDemand.rules[\(i)].dnsServerAddresses: '\(OpenVPNDirectives.shown(a))' is not an address (or a pattern with *)"))
            }
            for s in r.ssids ?? [] where s.isEmpty || s.utf8.count > 32 {
                p.append(L("onDemand.rules[\(i)].ssids: '\(OpenVPNDirectives.shown(s))' is not an SSID (1–32 bytes)"))
            }
        }
        return p
    }

    /// What is allowed but probably not meant: on-demand rules that can
    /// never connect or that do nothing. `import`, `edit` and `ondemand`
    /// print these; nothing refuses them.
    public func warnings(in profile: Profile) -> [String] {
        var w: [String] = []
        let rules = profile.onDemand.rules
        if let last = rules.last, last.hasConditions {
            w.append(L("onDemand.rules[\(rules.count - 1)]: the last rule has conditions: when no rule matches, on-demand does nothing (end with a rule without conditions, e.g. {\"action\": \"ignore\"})"))
        }
        let model = profile.protocol.model
        // A default route (a full tunnel) does not make a host tunnel-only.
        let routes = model.tunnelRoutes.compactMap(CIDR.init).filter { $0.prefixLength > 0 }
        let servers = Set(model.serverHosts.map { $0.lowercased() })
        for (i, r) in rules.enumerated() {
            guard let url = r.probeURL, let host = ProbeURL.host(of: url) else { continue }
            if url.hasPrefix("https://") {
                w.append(L("onDemand.rules[\(i)].probeURL: https probes are not supported yet: the condition never matches (use http://)"))
            }
            if let ip = IPAddress(host), let route = routes.first(where: { $0.contains(ip) }) {
                w.append(L("onDemand.rules[\(i)].probeURL: \(host) is inside the tunnel's route \(route): the probe can only answer through the tunnel, so it cannot tell whether the tunnel is needed"))
            }
            if servers.contains(host.lowercased()) {
                w.append(L("onDemand.rules[\(i)].probeURL: \(host) is the VPN server itself: it answers whether or not the tunnel is needed, so the rule never tells networks apart"))
            }
        }
        return w
    }

    func policy(_ pol: Policy) -> [String] {
        var p: [String] = []
        for u in pol.users where u.isEmpty || u.contains(where: { $0 == ":" || $0 == " " }) {
            p.append(L("policy.users: '\(u)' is not a user name"))
        }
        for g in pol.groups where g.isEmpty || g.contains(where: { $0 == ":" || $0 == " " }) {
            p.append(L("policy.groups: '\(g)' is not a group name"))
        }
        if let actions = pol.actions, Set(actions).count != actions.count {
            p.append(L("policy.actions: an action is listed twice"))
        }
        return p
    }
}

/// Letters, digits, '-' and '.', at most 253 bytes, in labels of 1–63
/// bytes that do not start with '-' (one trailing '.' allowed).
func isDomainName(_ s: String) -> Bool {
    let u = s.utf8
    guard !u.isEmpty, u.count <= 253,
          u.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x2E }) else { return false }
    let labels = (u.last == 0x2E ? u.dropLast() : u[...]).split(separator: 0x2E, omittingEmptySubsequences: false)
    return labels.allSatisfy { !$0.isEmpty && $0.count <= 63 && $0.first != 0x2D }
}

public enum ProfileName {
    /// Profile names are shown in tables and typed on command lines.
    public static func problems(_ name: String) -> [String] {
        if name.isEmpty { return ["empty"] }
        if isPlainlyFine(name) { return [] }
        var p: [String] = []
        if name.count > 64 { p.append(L("longer than 64 characters")) }
        if name.hasPrefix("-") { p.append(L("\(name.quotedForMessage) starts with '-', which reads as an option")) }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == "/" }) {
            p.append(L("contains a control character or '/'"))
        }
        if let u = name.unicodeScalars.first(where: { $0.properties.generalCategory != .control && $0.needsEscapeOnTerminal }) {
            p.append(L("contains an invisible formatting character (\(u.codePointText): a bidi control, zero-width or separator character)"))
        }
        if name.first?.isWhitespace == true || name.last?.isWhitespace == true { p.append(L("has leading or trailing spaces")) }
        if UUID(uuidString: name) != nil { p.append(L("looks like a UUID, which would be ambiguous with profile ids")) }
        return p
    }
}

extension ProfileName {
    /// Printable ASCII with no '/', no leading '-' or space and no trailing
    /// space, at most 64 long and not 36 (every UUID string is): every rule
    /// holds without classifying a scalar, which a store of a thousand
    /// profiles would otherwise pay for on each load.
    static func isPlainlyFine(_ name: String) -> Bool {
        let u = name.utf8
        guard u.count <= 64, u.count != 36, let first = u.first, let last = u.last,
              first != UInt8(ascii: "-"), first != 0x20, last != 0x20 else { return false }
        return u.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }
    }
}

public enum InterfaceName {
    /// What the kernel and nft both take literally: `[A-Za-z0-9_.-]`, 1–15
    /// bytes, not `.` or `..`. nft reads a `*` in a quoted name as a
    /// wildcard (`oifname "r*"` matches the underlay) and a `"` or `;` ends
    /// the word, so a name is never passed on unless it is one of these.
    public static func isValid(_ name: String) -> Bool {
        let u = name.utf8
        return !u.isEmpty && u.count <= 15 && name != "." && name != ".."
            && u.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F || $0 == 0x2E || $0 == 0x2D }
    }
}

public enum TrustAnchor {
    public static func isFingerprint(_ s: String) -> Bool {
        s.count == 64 && s.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isLowercase) }
    }
}

/// A WireGuard fwmark as wg-quick writes it: off, a number, or 0x-hex.
public enum Fwmark: Equatable, Sendable {
    case off
    case mark(UInt32)

    public init?(_ text: String) {
        let t = text.lowercased()
        if t == "off" {
            self = .off
        } else if t.hasPrefix("0x"), t.count > 2, t.dropFirst(2).allSatisfy(\.isHexDigit), let v = UInt32(t.dropFirst(2), radix: 16) {
            self = .mark(v)
        } else if !t.isEmpty, t.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt32(t) {
            self = .mark(v)
        } else {
            return nil
        }
    }

    public var value: UInt32? {
        if case .mark(let v) = self { return v }
        return nil
    }
}
