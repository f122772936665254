import VPNCore

/// .ovpn files: never crash; whatever imports is an openvpn profile whose
/// secrets are exactly the ones it names.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    // A base directory that does not exist: file references must not read this machine's files.
    let options = ImportOptions(username: "u", baseDirectory: "/nonexistent/vpnctl-fuzz")
    guard let r = try? OpenVPNImport.parse(text, name: "f", source: "f", options: options) else { return 0 }
    guard case .openvpn = r.profile.protocol else { fatalError("an .ovpn imported as another protocol") }
    let named = Set(r.profile.secretReferences.map(\.name))
    if !Set(r.secrets.keys).isSubset(of: named) { fatalError("secrets \(r.secrets.keys) not all referenced by \(named)") }
    return 0
}
