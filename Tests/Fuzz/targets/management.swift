import VPNCore

/// openvpn management lines (and the settings pushed through them): never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var diagnosis = OpenVPNDiagnosis()
    var env: [String: String] = [:]
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let m = ManagementMessage.parse(String(line))
        diagnosis.observe(m)
        if case .upDownEnv(let k, let v) = m { env[k] = v }
        if case .state(let name, _) = m { _ = OpenVPNState.status(name) }
    }
    let pushed = PushedSettings(env: env)
    for a in pushed.addresses + pushed.routes where CIDR(a) == nil { fatalError("pushed settings produced '\(a)'") }
    _ = diagnosis.timeoutError(seconds: 1, remote: "r")
    return 0
}
