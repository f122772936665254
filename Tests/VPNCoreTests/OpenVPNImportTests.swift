import Foundation
import Testing
@testable import VPNCore

@Suite struct OpenVPNImportTests {
    @Test func sha256KnownVectors() {
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array(repeating: UInt8(ascii: "a"), count: 1000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func importsInlineBlocksIntoSecretsAndTrust() throws {
        let r = try ImportFormat.importProfile(try Fixtures.bytes("ovpn/client.ovpn"), name: "work", source: "client.ovpn",
                                               options: ImportOptions(username: "alice"))
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.remotes == [.init(host: "vpn.example.com", port: 1194, proto: "udp"), .init(host: "198.18.0.1", port: 1195, proto: "tcp")])
        #expect(o.username == "alice")
        #expect(o.passwordSecret == "password")
        #expect(o.keySecret == "key")
        #expect(o.tlsCryptSecret == "tls-crypt")
        #expect(o.certificate?.contains("BEGIN CERTIFICATE") == true)
        #expect(Set(r.secrets.keys) == ["key", "tls-crypt"])
        let fp = try #require(o.caFingerprint)
        #expect(r.anchors[fp] != nil && TrustAnchor.isFingerprint(fp))
        #expect(o.options.contains("cipher AES-256-GCM"))
        #expect(o.options.contains("remote-cert-tls server"))
        let listed = r.notes.first { $0.hasPrefix("not imported") } ?? ""
        #expect(listed.contains("'redirect-gateway' (line 16)"))
        #expect(listed.contains("'route-delay' (line 17)"))
        let json = String(decoding: try JSONEncoder().encode(r.profile), as: UTF8.self)
        #expect(!json.contains("SECRETKEYMATERIAL") && !json.contains("6acef03f"))
        // Missing password: a validation problem of its own, listed by start.
        let v = ProfileValidator(secretExists: { r.secrets[$0] != nil })
        #expect(v.problems(in: r.profile) == [])
        #expect(v.missingSecrets(in: r.profile) == ["passwordSecret: secret 'password' is not set"])
    }

    @Test func refusesProgramsAndTruncatedBlocksNamingEach() {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("ovpn/hostile.ovpn"), name: "h", source: "hostile.ovpn")
        }
        #expect(e?.problems == [
            "line 13: <key> is never closed (truncated file?)",
            "line 4: 'script-security 2' allows running programs; vpnctl refuses it (remove the line)",
            "line 5: 'up' runs a program; vpnctl refuses to import it (remove the line)",
            "line 6: 'down' runs a program; vpnctl refuses to import it (remove the line)",
            "line 7: 'plugin' runs a program; vpnctl refuses to import it (remove the line)",
        ])
    }

    /// Found by the ovpn fuzzer: 'port 70000' and a remote without its own
    /// port trapped (index out of range) while naming the bad port.
    @Test func outOfRangePortsAreProblemsNotCrashes() {
        let ca = "<ca>\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n</ca>\n"
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array("client\ndev tun\nport 70000\nremote vpn.example.com\nremote b 0\n\(ca)".utf8),
                                           name: "p", source: "p.ovpn")
        }
        #expect(e?.problems.contains("line 3: 'port 70000': the port must be 1–65535") == true)
        #expect(e?.problems.contains("line 5: remote port '0' is not 1–65535") == true)
        // The saved fuzzer input itself.
        #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("../Fuzz/regressions/ovpn/port-out-of-range"), name: "p", source: "p.ovpn")
        }
    }

    @Test func remotesAndControlCharactersAreChecked() {
        let ca = "<ca>\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n</ca>\n"
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array("client\nremote a$b 1194\nremote ok.example 1194 sctp\nproto quic\ncipher AES\u{1B}[2J\n\(ca)".utf8),
                                           name: "p", source: "p.ovpn")
        }
        for p in ["line 4: 'proto quic': use one of tcp, tcp-client", "line 5: a control character in 'cipher'",
                  "line 2: remote host 'a$b' is not a host name or an IP address", "line 3: remote protocol 'sctp'"] {
            #expect(e?.problems.contains { $0.hasPrefix(p) } == true, "missing \(p) in \(e?.problems ?? [])")
        }
    }

    @Test func tokenizerHonoursQuotes() {
        #expect(OpenVPNImport.tokenize(#"verify-x509-name "CN=my server" name # comment"#) == ["verify-x509-name", "CN=my server", "name"])
        #expect(OpenVPNImport.tokenize(#"setenv A 'b c' d\ e"#) == ["setenv", "A", "b c", "d e"])
    }
}
