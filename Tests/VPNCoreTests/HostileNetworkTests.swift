import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Issue 29, items 1–4: the kill switch opens for nothing but the tunnel,
/// names reach nft literally, the real resolver is recognised, and what a
/// provider pushes is checked like a profile's fields.
@Suite struct TunnelVisionTests {
    func addr(_ interface: String, _ cidr: String) -> InterfaceAddress {
        let c = CIDR(cidr)!
        return InterfaceAddress(interface: interface, bytes: c.address.bytes, prefixLength: c.prefixLength)
    }

    // Item 1: local networks come from the underlay's own addresses, bounded; never from routes.
    @Test func localNetworksAreTheUnderlaysOwnPrefixesBounded() {
        let nets = LocalNetworks.from([
            addr("lo", "127.0.0.1/8"), addr("lo", "::1/128"),
            addr("eth0", "198.18.0.2/24"), addr("eth0", "10.1.2.3/8"), addr("eth0", "2001:db8:0:1::5/64"),
            addr("eth0", "2001:db9::5/32"), addr("eth0", "fe80::1/64"),
            addr("wlan0", "192.168.7.9/0"),
            addr("utun0", "198.19.0.2/24"),
        ], excluding: "utun0")
        #expect(nets == ["198.18.0.0/24", "10.1.0.0/16", "2001:db8:0:1::/64", "2001:db9::/48", "192.168.0.0/16"]
                + LocalNetworks.always)
    }

    @Test func theDefaultLocalNetworksReadNoRoutes() {
        // The live namespace of the test: whatever routes it has, only address prefixes and `always` come back.
        let nets = LocalNetworks.current(excluding: nil)
        let own = ((try? InterfaceAddresses.current()) ?? []).compactMap { IPAddress(bytes: $0.bytes) }
        for n in nets where !LocalNetworks.always.contains(n) {
            let c = CIDR(n)!
            #expect(own.contains { c.contains($0) }, "\(n) holds none of this namespace's addresses")
            #expect(c.prefixLength >= (c.address.isIPv6 ? LocalNetworks.shortestIPv6 : LocalNetworks.shortestIPv4))
        }
    }

    func route(_ cidr: String, _ dev: String, gateway: Bool = false) -> KernelRoute {
        let c = CIDR(cidr)!
        return KernelRoute(destination: c.address.bytes, prefixLength: c.prefixLength, interface: dev, hasGateway: gateway)
    }

    @Test func aMoreSpecificUnderlayRouteIsNamedAsABypass() {
        let routes = [route("0.0.0.0/0", "eth0", gateway: true), route("198.18.0.0/24", "eth0"),
                      route("0.0.0.0/1", "utun0"), route("128.0.0.0/1", "utun0"),
                      route("128.0.0.0/1", "eth0"), route("203.0.113.0/24", "eth0", gateway: true),
                      route("198.18.0.1/32", "eth0"),
                      route("::/0", "eth0", gateway: true), route("2001:db8:0:1::/64", "eth0"), route("::/1", "utun0"),
                      route("2001:db8:77::/48", "eth0"), route("fe80::/64", "eth0")]
        let addresses = [addr("eth0", "198.18.0.2/24"), addr("eth0", "2001:db8:0:1::2/64")]
        let found = TunnelBypass.routes(routes, interface: "utun0", tunnelRoutes: ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"],
                                        addresses: addresses, servers: ["198.18.0.1"])
        #expect(found == ["128.0.0.0/1 dev eth0", "203.0.113.0/24 dev eth0", "2001:db8:77::/48 dev eth0"])
    }

    @Test func aSplitTunnelsRoutesAloneAreChecked() {
        let routes = [route("0.0.0.0/0", "eth0", gateway: true), route("198.19.0.0/25", "eth0"), route("10.0.0.0/8", "eth0")]
        #expect(TunnelBypass.routes(routes, interface: "utun0", tunnelRoutes: ["198.19.0.0/24"], addresses: []) == ["198.19.0.0/25 dev eth0"])
        #expect(TunnelBypass.routes(routes, interface: "utun0", tunnelRoutes: [], addresses: []).isEmpty)
    }

    @Test func theKernelsRouteFilesAreRead() throws {
        let routes = KernelRoutes.parse(route: try Fixtures.text("killswitch/route"), ipv6Route: try Fixtures.text("killswitch/ipv6_route"))
        #expect(!routes.isEmpty)
        #expect(routes.allSatisfy { $0.interface != "lo" })
        #expect(routes.contains { $0.destination == [192, 168, 0, 0] && $0.prefixLength == 24 })
    }
}

