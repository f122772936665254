import VPNCore
import VPNSystem

/// openvpn management lines (and the settings pushed through them): never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // Split as the supervisor splits what it reads from openvpn; the partial
    // last line (which it would keep until more bytes came) is parsed too.
    var buffer = Array(UnsafeBufferPointer(start: data, count: size))
    let lines = LineReader.takeLines(&buffer)
    let newlines = UnsafeBufferPointer(start: data, count: size).reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
    if lines.count != newlines || buffer.contains(0x0A) { fatalError("takeLines lost or invented a line") }
    var diagnosis = OpenVPNDiagnosis()
    var env: [String: String] = [:]
    for line in lines + [String(decoding: buffer, as: UTF8.self)] {
        let m = ManagementMessage.parse(line)
        diagnosis.observe(m)
        if case .upDownEnv(let k, let v) = m { env[k] = v }
        if case .state(let name, _) = m { _ = OpenVPNState.status(name) }
    }
    let pushed = PushedSettings(env: env)
    for a in pushed.addresses + pushed.routes where CIDR(a) == nil { fatalError("pushed settings produced '\(a)'") }
    _ = diagnosis.timeoutError(seconds: 1, remote: "r")
    return 0
}
