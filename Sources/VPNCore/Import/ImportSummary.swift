import FoundationEssentials

/// What an imported profile's tunnel will do, read off the profile (not the
/// file): full or split, which routes, the DNS, what stays outside. `import`
/// prints it as one line and `import --json` carries it as data, so that a
/// file's meaning is visible before the first start.
public struct ImportSummary: Encodable, Equatable, Sendable {
    /// "full": every address of `families` through the tunnel; "split": only
    /// `routes`; "server": the server decides at connect time (OpenVPN's
    /// pushed routes, IKEv2's traffic selectors); "none": no routes (wg-quick
    /// `Table = off`); "provider": a plugin decides.
    public var tunnel: String
    /// "IPv4", "IPv6": the families a full tunnel takes.
    public var families: [String] = []
    /// The routes through the tunnel that the profile names itself.
    public var routes: [String] = []
    /// The routing table they go in, when not the main one (wg-quick `Table = N`).
    public var table: String? = nil
    public var dnsServers: [String] = []
    public var searchDomains: [String] = []
    public var matchDomains: [String] = []
    /// Kept on the underlay: the server(s), and the profile's excluded routes.
    public var keptOutside: [String] = []
    /// The kill switch: "includeAllNetworks" (nothing leaves outside the
    /// tunnel), with ", excludeLocalNetworks", or "enforceRoutes"; nil: none.
    public var killSwitch: String? = nil
    /// What the file said that has no effect here (directive or key names).
    public var noEffect: [String] = []
    /// OpenVPN: a pull-filter keeps the server's redirect-gateway out, so
    /// the server cannot make it a full tunnel.
    public var redirectFiltered = false
    /// IKEv2: the server's traffic selectors decide (not a pushed redirect-gateway).
    var trafficSelectors = false
    /// What each start asks for, as the file leaves it out: "password",
    /// "oneTimeCode" (a static challenge).
    public var asksFor: [String] = []

    enum CodingKeys: String, CodingKey {
        case tunnel, families, routes, table, dnsServers, searchDomains, matchDomains, keptOutside, killSwitch, noEffect, redirectFiltered,
             asksFor
    }

    public init(tunnel: String) { self.tunnel = tunnel }

    /// The profile's tunnel as its protocol's model reads it, then the
    /// profile's own DNS settings and kill switch.
    /// `stored`: the secrets that will be set (the file's, those kept).
    public static func of(_ p: Profile, noEffect: [String] = [], stored: Set<String> = []) -> ImportSummary {
        var s = p.protocol.model.tunnelSummary
        s.asksFor = p.protocol.model.credentialFields(stored: stored.contains).map(\.kind).filter { $0 != .username }.map(\.rawValue)
        if let d = p.dnsSettings {
            if !d.servers.isEmpty { s.dnsServers = d.servers }
            s.searchDomains += d.searchDomains.filter { !s.searchDomains.contains($0) }
            s.matchDomains += d.matchDomains.filter { !s.matchDomains.contains($0) }
        }
        if p.includeAllNetworks {
            s.killSwitch = "includeAllNetworks" + (p.excludeLocalNetworks ? ", excludeLocalNetworks" : "")
        } else if p.enforceRoutes {
            s.killSwitch = "enforceRoutes"
        }
        s.noEffect = noEffect
        return s
    }

    /// "IPv4", "IPv6": the families of these (default) routes.
    static func families(_ cidrs: [CIDR]) -> [String] {
        (cidrs.contains { !$0.address.isIPv6 } ? ["IPv4"] : []) + (cidrs.contains { $0.address.isIPv6 } ? ["IPv6"] : [])
    }

    /// The one line `import` prints: "tunnel: full (IPv4 and IPv6); DNS
    /// 10.8.0.1; kept outside: vpn.example.net".
    public var text: String {
        var parts: [String] = []
        let both = families.count == 2 ? L("IPv4 and IPv6") : families.first ?? ""
        let routeList = routes.prefix(6).joined(separator: ", ") + (routes.count > 6 ? L(", and \(routes.count - 6) more") : "")
        switch tunnel {
        case "full": parts.append(L("full tunnel (\(both))") + (routes.count > families.count ? L(", also \(routeList)") : ""))
        case "split": parts.append(L("split tunnel: \(routeList)"))
        case "none": parts.append(L("no routes (the profile adds none)"))
        case "provider": parts.append(L("the routes the plugin asks for"))
        default:
            if redirectFiltered {
                parts.append(routes.isEmpty ? L("the routes the server gives, never a full tunnel (pull-filter keeps its redirect-gateway out)")
                                            : L("\(routeList), and the routes the server gives, never a full tunnel (pull-filter keeps its redirect-gateway out)"))
            } else if trafficSelectors {
                parts.append(L("the networks the server's traffic selectors offer (a full tunnel if it offers 0.0.0.0/0 or ::/0)"))
            } else {
                parts.append(routes.isEmpty ? L("the routes the server gives (a full tunnel if it redirects the gateway)")
                                            : L("\(routeList), and the routes the server gives"))
            }
        }
        if let table { parts.append(L("routes in table \(table) (no rule sends traffic there; yours decide)")) }
        if dnsServers.isEmpty && searchDomains.isEmpty && matchDomains.isEmpty {
            parts.append(tunnel == "server" ? L("DNS as the server gives it") : L("no DNS of its own (the system's resolver)"))
        } else {
            var dns = dnsServers.isEmpty ? L("DNS from the server") : L("DNS \(dnsServers.joined(separator: ", "))")
            if !searchDomains.isEmpty { dns += L(", search \(searchDomains.joined(separator: ", "))") }
            if !matchDomains.isEmpty { dns += L(", only for \(matchDomains.joined(separator: ", "))") }
            else if tunnel == "full" { dns += L(", for every name") }
            parts.append(dns)
        }
        if !keptOutside.isEmpty { parts.append(L("kept outside: \(keptOutside.joined(separator: ", "))")) }
        if let killSwitch { parts.append(L("kill switch: \(killSwitch)")) }
        if !noEffect.isEmpty { parts.append(L("no effect here: \(noEffect.joined(separator: ", "))")) }
        let asks = asksFor.compactMap(CredentialRequest.Kind.init(rawValue:)).map(\.shown)
        if !asks.isEmpty { parts.append(L("asks at each start for: \(asks.joined(separator: ", "))")) }
        return parts.joined(separator: "; ")
    }
}