@Suite struct LiteralInterfaceNameTests {
    // Item 2: only what the kernel and nft take literally.
    @Test(arguments: ["utun0", "wg-office", "a.b_c", "x", "abcdefghijklmno"])
    func accepted(_ name: String) { #expect(InterfaceName.isValid(name)) }

    @Test(arguments: ["r*", "*", "a\"b", "a;b", "a b", "a/b", "a:b", ".", "..", "", "abcdefghijklmnop", "ütun", "a\\b", "a\nb", "{x}", "a$b"])
    func refused(_ name: String) { #expect(!InterfaceName.isValid(name)) }

    @Test func aWildcardNameNeverReachesNft() {
        let r = KillSwitchRules(table: "vpnctl_x", profile: "office", includeAll: true, tunnelInterface: "r*")
        #expect(throws: VPNError.self) { try r.render() }
    }

    @Test func theProfileFieldIsRefusedByName() {
        var p = sampleProfile("office")
        guard case .wireguard(var w) = p.protocol else { Issue.record("sample is not WireGuard"); return }
        w.interfaceName = "r*"
        p.protocol = .wireguard(w)
        let problems = ProfileValidator(secretExists: { _ in true }).problems(in: p)
        #expect(problems.contains { $0.contains("protocol.interfaceName") && $0.contains("r*") })
    }

    @Test func aFailedFirewallUpdateEndsTheTunnelWithItsReason() throws {
        let f = ContextFixture()
        var p = sampleProfile("office")
        p.includeAllNetworks = true
        let context = try f.context(p)
        let fw = RecordingFirewall()
        fw.failAt = 2
        let ks = KillSwitch(profile: p, firewall: fw, log: { _ in })
        try ks.install()
        context.killSwitch = ks
        var faults = 0
        ks.onFailure = { why in context.fail(ConnectionError(.configurationFailed, why)) }
        context.onFault = { faults += 1 }
        context.update { $0.interface = "utun0" }
        #expect(faults == 1)
        #expect(ks.installed, "the older table stays: closed")
        #expect(ks.rules.tunnelInterface == nil, "the rules are what nft holds")
        context.update { $0.interface = "utun1" }
        #expect(fw.scripts.count == 2, "after a failure nothing more is tried")
        #expect(faults == 1)
        context.finish(error: nil, reason: .configurationFailed)
        #expect(context.record.status == .disconnected)
        #expect(context.record.stopReason == .configurationFailed)
        #expect(context.record.lastDisconnectError?.name == "configurationFailed")
        #expect(context.record.lastDisconnectError?.message.contains("kill switch could not follow the tunnel") == true)
    }
}

@Suite struct ResolvedDetectionTests {
    // Item 3: the kernel's comm is 15 bytes; the executable decides.
    @Test func resolvedIsRecognisedByItsExecutable() {
        #expect(NetworkNamespace.isProgram("systemd-resolved", comm: "systemd-resolve", executable: "/usr/lib/systemd/systemd-resolved"))
        #expect(NetworkNamespace.isProgram("systemd-resolved", comm: "systemd-resolve", executable: "/lib/systemd/systemd-resolved (deleted)"))
        #expect(!NetworkNamespace.isProgram("systemd-resolved", comm: "systemd-resolved", executable: "/usr/lib/systemd/systemd-resolved"))
        #expect(!NetworkNamespace.isProgram("systemd-resolved", comm: "systemd-resolve", executable: "/usr/bin/systemd-resolvex"))
        #expect(NetworkNamespace.isProgram("openvpn", comm: "openvpn", executable: "/usr/sbin/openvpn"))
    }

    typealias F = ResolverBackend.Facts
    static let here = F.Resolved(pid: "412", executable: "/usr/lib/systemd/systemd-resolved", netns: "net:[1]")
    static let sandboxed = F.Resolved(pid: "77", executable: "", netns: nil)

    @Test(arguments: [
        (F(ownNetns: "net:[1]", resolved: [here], resolvedDirectory: true, resolvectl: true, resolvconf: true,
           resolvConfTarget: "/run/systemd/resolve/stub-resolv.conf"), ResolverBackend.resolved, "pid 412"),
        (F(ownNetns: "net:[2]", resolved: [here], resolvedDirectory: true, resolvectl: true,
           resolvConfTarget: "/run/systemd/resolve/stub-resolv.conf", resolvConfIsMount: true), .file, "another network namespace"),
        (F(ownNetns: "net:[1]", resolved: [here], resolvedDirectory: false, resolvectl: true), .file, "/run/systemd/resolve/ is missing"),
        (F(ownNetns: "net:[1]", resolved: [here], resolvedDirectory: true, resolvectl: false), .file, "resolvectl is not installed"),
        (F(ownNetns: "net:[2]", resolved: [here], resolvectl: true, resolvconf: true, resolvConfTarget: "/run/resolvconf/resolv.conf",
           resolvConfIsMount: true), .file, "own file"),
        (F(ownNetns: "net:[1]", resolvconf: true, resolvConfTarget: "/run/resolvconf/resolv.conf"), .resolvconf, "resolvconf's file"),
        (F(ownNetns: "net:[1]", resolvconf: true), .file, "no systemd-resolved runs"),
        // Issue 31: in the agent's sandbox resolved's namespace cannot be read;
        // the stub symlink decides, never a bind-mounted file.
        (F(ownNetns: "net:[1]", resolved: [sandboxed], resolvedDirectory: true, resolvectl: true,
           resolvConfTarget: "../run/systemd/resolve/stub-resolv.conf"), .resolved, "cannot be read from here"),
        (F(ownNetns: "net:[1]", resolved: [sandboxed], resolvedDirectory: true, resolvectl: true,
           resolvConfTarget: "/run/systemd/resolve/stub-resolv.conf", resolvConfIsMount: true), .file, "own file"),
        (F(ownNetns: "net:[1]", resolved: [sandboxed], resolvedDirectory: true, resolvectl: true,
           resolvConfTarget: "/run/resolvconf/resolv.conf"), .file, "is not its file"),
        (F(ownNetns: "net:[2]", resolved: [sandboxed, here], resolvedDirectory: true, resolvectl: true,
           resolvConfTarget: "/run/systemd/resolve/stub-resolv.conf"), .file, "another network namespace"),
    ] as [(F, ResolverBackend, String)])
    func theBackendServesThisNamespaceAndSaysWhy(_ c: (F, ResolverBackend, String)) {
        let (backend, reason) = ResolverBackend.choose(c.0)
        #expect(backend == c.1)
        #expect(reason.contains(c.2), "\(reason)")
    }

    @Test func resolvedsFilesAreNeverWrittenThroughALink() throws {
        let dir = TempDir()
        let link = "\(dir.path)/resolv.conf", hop = "\(dir.path)/hop"
        try FileManager.default.createSymbolicLink(atPath: hop, withDestinationPath: "/run/systemd/./resolve/stub-resolv.conf")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "hop")
        #expect(ResolvConf.refusal(link)?.contains("/run/systemd/resolve/stub-resolv.conf") == true)
        let plain = "\(dir.path)/plain"
        try "nameserver 192.0.2.1\n".write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(ResolvConf.refusal(plain) == nil)

        let dns = TunnelDNS(id: UUID(), name: "office", profile: nil, runDirectory: dir.path, searchPath: nil, log: { _ in }, onChange: { _ in })
        dns.backend = .file
        dns.filePath = link
        #expect(throws: VPNError.self) { try dns.apply(["10.0.0.53"], interface: "utun0") }
        #expect(dns.record == nil)
    }
}

@Suite struct PushedNameTests {
    // Item 4: pushed or plugin-supplied DNS is checked like dnsSettings.
    @Test(arguments: ["evil\nnameserver 6.6.6.6", "-x", "a..b", "a b", "*.corp", "bad;name", String(repeating: "a", count: 64) + ".example"])
    func aProvidersBadNameIsRefused(_ bad: String) {
        #expect(throws: VPNError.self) { try TunnelDNSConfig.merge(provider: ["10.0.0.53", bad], profile: nil) }
    }

