import VPNCore
import VPNSystem

/// What vpnctl reads from outside for DNS and the kill switch: a resolv.conf
/// it rewrites (kept and given back), a DNS server's answer (verify --dns),
/// the kernel's route files (excludeLocalNetworks). Never crash; what comes
/// out stays within its grammar.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    let id = bytes.count >= 2 ? UInt16(bytes[0]) << 8 | UInt16(bytes[1]) : 0
    if case .addresses(let a) = DNSQuery.parse(bytes, id: id) {
        for x in a where IPAddress(x) == nil { fatalError("an answer produced '\(x)'") }
    }
    let config = TunnelDNSConfig(servers: ["198.19.0.53"], searchDomains: ["corp.example"])
    let out = ResolvConf.render(config, profile: text, original: text)
    for line in out.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
        let word = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? ""
        if !["#", "nameserver", "search", "options"].contains(word) && !line.hasPrefix("#") {
            fatalError("the rewritten resolv.conf has a line vpnctl did not mean: '\(line)'")
        }
    }
    for net in LocalNetworks.parse(route: text, ipv6Route: text, excluding: nil) where CIDR(net) == nil {
        fatalError("local networks produced '\(net)'")
    }
    return 0
}
