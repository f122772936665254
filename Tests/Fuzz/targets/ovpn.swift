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
    guard case .openvpn(let config) = r.profile.protocol else { return 0 }
    // The file vpnctl writes for openvpn: one directive a line, no control
    // characters, nothing that runs a program, whatever the .ovpn said.
    let launch = OpenVPNLaunch(interface: "utun0", managementSocket: "/run/m", caPath: "/ca.pem")
    for line in launch.render(config).split(separator: "\n") {
        if line.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            fatalError("a control character reaches openvpn's config: \(line.debugDescription)")
        }
        let first = line.split(separator: " ").first.map { String($0).lowercased() } ?? ""
        if OpenVPNImport.refused.contains(first) { fatalError("'\(line)' reaches openvpn's config") }
        if first == "script-security", line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) ?? 0 >= 2 {
            fatalError("'\(line)' reaches openvpn's config")
        }
    }
    return 0
}