    @Test func goodNamesAndAddressesPass() throws {
        let c = try TunnelDNSConfig.merge(provider: ["10.0.0.53", "fd00::53", "corp.example", "corp.example."], profile: nil)
        #expect(c.servers == ["10.0.0.53", "fd00::53"])
        #expect(c.searchDomains == ["corp.example", "corp.example."])
    }

    @Test func anOpenVPNServersBadDHCPOptionsAreInvalid() {
        let s = PushedSettings(env: ["ifconfig_local": "10.8.0.6", "ifconfig_netmask": "255.255.255.0",
                                     "foreign_option_1": "dhcp-option DOMAIN corp.example",
                                     "foreign_option_2": "dhcp-option DOMAIN-SEARCH x\u{1b}[2J",
                                     "foreign_option_3": "dhcp-option DNS 10.8.0.1",
                                     "foreign_option_4": "dhcp-option DNS not-an-address",
                                     "foreign_option_5": "dhcp-option DOMAIN a b"])
        #expect(s.domains == ["corp.example"])
        #expect(s.dns == ["10.8.0.1"])
        #expect(s.invalid.count == 3)
        #expect(s.invalid.allSatisfy { !$0.contains("\u{1b}") })
    }
}

/// Item 12's audit, in the tunnel's own numbers.
@Suite struct TableNumberTests {
    @Test func everyInterfaceGetsATableOfItsOwn() {
        #expect(SettingsApplier.enforcedTable(ifindex: 2) == 0x766e_0002)
        #expect(SettingsApplier.enforcedTable(ifindex: 2 + 0x1_0000) != SettingsApplier.enforcedTable(ifindex: 2))
        #expect(SettingsApplier.enforcedTable(ifindex: Int32.max) == 0xFFFF_FFFF)
    }

