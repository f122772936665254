import FoundationEssentials
import VPNCore
import VPNService

enum ShowCommand {
    static let spec = CommandSpec(
        name: "show", abstract: L("Show one profile; secrets are named, never shown."),
        examples: [
            "vpnctl show office",
            "vpnctl show office --json",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let profile: Profile
        let secrets: [ProfileDetails.SecretState]
        /// WireGuard: the interface's public key, derived from the private key.
        let publicKey: String?
        /// What a start asks for because the profile does not store it
        /// (password, oneTimeCode).
        let asksFor: [String]
    }

    static func asksFor(_ p: Profile, secretIsSet: (String) -> Bool) -> [CredentialRequest.Kind] {
        p.protocol.model.credentialFields(stored: secretIsSet).map(\.kind).filter { $0 != .username }
    }

    /// Root reads the store here; anyone else asks the agent, which shows
    /// the profiles their policy lets them see the status of.
    static func run(_ inv: Invocation) throws -> ExitCode {
        let details = try inv.service.show(inv.args.positionals[0])
        if inv.options.json {
            let set = Set(details.secrets.filter(\.isSet).map(\.name))
            inv.output.emit(Result(profile: details.profile, secrets: details.secrets, publicKey: details.publicKey,
                                   asksFor: asksFor(details.profile, secretIsSet: set.contains).map(\.rawValue)))
            return .ok
        }
        let set = Set(details.secrets.filter(\.isSet).map(\.name))
        for line in describe(details.profile, publicKey: details.publicKey, secretIsSet: { set.contains($0) }) {
            inv.output.line(line)
        }
        return .ok
    }

    /// The text view. Secret fields print as the secret's name and whether it
    /// is set; a WireGuard profile's public key follows its private key.
    static func describe(_ p: Profile, publicKey: String? = nil, secretIsSet: (String) -> Bool) -> [String] {
        let asked = p.protocol.model.passwordSecret
        func secret(_ name: String?) -> String {
            guard let name else { return L("(none)") }
            if name == asked && !secretIsSet(name) { return L("secret '\(name)' (not stored: asked for at start)") }
            return secretIsSet(name) ? L("secret '\(name)' (set)") : L("secret '\(name)' (NOT SET)")
        }
        var out: [(String, String)] = [
            (L("name"), p.name), (L("id"), p.id.lowercasedString), (L("enabled"), p.enabled ? L("yes") : L("no")),
            (L("revision"), "\(p.revision)"), (L("protocol"), p.protocol.kind.rawValue),
        ]
        let rows = p.protocol.model.described(secret: secret)
        for field in rows.fields {
            out.append((field.label, field.value))
            if field.label == L("private key"), let publicKey { out.append((L("public key"), L("\(publicKey) (give this to the server)"))) }
        }
        if let d = p.dnsSettings {
            if !d.servers.isEmpty { out.append((L("dns servers"), d.servers.joined(separator: ", "))) }
            if !d.searchDomains.isEmpty { out.append((L("search domains"), d.searchDomains.joined(separator: ", "))) }
            if !d.matchDomains.isEmpty { out.append((L("match domains"), L("\(d.matchDomains.joined(separator: ", ")) (split DNS)"))) }
        }
        if p.includeAllNetworks {
            out.append((L("kill switch"), "includeAllNetworks" + (p.excludeLocalNetworks ? ", excludeLocalNetworks" : "")
                        + (p.enforceRoutes ? ", enforceRoutes" : "")))
        } else if p.enforceRoutes {
            out.append((L("kill switch"), "enforceRoutes"))
        }
        if let a = p.appRules {
            out.append((L("app rules"), (a.mode == .include ? L("include: only these programs use the tunnel: ") : L("exclude: these programs go around the tunnel: "))
                        + a.matches.map(AppRules.describe).joined(separator: ", ")))
            out.append((L("app DNS"), a.mode == .include
                ? L("the matched programs' queries go to the tunnel's servers; the system resolver is left as it is (a query to a local stub such as 127.0.0.53 is not told apart)")
                : L("the bypassing programs' queries go to the network's own servers, not the tunnel's (where the network's resolver is a local stub, it cannot tell them apart)")))
        }
        let asks = asksFor(p, secretIsSet: secretIsSet)
        if !asks.isEmpty { out.append((L("asks for"), asks.map(\.shown).joined(separator: ", "))) }
        out.append((L("on demand"), p.onDemand.enabled ? L("on (\(p.onDemand.rules.count) rules)") : L("off")))
        if !p.policy.users.isEmpty || !p.policy.groups.isEmpty {
            out.append((L("allowed"), (p.policy.users.map { L("user \($0)") } + p.policy.groups.map { L("group \($0)") }).joined(separator: ", ")))
        }
        if let o = p.origin {
            let from = o.profileIdentifier.hasPrefix("file:") ? L("file \(o.payloadIdentifier)")
                : L("\(o.profileIdentifier) (payload \(o.payloadIdentifier))")
            out.append((L("imported from"), o.managedByApply ? L("\(from), managed by vpnctl apply") : from))
        }
        // Widths as the terminal shows them: the protocol's labels are translated.
        let width = (out.map { $0.0.terminalWidth }.max() ?? 0) + 2
        let rules = p.onDemand.rules.enumerated().map { L("on-demand rule \($0.offset + 1): \($0.element.summary)") }
        return out.map { k, v in (k + ":").padding(width) + v } + rows.lines + rules
    }
}

extension String {
    func padding(_ width: Int) -> String {
        terminalWidth >= width ? self + " " : self + String(repeating: " ", count: width - terminalWidth)
    }
}
