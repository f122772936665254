import FoundationEssentials

/// What a WireGuard profile answers for itself: its problems, its `show`
/// rows, its import summary and its export.
extension WireGuardConfiguration: ConfigurationModel {
    public var serverHosts: [String] {
        peers.compactMap { $0.endpoint.flatMap { try? Endpoint.parse($0).get().host } }
    }
    public var tunnelRoutes: [String] { peers.flatMap(\.allowedIPs) }
    public var exportFormats: [ProfileExport.Format] { [.json, .wgQuick, .mobileconfig] }
    public var defaultExportFormat: ProfileExport.Format { .wgQuick }
    /// wireguard-go keeps the interface, and the supervisor keeps sending
    /// handshake initiations: a server that comes back is found.
    public var keepsTrying: Bool { true }

    public func problems(_ v: ProfileValidator) -> [String] {
        let w = self
        var p: [String] = []
        p += v.secretRef("protocol.privateKeySecret", w.privateKeySecret, required: true, what: "the interface's private key")
        if w.addresses.isEmpty { p.append(L("protocol.addresses: missing (at least one address, e.g. 10.0.0.2/32)")) }
        for a in w.addresses where CIDR(a) == nil {
            p.append(L("protocol.addresses: '\(a)' is not an IPv4 or IPv6 address with an optional /prefix"))
        }
        for d in w.dns where IPAddress(d) == nil && !isDomainName(d) {
            p.append(L("protocol.dns: '\(d)' is neither an IP address nor a search domain"))
        }
        if let mtu = w.mtu, !(576...65535).contains(mtu) {
            p.append(L("protocol.mtu: \(mtu) is out of range (576–65535)"))
        }
        if let port = w.listenPort, !(0...65535).contains(port) {
            p.append(L("protocol.listenPort: \(port) is out of range (0–65535)"))
        }
        if let t = w.table, t != "auto", t != "off", UInt32(t) == nil {
            p.append(L("protocol.table: '\(t)' must be auto, off, or a routing table number"))
        }
        if let f = w.fwmark, Fwmark(f) == nil {
            p.append(L("protocol.fwmark: '\(OpenVPNDirectives.shown(f))' must be off, a number, or 0x and hex digits (up to 32 bits)"))
        }
        if let name = w.interfaceName, !InterfaceName.isValid(name) {
            p.append(L("protocol.interfaceName: '\(OpenVPNDirectives.shown(name))' is not a valid interface name (1–15 of the characters A–Z, a–z, 0–9, '_', '.' and '-'; not '.' or '..')"))
        }
        for e in w.excludedRoutes where CIDR(e) == nil {
            p.append(L("protocol.excludedRoutes: '\(e)' is not a CIDR prefix"))
        }
        if w.peers.isEmpty { p.append(L("protocol.peers: missing (at least one peer with a public key, allowed IPs and an endpoint)")) }
        for (i, peer) in w.peers.enumerated() {
            let f = "protocol.peers[\(i)]"
            if peer.publicKey.isEmpty {
                p.append(L("\(f).publicKey: missing"))
            } else if !WireGuardKey.isValid(peer.publicKey) {
                p.append(L("\(f).publicKey: not a WireGuard key (44 characters of base64 encoding 32 bytes)"))
            }
            p += v.secretRef("\(f).presharedKeySecret", peer.presharedKeySecret, required: false, what: "")
            if peer.allowedIPs.isEmpty { p.append(L("\(f).allowedIPs: missing (e.g. 0.0.0.0/0, ::/0)")) }
            for a in peer.allowedIPs where CIDR(a) == nil {
                p.append(L("\(f).allowedIPs: '\(a)' is not a CIDR prefix"))
            }
            if let e = peer.endpoint {
                switch Endpoint.parse(e) {
                case .success: break
                case .failure(.missingPort): p.append(L("\(f).endpoint: '\(e)' has no port (host:port)"))
                case .failure(.badPort): p.append(L("\(f).endpoint: '\(e)' has a port outside 1–65535"))
                case .failure(.badHost): p.append(L("\(f).endpoint: '\(e)' has an invalid host"))
                }
            } else {
                p.append(L("\(f).endpoint: missing (host:port of the server)"))
            }
            if let k = peer.persistentKeepalive, !(0...65535).contains(k) {
                p.append(L("\(f).persistentKeepalive: \(k) is out of range (0–65535 seconds)"))
            }
        }
        return p
    }

