import VPNCore

/// .ovpn files: never crash; whatever imports is an openvpn profile whose
/// secrets are exactly the ones it names, and the config vpnctl renders from
/// it holds only vpnctl's own lines and allowed directives, however wrapped.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    // A base directory that does not exist: file references must not read this machine's files.
    let options = ImportOptions(username: text.lowercased().contains("auth-user-pass") ? "u" : nil,
                                baseDirectory: "/nonexistent/vpnctl-fuzz")
    guard let r = try? OpenVPNImport.parse(text, name: "f", source: "f", options: options) else { return 0 }
    guard case .openvpn(let config) = r.profile.protocol else { fatalError("an .ovpn imported as another protocol") }
    let named = Set(r.profile.secretReferences.map(\.name))
    if !Set(r.secrets.keys).isSubset(of: named) { fatalError("secrets \(r.secrets.keys) not all referenced by \(named)") }
    if Set(r.anchors.keys) != Set(config.caFingerprints) { fatalError("anchors \(r.anchors.keys) are not the profile's \(config.caFingerprints)") }
    for (fp, pem) in r.anchors {
        let blocks = PEM.blocks(String(decoding: pem, as: UTF8.self))
        if blocks.count != 1 || blocks[0].label != "CERTIFICATE" || blocks[0].der.map(SHA256.hex) != fp {
            fatalError("anchor \(fp) is not exactly the one certificate its name stands for")
        }
        if String(decoding: pem, as: UTF8.self).contains("PRIVATE KEY") { fatalError("a private key in anchor \(fp)") }
    }

    // The file vpnctl writes for openvpn, read line by line as openvpn reads it.
    let launch = OpenVPNLaunch(interface: "utun0", managementSocket: "/run/m", caPath: "/ca.pem")
    let rendered: String
    do { rendered = try launch.render(config) } catch { fatalError("import accepted options the render refuses: \(error)") }
    var optionLines = 0
    for line in rendered.split(separator: "\n") {
        if line.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            fatalError("a control character reaches openvpn's config: \(line.debugDescription)")
        }
        if line.utf8.count > OpenVPNDirectives.maximumLineLength { fatalError("a line longer than openvpn reads: \(line.prefix(80))") }
        guard let words = OpenVPNDirectives.tokenize(String(line)) else { fatalError("openvpn cannot read '\(line)'") }
        guard let first = words.first else { continue }
        // openvpn's names are case-sensitive; only a leading "--" is dropped.
        let name = first.count >= 3 && first.hasPrefix("--") ? String(first.dropFirst(2)) : first
        // vpnctl's own announcement of what it answers is the one setenv.
        if name == "setenv" && line != "setenv IV_SSO webauth,openurl,crtext" {
            fatalError(words.dropFirst().first?.lowercased() == "opt" ? "'setenv opt' reaches openvpn's config: '\(line)'" : "'\(line)' reaches openvpn's config")
        }
        if words.count == 1 && name.hasPrefix("<") { fatalError("an inline block opens in openvpn's config: '\(line)'") }
        if name == "script-security" && words != ["script-security", "1"] { fatalError("'\(line)' reaches openvpn's config") }
        if OpenVPNDirectives.allowed[name] != nil && !OpenVPNLaunch.ownDirectives.contains(name) {
            optionLines += 1
            if OpenVPNDirectives.verdict(words) != .allowed { fatalError("'\(line)' does not fit its grammar") }
        } else if !OpenVPNLaunch.ownDirectives.contains(name) {
            fatalError("'\(name)' is not on the allow-list and reaches openvpn's config: '\(line)'")
        }
    }
    let ownOptions = config.options.filter { OpenVPNLaunch.ownDirectives.contains(OpenVPNDirectives.name(OpenVPNDirectives.tokenize($0) ?? [])) }
    if optionLines != config.options.count - ownOptions.count { fatalError("\(config.options.count) options rendered as \(optionLines) lines") }
    return 0
}
