/// Apple's IKEv2 security association parameters (a .mobileconfig's
/// `IKESecurityAssociationParameters` / `ChildSecurityAssociationParameters`:
/// EncryptionAlgorithm, IntegrityAlgorithm, DiffieHellmanGroup,
/// LifeTimeInMinutes) in strongSwan's proposal syntax, and back.
///
/// A missing key takes Apple's default (AES-256, SHA2-256, group 14,
/// 1440 minutes), as an Apple device reading the same payload would.
public enum AppleIKEv2Parameters {
    static let encryption: [(apple: String, swan: String, aead: Bool)] = [
        ("DES", "des", false), ("3DES", "3des", false), ("AES-128", "aes128", false), ("AES-256", "aes256", false),
        ("AES-128-GCM", "aes128gcm16", true), ("AES-256-GCM", "aes256gcm16", true), ("ChaCha20Poly1305", "chacha20poly1305", true),
    ]
    /// Integrity, and the PRF an AEAD IKE proposal names instead.
    static let integrity: [(apple: String, swan: String, prf: String)] = [
        ("SHA1-96", "sha1", "prfsha1"), ("SHA1-160", "sha1_160", "prfsha1"), ("SHA2-256", "sha256", "prfsha256"),
        ("SHA2-384", "sha384", "prfsha384"), ("SHA2-512", "sha512", "prfsha512"),
    ]
    static let groups: [(apple: Int, swan: String)] = [
        (1, "modp768"), (2, "modp1024"), (5, "modp1536"), (14, "modp2048"), (15, "modp3072"), (16, "modp4096"),
        (17, "modp6144"), (18, "modp8192"), (19, "ecp256"), (20, "ecp384"), (21, "ecp521"), (31, "curve25519"), (32, "curve448"),
    ]
    static let keys: Set<String> = ["EncryptionAlgorithm", "IntegrityAlgorithm", "DiffieHellmanGroup", "LifeTimeInMinutes"]

    /// A whole number as real files give it: integer, real or digits.
    static func number(_ v: PropertyList) -> Int? {
        switch v {
        case .integer(let i): return Int(exactly: i)
        case .real(let r): return r.rounded() == r && abs(r) < 1e9 ? Int(r) : nil
        case .string(let s): return Int(s)
        default: return nil
        }
    }

    static func shown(_ v: PropertyList) -> String { MobileConfig.text(v)?.quotedForMessage ?? "(\(v.kindName))" }

    public struct Reading: Equatable {
        public var proposal: String?
        public var lifetimeMinutes: Int?
        public var problems: [String] = []
        public var unknownKeys: [String] = []
    }

    /// The proposal a parameters dictionary stands for. `ike`: the IKE SA
    /// (an AEAD cipher then names a PRF); `withGroup`: the child SA's group
    /// is only part of its proposal with PFS, as on Apple devices.
    public static func read(_ dict: [String: PropertyList], field: String, ike: Bool, withGroup: Bool) -> Reading {
        var r = Reading()
        let encName = dict["EncryptionAlgorithm"]?.string ?? "AES-256"
        let intName = dict["IntegrityAlgorithm"]?.string ?? "SHA2-256"
        let enc = encryption.first { $0.apple == encName }
        let integ = integrity.first { $0.apple == intName }
        if enc == nil {
            r.problems.append(L("\(field).EncryptionAlgorithm \(encName.quotedForMessage) is not one of \(encryption.map(\.apple).joined(separator: ", "))"))
        }
        if integ == nil {
            r.problems.append(L("\(field).IntegrityAlgorithm \(intName.quotedForMessage) is not one of \(integrity.map(\.apple).joined(separator: ", "))"))
        }
        var group: String? = "modp2048"
        if let g = dict["DiffieHellmanGroup"] {
            if let n = number(g), let known = groups.first(where: { $0.apple == n }) { group = known.swan } else {
                group = nil
                r.problems.append(L("\(field).DiffieHellmanGroup \(shown(g)) is not one of \(groups.map { String($0.apple) }.joined(separator: ", "))"))
            }
        }
        if let l = dict["LifeTimeInMinutes"] {
            if let n = number(l), (10...1440).contains(n) { r.lifetimeMinutes = n }
            else { r.problems.append(L("\(field).LifeTimeInMinutes \(shown(l)) is not a number of minutes from 10 to 1440")) }
        }
        r.unknownKeys = dict.keys.filter { !keys.contains($0) }.sorted()
        // Only a lifetime: no proposal of its own (strongSwan's defaults
        // include Apple's), so that an export of such a profile reads back the same.
        guard dict["EncryptionAlgorithm"] != nil || dict["IntegrityAlgorithm"] != nil || dict["DiffieHellmanGroup"] != nil else { return r }
        guard let enc, let integ, let group else { return r }
        var words = [enc.swan]
        if enc.aead { if ike { words.append(integ.prf) } } else { words.append(integ.swan) }
        if ike || withGroup { words.append(group) }
        r.proposal = words.joined(separator: "-")
        return r
    }

    /// The parameters dictionary for a proposal, or nil when Apple's
    /// vocabulary cannot say it (several ciphers, a PRF of its own, …).
    public static func dictionary(_ proposal: String, ike: Bool, lifetimeMinutes: Int?) -> [String: PropertyList]? {
        var words = proposal.lowercased().split(separator: "-").map(String.init)
        guard let first = words.first, let enc = encryption.first(where: { $0.swan == first }) else { return nil }
        words.removeFirst()
        var d: [String: PropertyList] = ["EncryptionAlgorithm": .string(enc.apple)]
        if enc.aead {
            if ike {
                guard let w = words.first, let integ = integrity.first(where: { $0.prf == w && $0.apple != "SHA1-160" }) else { return nil }
                d["IntegrityAlgorithm"] = .string(integ.apple)
                words.removeFirst()
            }
        } else {
            guard let w = words.first, let integ = integrity.first(where: { $0.swan == w }) else { return nil }
            d["IntegrityAlgorithm"] = .string(integ.apple)
            words.removeFirst()
        }
        if let w = words.first {
            guard let g = groups.first(where: { $0.swan == w }) else { return nil }
            d["DiffieHellmanGroup"] = .integer(Int64(g.apple))
            words.removeFirst()
        }
        guard words.isEmpty else { return nil }
        if let m = lifetimeMinutes { d["LifeTimeInMinutes"] = .integer(Int64(m)) }
        return d
    }
}
