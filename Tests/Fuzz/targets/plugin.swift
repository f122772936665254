import VPNCore
import VPNSystem

/// A plugin's control-socket bytes and its manifest: never crash; every
/// accepted message holds only what the supervisor can apply.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // Split as the supervisor reads them: in two chunks, with a small limit
    // so that the over-long path is reached too.
    var buffer = PluginLineBuffer(limit: 4096)
    var lines: [[UInt8]] = []
    do {
        lines += try buffer.append(bytes[..<(size / 2)])
        lines += try buffer.append(bytes[(size / 2)...])
    } catch {
        if !(error is PluginProblem) { fatalError("the line buffer threw \(error)") }
    }
    for line in lines {
        if line.count >= 4096 || line.contains(0x0A) { fatalError("a line over the limit or with a newline came through") }
        guard let m = try? PluginMessage.parse(line) else { continue }
        if case .setTunnelNetworkSettings(_, let s) = m {
            for p in s.addresses + s.routes + s.excludedRoutes where CIDR(p) == nil { fatalError("settings kept '\(p)'") }
            for d in s.dns where IPAddress(d) == nil { fatalError("settings kept DNS '\(d)'") }
            if let mtu = s.mtu, !(576...65535).contains(mtu) { fatalError("settings kept MTU \(mtu)") }
        }
    }
    if let m = try? PluginManifest.parse(bytes, path: "/m.json") {
        if !PluginManifest.isValidIdentifier(m.identifier) || !m.executable.hasPrefix("/") { fatalError("manifest accepted: \(m)") }
    }
    return 0
}
