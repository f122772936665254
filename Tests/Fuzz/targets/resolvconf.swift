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
    // The route files: what status names as routes that take traffic off a tunnel.
    let kernelRoutes = KernelRoutes.parse(route: text, ipv6Route: text)
    for r in kernelRoutes where !(r.destination.count == 4 && r.prefixLength <= 32) && !(r.destination.count == 16 && r.prefixLength <= 128) {
        fatalError("a route of \(r.destination.count) bytes /\(r.prefixLength)")
    }
    for b in TunnelBypass.routes(kernelRoutes, interface: "utun0", tunnelRoutes: ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"], addresses: [])
    where b.split(separator: " ").first.flatMap({ CIDR(String($0)) }) == nil {
        fatalError("a bypass route '\(b)'")
    }
    // On-demand reads the same files, and a probe's answer.
    let facts = ResolvConfFacts.parse(text)
    for w in facts.searchDomains + facts.servers where w.isEmpty || w.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) {
        fatalError("resolver facts produced '\(w)'")
    }
    let routes = DefaultRoutes.parseIPv4(text) + DefaultRoutes.parseIPv6(text)
    if let p = DefaultRoutes.primary(routes, ignore: { _ in false }), !routes.contains(where: { $0.interface == p }) {
        fatalError("primary \(p) is no route's")
    }
    if case .status(let code) = HTTPProbe.parse(bytes), code == 200 || (300...399).contains(code) {
        fatalError("status \(code) not classified")
    }
    _ = ProbeURL(text)
    if let ssid = WirelessSSID.ssid(inAnswer: bytes), ssid.utf8.count > 32 * 3 { fatalError("an SSID of \(ssid.utf8.count) bytes") }
    for pattern in facts.searchDomains { _ = DomainPattern.matches(pattern, text); _ = AddressPattern.matches(pattern, text) }
    return 0
}
