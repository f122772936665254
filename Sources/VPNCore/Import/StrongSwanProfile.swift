import FoundationEssentials

/// strongSwan's Android app profile (`.sswan`, JSON: `uuid`, `name`, `type`,
/// `remote`, `local`, …), as hwdsl2/setup-ipsec-vpn hands them out. It was
/// misread as vpnctl's own JSON ("not a vpnctl profile: at id: missing");
/// vpnctl does not import it yet, so the format is named, with the
/// `vpnctl create` line that makes the same tunnel from its fields.
public enum StrongSwanProfile {
    /// Nil unless `bytes` is a .sswan profile.
    public static func refusal(_ bytes: [UInt8], name: String, source: String) -> VPNError? {
        guard let r = try? JSONReader(parsing: bytes), (try? r.string("uuid")) != nil,
              let type = (try? r.string("type")) ?? nil, type.hasPrefix("ikev2"),
              let remote = (try? r.optional("remote")) ?? nil, let addr = (try? remote.string("addr")) ?? nil else { return nil }
        let id = ((try? remote.string("id")) ?? nil) ?? addr
        let eapID = ((try? r.optional("local")) ?? nil).flatMap { (try? $0.string("eap_id")) ?? nil }
        let safe: (String) -> String = { OpenVPNDirectives.shown($0.escapingControls(keepLineBreaks: false)) }
        var command = "vpnctl create \(safe(name)) ikev2 --server \(safe(addr)) --remote-id \(safe(id))"
        switch type {
        case "ikev2-eap", "ikev2-cert-eap", "ikev2-byod-eap": command += " --auth eap --username \(safe(eapID ?? "USER")) --ca CA.pem"
        case "ikev2-psk": command += " --auth psk"
        default: command += " --auth certificate --identity CLIENT.p12 --ca CA.pem"
        }
        func has(_ reader: JSONReader?, _ key: String) -> Bool { ((try? reader?.optional(key)) ?? nil) != nil }
        var omitted: [String] = []
        if has(r, "split-tunneling") { omitted.append("split-tunneling") }
        if has((try? r.optional("local")) ?? nil, "p12") { omitted.append("local.p12 (save it as CLIENT.p12)") }
        if has(remote, "cert") { omitted.append("remote.cert (save it as CA.pem)") }
        let hint = omitted.isEmpty ? L("make the same tunnel with: \(command)")
            : L("make the same tunnel with: \(command) (the file's \(omitted.joined(separator: ", ")) are not carried by it)")
        return VPNError(.configurationInvalid,
                        L("\(source) is a strongSwan app profile (.sswan, type \(safe(type))), which vpnctl does not import yet"),
                        hint: hint)
    }
}
