import Foundation
import Testing
@testable import VPNCore

/// Issue 30: the files people have, in the shape each generator writes them
/// (our own files, Tests/fixtures/generators/), import as what their authors
/// meant, and the import summary says so as data.
@Suite struct GeneratorProfileTests {
    func imported(_ file: String, username: String? = nil) throws -> ImportResult {
        try ImportFormat.importChecked(try Fixtures.bytes("generators/\(file)"), name: "g", source: file,
                                       options: ImportOptions(username: username))
    }

    @Test func wgEasyAlgoAndPiVPNAreFullTunnelsOverBothFamilies() throws {
        for (file, dns, outside) in [("wg-easy.conf", ["1.1.1.1"], ["vpn.example.net"]),
                                     ("algo.conf", ["172.16.0.1", "2001:db8:4a1f::1"], ["203.0.113.40"]),
                                     ("pivpn.conf", ["9.9.9.9", "149.112.112.112"], ["vpn.example.net"])] {
            let s = try imported(file).summary
            #expect(s.tunnel == "full", "\(file)")
            #expect(s.families == ["IPv4", "IPv6"], "\(file): ::0/0 is ::/0")
            #expect(s.dnsServers == dns, "\(file)")
            #expect(s.keptOutside == outside, "\(file)")
            #expect(s.text.contains("full tunnel (IPv4 and IPv6)") && s.text.contains("for every name"), "\(s.text)")
        }
    }

    @Test func wgQuickTablesSayWhereTheRoutesGo() throws {
        let base = try Fixtures.text("generators/wg-easy.conf")
        for (table, tunnel, shown) in [("off", "none", nil), ("1234", "full", "1234"), ("auto", "full", nil), ("main", "full", nil), ("Main", "full", nil)] {
            let text = base.replacingOccurrences(of: "MTU = 1420", with: "MTU = 1420\nTable = \(table)")
            let s = try ImportFormat.importChecked(Array(text.utf8), name: "t", source: "t.conf").summary
            #expect(s.tunnel == tunnel && s.table == shown, "Table = \(table): \(s)")
        }
        let split = base.replacingOccurrences(of: "AllowedIPs = 0.0.0.0/0, ::/0", with: "AllowedIPs = 10.8.0.0/24, 192.168.77.0/24")
        let s = try ImportFormat.importChecked(Array(split.utf8), name: "t", source: "t.conf").summary
        #expect(s.tunnel == "split" && s.routes == ["10.8.0.0/24", "192.168.77.0/24"] && s.keptOutside.isEmpty)
        #expect(s.text.hasPrefix("split tunnel: 10.8.0.0/24, 192.168.77.0/24"))
    }

    @Test func nyrAngristanAndPiVPNLeaveTheRoutesToTheServer() throws {
        for file in ["nyr.ovpn", "angristan.ovpn", "pivpn.ovpn"] {
            let r = try imported(file)
            #expect(r.summary.tunnel == "server", "\(file): their servers push redirect-gateway")
            #expect(r.summary.text.contains("the routes the server gives"))
            #expect(!r.notes.contains { $0.contains("not a directive vpnctl carries") })
        }
        let filtered = try Fixtures.text("generators/nyr.ovpn") + "pull-filter ignore redirect-gateway\n"
        let f = try ImportFormat.importChecked(Array(filtered.utf8), name: "g", source: "n.ovpn").summary
        #expect(f.tunnel == "server" && f.redirectFiltered && f.text.hasPrefix("the routes the server gives, never a full tunnel"))
        let angristan = try imported("angristan.ovpn")
        #expect(angristan.summary.noEffect == ["block-outside-dns"], "setenv opt block-outside-dns: Windows only")
        #expect(angristan.profile.openvpnConfiguration?.options.contains("ignore-unknown-option block-outside-dns") == true)
    }