    public func described(secret: (String?) -> String) -> ConfigurationRows {
        var r = ConfigurationRows()
        r.add(L("private key"), secret(privateKeySecret))
        r.add(L("addresses"), addresses.joined(separator: ", "))
        if !dns.isEmpty { r.add(L("dns"), dns.joined(separator: ", ")) }
        if let m = mtu { r.add(L("mtu"), "\(m)") }
        if let l = listenPort { r.add(L("listen port"), "\(l)") }
        if let t = table { r.add(L("table"), t) }
        if let f = fwmark { r.add(L("fwmark"), f) }
        r.add(L("interface"), interfaceName ?? L("(automatic utunN)"))
        // The peers' labels line up as the terminal shows them, in any language.
        let labels = (publicKey: L("public key"), preshared: L("preshared key"), allowed: L("allowed ips"),
                      endpoint: L("endpoint"), keepalive: L("keepalive"))
        let width = [labels.publicKey, labels.preshared, labels.allowed, labels.endpoint, labels.keepalive]
            .map(\.terminalWidth).max()! + 2
        func line(_ label: String, _ value: String) -> String {
            "  " + label + ":" + String(repeating: " ", count: width - label.terminalWidth - 1) + value
        }
        for (i, peer) in peers.enumerated() {
            r.lines.append(L("peer \(i + 1):"))
            r.lines.append(line(labels.publicKey, peer.publicKey))
            if let s = peer.presharedKeySecret { r.lines.append(line(labels.preshared, secret(s))) }
            r.lines.append(line(labels.allowed, peer.allowedIPs.joined(separator: ", ")))
            r.lines.append(line(labels.endpoint, peer.endpoint ?? L("(none)")))
            if let k = peer.persistentKeepalive { r.lines.append(line(labels.keepalive, k == 0 ? L("off") : L("\(k) s"))) }
        }
        return r
    }
}

extension WireGuardConfiguration {
    /// The interface's public key (the one the server needs), derived from
    /// its private key secret; nil when that is unset or unreadable.
    public func publicKey(readingSecret read: (String) throws -> [UInt8]) -> String? {
        guard let name = privateKeySecret, let value = try? read(name) else { return nil }
        return Curve25519.publicKey(base64: String(decoding: value, as: UTF8.self))
    }
}

extension WireGuardConfiguration {
    /// The allowed IPs are the routes: full when one is /0, none with
    /// `Table = off`; the DNS entries that are no address are search domains.
    public var tunnelSummary: ImportSummary {
        var s = ImportSummary(tunnel: "split")
        var seen = Set<String>()
        let allowed = peers.flatMap { $0.allowedIPs.compactMap(CIDR.init) }
        s.routes = allowed.map(\.network.description).filter { seen.insert($0).inserted }
        s.families = ImportSummary.families(allowed.filter { $0.prefixLength == 0 })
        if table == "off" {
            s.tunnel = "none"
        } else if !s.families.isEmpty {
            s.tunnel = "full"
        }
        if let t = table, t != "auto", t != "off", t != "main", t != "254" { s.table = t }
        s.dnsServers = dns.filter { IPAddress($0) != nil }
        s.searchDomains = dns.filter { IPAddress($0) == nil }
        // An endpoint the allowed IPs would take in keeps the route it had
        // (a host name: known at start; a full tunnel takes every one).
        s.keptOutside = peers.compactMap { p -> String? in
            guard let e = p.endpoint, case .success(let ep) = Endpoint.parse(e) else { return nil }
            if s.tunnel == "full" { return ep.host }
            guard let ip = IPAddress(ep.host), allowed.contains(where: { $0.contains(ip) }) else { return nil }
            return ep.host
        } + excludedRoutes
        return s
    }

    public func exportedText(as format: ProfileExport.Format, secret: (String?) -> String?,
                             anchor: (String) throws -> String) throws -> String? {
        format == .wgQuick ? WGQuick.export(self, secret: { secret($0) }) : nil
    }

    public func writeVPNPayload(_ payload: inout ProfileExport.VPNPayload, secret: (String?) -> String?,
                                anchor: (String) throws -> String) throws {
        ProfileExport.wireGuardPayload(self, into: &payload, secret: secret)
    }
}
