/// strongSwan's proposal syntax ("aes256-sha256-modp2048", "aes128gcm16-prfsha256-ecp256"),
/// checked as charon's proposal parser would take it (src/libstrongswan/crypto/proposal/proposal_keywords_static.txt):
/// every word a known algorithm, at least one encryption algorithm, integrity
/// for classic ciphers and none for AEAD ones, and a key exchange group for IKE.
public enum IKEv2Proposal {
    enum Kind { case encryption, aead, integrity, prf, group, esn }

    static let classic: Set<String> = [
        "aes", "aes128", "aes192", "aes256", "aes128ctr", "aes192ctr", "aes256ctr", "3des", "des", "blowfish", "blowfish128",
        "blowfish192", "blowfish256", "cast128", "camellia", "camellia128", "camellia192", "camellia256", "camellia128ctr",
        "camellia192ctr", "camellia256ctr", "null",
    ]
    static let integrity: Set<String> = [
        "md5", "md5_128", "sha", "sha1", "sha1_160", "sha256", "sha2_256", "sha256_96", "sha2_256_96", "sha384", "sha2_384",
        "sha512", "sha2_512", "aesxcbc", "aescmac", "aes128gmac", "aes192gmac", "aes256gmac", "camelliaxcbc",
    ]
    static let prfs: Set<String> = ["prfmd5", "prfsha1", "prfsha256", "prfsha384", "prfsha512", "prfaesxcbc", "prfaescmac", "prfcamelliaxcbc"]
    static let groups: Set<String> = [
        "modp768", "modp1024", "modp1536", "modp2048", "modp3072", "modp4096", "modp6144", "modp8192", "modp1024s160",
        "modp2048s224", "modp2048s256", "ecp192", "ecp224", "ecp256", "ecp384", "ecp521", "ecp224bp", "ecp256bp", "ecp384bp",
        "ecp512bp", "curve25519", "x25519", "curve448", "x448",
    ]

    static func kind(_ word: String) -> Kind? {
        if classic.contains(word) { return .encryption }
        if integrity.contains(word) { return .integrity }
        if prfs.contains(word) { return .prf }
        if groups.contains(word) { return .group }
        if word == "esn" || word == "noesn" { return .esn }
        if word == "chacha20poly1305" { return .aead }
        // aes128gcm16, aes256ccm8, camellia192ccm12, aes128gcm (= 16), ...
        for base in ["aes128", "aes192", "aes256", "aes", "camellia128", "camellia192", "camellia256", "camellia"] {
            for mode in ["gcm", "ccm"] {
                guard word.hasPrefix(base + mode) else { continue }
                let icv = word.dropFirst(base.count + mode.count)
                if ["", "8", "12", "16", "64", "96", "128"].contains(String(icv)) && (mode == "ccm" || !base.hasPrefix("camellia")) { return .aead }
            }
        }
        return nil
    }

    /// What charon would refuse in one proposal, or nil. `ike`: an IKE
    /// proposal (needs a key exchange group); otherwise a child (ESP) one.
    public static func problem(_ proposal: String, ike: Bool) -> String? {
        let text = proposal.lowercased()
        if text == "default" { return nil }
        let words = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        var kinds: [Kind: [String]] = [:]
        for w in words {
            guard !w.isEmpty else { return "an empty algorithm (two '-' in a row, or one at an end)" }
            guard let k = kind(w) else { return "'\(w)' is not an algorithm strongSwan knows" }
            if k == .esn && ike { return "'\(w)' is for child (ESP) proposals only" }
            if k == .prf && !ike { return "'\(w)' is for IKE proposals only" }
            kinds[k, default: []].append(w)
        }
        let aead = kinds[.aead] ?? [], classicCiphers = kinds[.encryption] ?? [], integ = kinds[.integrity] ?? []
        if aead.isEmpty && classicCiphers.isEmpty { return "no encryption algorithm" }
        if !aead.isEmpty && !classicCiphers.isEmpty {
            return "mixes the AEAD '\(aead[0])' with the classic '\(classicCiphers[0])' (make two proposals)"
        }
        if !aead.isEmpty && !integ.isEmpty { return "the AEAD '\(aead[0])' takes no integrity algorithm ('\(integ[0])')" }
        if aead.isEmpty && integ.isEmpty { return "no integrity algorithm for '\(classicCiphers[0])'" }
        if ike && (kinds[.group] ?? []).isEmpty { return "no key exchange group (modp2048, ecp256, curve25519, ...)" }
        return nil
    }

    /// Whether a child proposal names a key exchange group (PFS).
    public static func hasGroup(_ proposal: String) -> Bool {
        proposal.lowercased().split(separator: "-").contains { groups.contains(String($0)) }
    }
}
