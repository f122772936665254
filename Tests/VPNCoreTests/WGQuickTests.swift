import Foundation
import Testing
@testable import VPNCore

@Suite struct WGQuickTests {
    @Test func importsTypicalFileAndMovesKeysIntoSecrets() throws {
        let r = try ImportFormat.importProfile(try Fixtures.bytes("wg/office.conf"), name: "office", source: "office.conf")
        guard case .wireguard(let w) = r.profile.protocol else { Issue.record("not wireguard"); return }
        #expect(w.addresses == ["10.0.0.2/32", "fd00::2/128"])
        #expect(w.dns == ["1.1.1.1", "corp.example"])
        #expect(w.mtu == 1380)
        #expect(w.privateKeySecret == "private-key")
        #expect(w.peers.count == 1)
        #expect(w.peers[0].presharedKeySecret == "peer1-preshared-key")
        #expect(w.peers[0].persistentKeepalive == 25)
        #expect(r.secrets["private-key"] == Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        let json = String(decoding: try JSONEncoder().encode(r.profile), as: UTF8.self)
        #expect(!json.contains("yAnz5TF"))
        #expect(!json.contains("FpCyhws9"))
    }

    @Test func importsCRLFBOMOddCaseSpacingSeveralPeersAndIPv6() throws {
        let r = try ImportFormat.importProfile(try Fixtures.bytes("wg/crlf-multi.conf"), name: "multi", source: "crlf-multi.conf")
        guard case .wireguard(let w) = r.profile.protocol else { Issue.record("not wireguard"); return }
        #expect(w.addresses == ["10.9.0.2/24", "fd00:9::2/64"])
        #expect(w.table == "off")
        #expect(w.listenPort == 51000)
        #expect(w.fwmark == "0x1234")
        #expect(w.peers.map(\.endpoint) == ["[2001:db8::1]:51820", "vpn.example.com:443"])
        #expect(w.peers[0].allowedIPs == ["10.9.0.0/24", "fd00:9::/64"])
        #expect(w.peers[1].persistentKeepalive == 0)
        #expect(ProfileValidator(secretExists: { r.secrets[$0] != nil }).problems(in: r.profile) == [])
    }

    /// Found by the wgquick fuzzer: inet_pton stops at a NUL, so
    /// "fd00:9::\0junk" passed as an address and did not survive export.
    @Test func anAddressWithANULIsNotAnAddress() throws {
        #expect(IPAddress("fd00:9::\0\0point") == nil)
        #expect(CIDR("10.0.0.0/8\0") == nil)
        let input = try Fixtures.bytes("../Fuzz/regressions/wgquick/nul-in-allowed-ips")
        #expect(throws: VPNError.self) { try ImportFormat.importProfile(input, name: "n", source: "n.conf") }
    }

    /// Found by the wgquick fuzzer: a [Peer] without a PublicKey parses (it is
    /// reported by validation, as `vpnctl import` does), and must not count as imported.
    @Test func aPeerWithoutAPublicKeyDoesNotImport() throws {
        let input = try Fixtures.bytes("../Fuzz/regressions/wgquick/peer-without-public-key")
        let e = #expect(throws: VPNError.self) { try ImportFormat.importChecked(input, name: "n", source: "n.conf") }
        #expect(e?.problems.contains { $0.hasPrefix("protocol.peers[0].publicKey: missing") } == true, "\(e?.problems ?? [])")
    }

    @Test func refusesCommandsNamingEachLine() throws {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("wg/postup.conf"), name: "p", source: "postup.conf")
        }
        #expect(e?.code == .configurationInvalid)
        #expect(e?.problems == [
            "line 4: PostUp runs a shell command; vpnctl refuses to import commands (remove the line)",
            "line 5: PreDown runs a shell command; vpnctl refuses to import commands (remove the line)",
        ])
    }

    @Test func reportsEveryProblemWithLineNumbersAndNeverEchoesThePrivateKey() throws {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("wg/broken.conf"), name: "b", source: "broken.conf")
        }
        let problems = e?.problems ?? []
        #expect(problems.count == 7, "\(problems)")
        #expect(problems.first == "line 2: PrivateKey is not a WireGuard key (44 characters of base64 encoding 32 bytes)")
        #expect(problems.contains("line 5: unknown key 'Colour' in [Interface]"))
        #expect(problems.contains("line 10: Endpoint '198.18.0.1' has no port (host:port)"))
        #expect(!problems.joined().contains("not-a-key"))
    }

    @Test func detectsOtherFormatsAndRefusesThemClearly() throws {
        let ovpn = try ImportFormat.importProfile(try Fixtures.bytes("wg/client.ovpn"), name: "c", source: "client.ovpn")
        #expect(ovpn.profile.protocol.kind == .openvpn)
        let plist = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array("<?xml version=\"1.0\"?>\n<plist version=\"1.0\">\n".utf8), name: "c", source: "x.mobileconfig")
        }
        #expect(plist?.message == "x.mobileconfig is an Apple .mobileconfig file, which may hold several profiles")
        let unknown = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array("hello world\n".utf8), name: "c", source: "notes.txt")
        }
        #expect(unknown?.message == "cannot tell what kind of file notes.txt is")
        let binary = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile([0xff, 0xfe, 0x00, 0x5b], name: "c", source: "blob")
        }
        #expect(binary?.message == "blob is not UTF-8 text")
    }

    @Test func exportReimportsToTheSameProfile() throws {
        let r = try ImportFormat.importProfile(try Fixtures.bytes("wg/crlf-multi.conf"), name: "multi", source: "m")
        guard case .wireguard(let w) = r.profile.protocol else { return }
        let text = WGQuick.export(w, secret: { r.secrets[$0].map { String(decoding: $0, as: UTF8.self) } })
        let again = try WGQuick.parse(text, name: "multi", source: "m")
        #expect(again.profile.protocol == r.profile.protocol)
        #expect(again.secrets == r.secrets)
    }
}

@Suite struct JSONSyntaxTests {
    @Test(arguments: [
        "{}", "[]", "{\"a\":[1,2.5,-3e10,true,false,null,\"\\u00e9\\n\"]}", " \n{ \"k\" : \"ü\" } \n",
    ])
    func accepts(text: String) {
        #expect(JSONSyntax.firstError(in: Array(text.utf8)) == nil)
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8))) != nil)
    }

    @Test(arguments: [
        ("{\"a\":}", 1, 6), ("[1,]", 1, 4), ("{\"a\" 1}", 1, 6), ("\"abc", 1, 5), ("[01]", 1, 3),
        ("{}\n}", 2, 1), ("[\"\t\"]", 1, 3), ("[1.]", 1, 4), ("", 1, 1),
    ])
    func rejects(text: String, line: Int, column: Int) {
        let p = JSONSyntax.firstError(in: Array(text.utf8))
        #expect(p?.line == line && p?.column == column, "\(String(describing: p))")
    }

    @Test func deepNestingIsAnErrorNotACrash() {
        let text = String(repeating: "[", count: 100_000)
        #expect(JSONSyntax.firstError(in: Array(text.utf8))?.message.contains("nesting") == true)
    }
}