    /// A commercial provider's download: update-resolv-conf scripts (vpnctl
    /// does their job), script-security 2 for them alone, and options that
    /// only scripts read.
    @Test func aProvidersDNSScriptsAreReplacedNotRun() throws {
        let r = try imported("provider.ovpn", username: "p1234")
        let o = try #require(r.profile.openvpnConfiguration)
        #expect(!o.options.contains { $0.hasPrefix("up") || $0.hasPrefix("down") || $0.hasPrefix("script-security") || $0.hasPrefix("setenv") })
        #expect(o.options.contains("fast-io"))
        #expect(r.notes.contains { $0.hasPrefix("vpnctl applies the server's DNS itself") && $0.contains("(line 29)") && $0.contains("(line 30)") })
        #expect(r.summary.noEffect == ["tun-ipv6", "setenv"])
        #expect(r.summary.keptOutside == ["203.0.113.21", "203.0.113.22"])

        // Any other program beside them: every program line is refused, the DNS script too.
        let text = try Fixtures.text("generators/provider.ovpn") + "route-up /usr/local/bin/notify\n"
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importChecked(Array(text.utf8), name: "g", source: "p.ovpn", options: ImportOptions(username: "u"))
        }
        #expect(e?.problems.count == 4, "script-security 2, up, down, route-up: \(e?.problems ?? [])")
    }

    /// PiVPN's client made with a password: its key is encrypted, and openvpn
    /// would ask for the passphrase at every start.
    @Test func anEncryptedKeyIsRefusedWithTheStepThatDecryptsIt() throws {
        let text = try Fixtures.text("generators/pivpn.ovpn")
            .replacingOccurrences(of: "-----BEGIN PRIVATE KEY-----", with: "-----BEGIN ENCRYPTED PRIVATE KEY-----")
            .replacingOccurrences(of: "-----END PRIVATE KEY-----", with: "-----END ENCRYPTED PRIVATE KEY-----")
        let e = #expect(throws: VPNError.self) { try ImportFormat.importChecked(Array(text.utf8), name: "g", source: "p.ovpn") }
        #expect(e?.problems.contains { $0.hasPrefix("<key>: the key is encrypted") && $0.contains("openssl pkey") } == true, "\(e?.problems ?? [])")
    }

    @Test func aClientSideFullTunnelWithDNSSaysSo() throws {
        let text = try Fixtures.text("generators/nyr.ovpn") + "redirect-gateway def1 ipv6 bypass-dhcp\ndhcp-option DNS 10.8.0.1\ndhcp-option DOMAIN corp.example\ncomp-lzo\n"
        let r = try ImportFormat.importChecked(Array(text.utf8), name: "g", source: "n.ovpn")
        let s = r.summary
        #expect(s.tunnel == "full" && s.families == ["IPv4", "IPv6"])
        #expect(s.dnsServers == ["10.8.0.1"] && s.searchDomains == ["corp.example"])
        #expect(s.noEffect == ["redirect-gateway bypass-dhcp"])
        #expect(s.text == "full tunnel (IPv4 and IPv6); DNS 10.8.0.1, search corp.example, for every name; kept outside: 203.0.113.5; no effect here: redirect-gateway bypass-dhcp")
        #expect(r.notes.contains { $0.hasPrefix("'comp-lzo': openvpn 2.6's default, allow-compression asym") })
        let json = String(decoding: try JSONEncoder().encode(s), as: UTF8.self)
        #expect(json.contains("\"tunnel\":\"full\"") && json.contains("\"keptOutside\":[\"203.0.113.5\"]"))
    }

    @Test func anIKEv2ProfileSaysTheTrafficSelectorsDecide() {
        let p = Profile(name: "ike", protocol: .ikev2(IKEv2Configuration(serverAddress: "vpn.example.net")))
        let s = ImportSummary.of(p)
        #expect(s.tunnel == "server" && s.keptOutside == ["vpn.example.net"])
        #expect(s.text.hasPrefix("the networks the server's traffic selectors offer (a full tunnel if it offers 0.0.0.0/0 or ::/0)"))
    }
}

/// Issue 36 (paper cuts): a transposed letter is one typo, and the closest
/// suggestion comes first.
@Suite struct SuggestionOrderTests {
    @Test func aTranspositionIsOneTypoAndComesFirst() {
        #expect(Suggest.distance("stauts", "status") == 1)
        #expect(Suggest.distance("stats", "status") == 1)
        #expect(Suggest.closest(to: "stauts", among: ["start", "stats", "status", "stop"], limit: 3) == ["status", "stats", "start"])
    }
}