    @Test func aRecordedTableOutOfRangeIsRefusedNotTruncated() throws {
        for bad in ["4294967298", "254", "0"] {
            let json = #"{"schemaVersion":1,"id":"3b1a80fa-b61e-4b56-b0bd-19e883798dfa","name":"x","status":"connected","settings":{"enforcedTable":"# + bad + "}}"
            let e = #expect(throws: JSONDecodeProblem.self, "\(bad)") { try RuntimeRecord(json: JSONReader(try JSONSyntax.parse(Array(json.utf8)))) }
            #expect(e?.description.contains("is not a routing table vpnctl makes") == true, "\(e?.description ?? "")")
        }
    }
}

/// Issue 30: a full tunnel's DNS on systemd-resolved. Without `~.` resolved
/// also asks the other links' servers (with default-route yes), out of the
/// tunnel. A recording resolvectl stands in for the real one (the logic only;
/// the real resolved is issue 31's lab).
@Suite struct FullTunnelResolvedTests {
    func recorded(fullTunnel: Bool, profile: DNSSettings? = nil) throws -> (calls: [String], record: ResolverRecord?) {
        let dir = TempDir()
        let log = "\(dir.path)/calls"
        try "#!/bin/sh\necho \"$*\" >> \(log)\n".write(toFile: "\(dir.path)/resolvectl", atomically: true, encoding: .utf8)
        chmod("\(dir.path)/resolvectl", 0o755)
        let dns = TunnelDNS(id: UUID(), name: "office", profile: profile, runDirectory: dir.path, searchPath: dir.path,
                            log: { _ in }, onChange: { _ in })
        dns.backend = .resolved
        try dns.apply(["10.8.0.1", "corp.example"], interface: "utun3", fullTunnel: fullTunnel)
        let calls = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        return withExtendedLifetime(dir) { (calls, dns.record) }
    }

    @Test func aFullTunnelTakesEveryNameOnResolved() throws {
        let full = try recorded(fullTunnel: true)
        #expect(full.calls == ["dns utun3 10.8.0.1", "domain utun3 corp.example ~.", "default-route utun3 yes"])
        #expect(full.record?.note?.contains("~.") == true)
        let split = try recorded(fullTunnel: false)
        #expect(split.calls == ["dns utun3 10.8.0.1", "domain utun3 corp.example", "default-route utun3 yes"])
        #expect(split.record?.note == nil)
        let matched = try recorded(fullTunnel: true, profile: DNSSettings(servers: [], searchDomains: [], matchDomains: ["lab.example"]))
        #expect(matched.calls.contains("domain utun3 corp.example ~lab.example"), "the profile's match domains: only they go to the tunnel")
        #expect(matched.calls.contains("default-route utun3 no"))
    }

    @Test func whatCountsAsAFullTunnel() {
        var s = TunnelNetworkSettings()
        s.routes = ["198.19.9.0/24", "0.0.0.0/1"]
        #expect(!s.routesEverything)
        s.routes.append("128.0.0.0/1")
        #expect(s.routesEverything)
        s.routes = ["::/0"]
        #expect(s.routesEverything)
        s.routes = ["8000::/1", "::/1"]
        #expect(s.routesEverything)
    }
}
