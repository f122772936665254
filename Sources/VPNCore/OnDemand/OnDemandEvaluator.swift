import FoundationEssentials

/// What a probe URL answered.
public enum ProbeResult: Equatable, Sendable {
    /// HTTP 200, no redirect: the only answer that matches.
    case ok
    case status(Int)
    case redirect(Int, location: String?)
    case failed(String)
    /// The URL cannot be probed by vpnctl (https).
    case unsupported(String)

    public var matches: Bool { self == .ok }

    /// The probeURL condition's text: "probe URL answered 200", one whole
    /// sentence for each answer.
    public func text(of url: String) -> String {
        switch self {
        case .ok: return L("probe \(url) answered 200")
        case .status(let c): return L("probe \(url) answered \(c)")
        case .redirect(let c, nil): return L("probe \(url) redirected (\(c))")
        case .redirect(let c, let l?): return L("probe \(url) redirected (\(c) to \(l))")
        case .failed(let why): return L("probe \(url) failed: \(why)")
        // The only URL vpnctl cannot probe is an https one.
        case .unsupported: return L("probe \(url) is https, which vpnctl does not probe yet (the condition never matches)")
        }
    }
}

/// One condition of one rule, and whether it held.
public struct ConditionOutcome: Equatable, Sendable, Encodable {
    /// The profile's key: interfaceType, ssids, dnsSearchDomains, dnsServerAddresses, probeURL.
    public var condition: String
    public var matched: Bool
    /// What was found, in words: "ethernet", "search domain not corp.example".
    public var text: String
}

/// One rule as evaluated. Rules after the deciding one are not evaluated.
public struct RuleOutcome: Equatable, Sendable, Encodable {
    /// 1-based, as people count rules.
    public var number: Int
    public var action: OnDemandRule.Action
    public var evaluated: Bool
    public var matched: Bool
    public var conditions: [ConditionOutcome]
}

/// The outcome of a rule set against a network: the deciding rule (the
/// first whose conditions all match), or none, and every rule's account.
public struct OnDemandEvaluation: Equatable, Sendable {
    public var rules: [RuleOutcome]
    public var decidingRule: Int?

    public var decision: OnDemandRule.Action? { decidingRule.map { rules[$0 - 1].action } }

    /// Why the deciding rule decided: its conditions, then why each rule
    /// before it did not match ("ethernet, search domain not corp.example").
    public var reason: String {
        guard let n = decidingRule else { return L("no rule matched") }
        var parts = rules[n - 1].conditions.map(\.text)
        for r in rules[..<(n - 1)] {
            if let failed = r.conditions.first(where: { !$0.matched }) { parts.append(failed.text) }
        }
        return parts.isEmpty ? L("no conditions") : parts.joined(separator: L(", "))
    }

    /// Whether a probe decided this outcome or could change it on a re-probe:
    /// some evaluated rule had a probe condition.
    public var dependsOnProbe: Bool {
        rules.contains { $0.evaluated && $0.conditions.contains { $0.condition == "probeURL" } }
    }
}

/// Matches rules against a `NetworkSnapshot`. Pure: probes go through the
/// function given, and only for rules whose other conditions all hold.
public enum OnDemandEvaluator {
    public static func evaluate(_ rules: [OnDemandRule], on network: NetworkSnapshot,
                                probe: (String) -> ProbeResult) -> OnDemandEvaluation {
        var outcomes: [RuleOutcome] = []
        var deciding: Int?
        for (i, rule) in rules.enumerated() {
            guard deciding == nil else {
                outcomes.append(RuleOutcome(number: i + 1, action: rule.action, evaluated: false, matched: false, conditions: []))
                continue
            }
            let conditions = evaluate(rule, on: network, probe: probe)
            let matched = conditions.allSatisfy(\.matched)
            outcomes.append(RuleOutcome(number: i + 1, action: rule.action, evaluated: true, matched: matched, conditions: conditions))
            if matched { deciding = i + 1 }
        }
        return OnDemandEvaluation(rules: outcomes, decidingRule: deciding)
    }

