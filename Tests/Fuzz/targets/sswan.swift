import VPNCore

/// strongSwan app profiles (.sswan), through what `vpnctl import` runs: never
/// crash, and what a file imports as is consistent: each trust anchor is
/// stored under its own fingerprint, the profile's anchor is one of them, the
/// identity is a certificate and a key, the selectors are prefixes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard StrongSwanProfile.recognizes(bytes) else { return 0 }
    // An unencrypted p12 (hwdsl2's), else the fixtures' password.
    guard let r = (try? ImportFormat.importChecked(bytes, name: "f", source: "f"))
            ?? (try? ImportFormat.importChecked(bytes, name: "f", source: "f", options: ImportOptions(identityPassword: "p12-pass"))) else { return 0 }
    guard case .ikev2(let c) = r.profile.protocol else { fatalError("a .sswan imported as \(r.profile.protocol.kind)") }
    for (fp, pem) in r.anchors {
        guard let der = PEM.blocks(String(decoding: pem, as: UTF8.self)).first?.der, SHA256.hex(der) == fp else {
            fatalError("trust anchor \(fp) is not stored under its own fingerprint")
        }
    }
    if let fp = c.caFingerprint, r.anchors[fp] == nil { fatalError("the profile's anchor \(fp) is not among the file's") }
    if let id = r.secrets["identity"] {
        let labels = PEM.blocks(String(decoding: id, as: UTF8.self)).map(\.label)
        if labels.first != "CERTIFICATE" || !labels.contains(where: { $0.hasSuffix("PRIVATE KEY") }) {
            fatalError("the identity secret is not a certificate and a key: \(labels)")
        }
    }
    for t in c.remoteTrafficSelectors ?? [] where CIDR(t) == nil { fatalError("selector \(t) is not a prefix") }
    return 0
}
