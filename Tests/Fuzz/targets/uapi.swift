import VPNCore

/// wireguard UAPI `get=1` replies: never crash; a reply that parses has one
/// peer per public_key line, and handshake times the supervisor can do
/// arithmetic on.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let peers = try? WireGuardUAPI.parseGet(text) else { return 0 }
    let keys = text.split(separator: "\n").filter { $0.hasPrefix("public_key=") }.count
    if peers.count != keys { fatalError("\(peers.count) peers for \(keys) public_key lines") }
    for p in peers { _ = p.lastHandshakeSec * 1000 + p.lastHandshakeNsec / 1_000_000 }
    return 0
}