    static func evaluate(_ rule: OnDemandRule, on network: NetworkSnapshot, probe: (String) -> ProbeResult) -> [ConditionOutcome] {
        var out: [ConditionOutcome] = []
        if let want = rule.interfaceType {
            let have = network.primary?.type
            let matched = have != nil && (want == .any || have?.rawValue == want.rawValue)
            let text: String
            if let p = network.primary {
                text = matched ? (want == .any ? L("any interface (\(p.type.rawValue))") : want.rawValue)
                               : L("\(p.type.rawValue), not \(want.rawValue)")
            } else {
                text = L("no default route")
            }
            out.append(ConditionOutcome(condition: "interfaceType", matched: matched, text: text))
        }
        if let ssids = rule.ssids {
            let have = network.primary?.type == .wifi ? network.primary?.ssid : nil
            let matched = have.map { ssids.contains($0) } ?? false
            let text: String
            if network.primary?.type != .wifi { text = L("not on Wi-Fi (SSID \(ssids.joined(separator: "/")))") }
            else if let have { text = matched ? L("SSID \(have)") : L("SSID \(have), not \(ssids.joined(separator: "/"))") }
            else { text = L("SSID unknown (not associated, or no nl80211)") }
            out.append(ConditionOutcome(condition: "ssids", matched: matched, text: text))
        }
        if let patterns = rule.dnsSearchDomains {
            let hit = network.searchDomains.first { d in patterns.contains { DomainPattern.matches($0, d) } }
            out.append(ConditionOutcome(condition: "dnsSearchDomains", matched: hit != nil,
                                        text: hit.map { L("search domain \($0)") }
                                            ?? L("search domain not \(patterns.joined(separator: "/"))")))
        }
        if let patterns = rule.dnsServerAddresses {
            let hit = network.dnsServers.first { s in patterns.contains { AddressPattern.matches($0, s) } }
            out.append(ConditionOutcome(condition: "dnsServerAddresses", matched: hit != nil,
                                        text: hit.map { L("DNS server \($0)") }
                                            ?? L("DNS server not \(patterns.joined(separator: "/"))")))
        }
        if let url = rule.probeURL {
            // A probe costs a request: only when everything else holds.
            if out.allSatisfy(\.matched) {
                let r = probe(url)
                out.append(ConditionOutcome(condition: "probeURL", matched: r.matches, text: r.text(of: url)))
            } else {
                out.append(ConditionOutcome(condition: "probeURL", matched: false, text: L("probe \(url) not sent")))
            }
        }
        return out
    }
}

/// DNSDomainMatch patterns: `corp.example` matches that name; `*.corp.example`
/// any name under it; `*` anything. Case and a trailing dot do not count.
public enum DomainPattern {
    public static func matches(_ pattern: String, _ name: String) -> Bool {
        let p = normalized(pattern), n = normalized(name)
        if p == "*" { return true }
        if p.hasPrefix("*.") { return n.hasSuffix(String(p.dropFirst(1))) && n.count > p.count - 1 }
        return p == n
    }

    static func normalized(_ s: String) -> String {
        var t = s.lowercased()
        while t.hasSuffix(".") && t.count > 1 { t.removeLast() }
        return t
    }
}

/// DNSServerAddressMatch patterns: an address, or a glob where `*` stands for
/// any run of characters (`198.18.*`, `fd00:*`, `*`).
public enum AddressPattern {
    public static func matches(_ pattern: String, _ address: String) -> Bool {
        glob(Array(pattern.lowercased().utf8), Array(address.lowercased().utf8))
    }

    static func glob(_ p: [UInt8], _ s: [UInt8]) -> Bool {
        var pi = 0, si = 0, star = -1, mark = 0
        while si < s.count {
            if pi < p.count && p[pi] == UInt8(ascii: "*") { star = pi; mark = si; pi += 1 }
            else if pi < p.count && p[pi] == s[si] { pi += 1; si += 1 }
            else if star >= 0 { pi = star + 1; mark += 1; si = mark }
            else { return false }
        }
        while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.count
    }
}
