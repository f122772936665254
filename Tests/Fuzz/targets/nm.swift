import VPNCore

/// NetworkManager keyfiles, through what `vpnctl import` runs: never crash;
/// whatever imports holds only secrets its profile names and only the
/// anchors it references, and an openvpn profile renders for openvpn.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    // A base directory that does not exist: file references must not read this machine's files.
    let options = ImportOptions(baseDirectory: "/nonexistent/vpnctl-fuzz")
    guard let r = try? NMKeyfileImport.parse(text, name: "f", source: "f", options: options) else { return 0 }
    let named = Set(r.profile.secretReferences.map(\.name))
    if !Set(r.secrets.keys).isSubset(of: named) { fatalError("secrets \(r.secrets.keys) not all referenced by \(named)") }
    if Set(r.anchors.keys) != Set(r.profile.protocol.model.anchorReferences) {
        fatalError("anchors \(r.anchors.keys) are not the profile's \(r.profile.protocol.model.anchorReferences)")
    }
    if case .openvpn(let config) = r.profile.protocol {
        for option in config.options where OpenVPNDirectives.problem(in: option) != nil {
            fatalError("an option openvpn would not be given: '\(option)'")
        }
        let launch = OpenVPNLaunch(interface: "utun0", managementSocket: "/run/m", caPath: "/ca.pem")
        do { _ = try launch.render(config) } catch { fatalError("import accepted options the render refuses: \(error)") }
    }
    return 0
}
