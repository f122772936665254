import Foundation
import Testing
@testable import VPNCore

/// Issue 30: strongSwan's Android app profiles (.sswan), as hwdsl2/setup-ipsec-vpn's
/// ikev2.sh writes them, import as ikev2 profiles with nothing dropped in silence.
@Suite struct StrongSwanProfileTests {
    /// SHA-256 of Tests/fixtures/sswan/ca.pem, the CA of every fixture.
    static func caFP() throws -> String {
        let pem = try Fixtures.text("sswan/ca.pem")
        return SHA256.hex(try #require(PEM.blocks(pem).first?.der))
    }

    func load(_ name: String, password: String? = nil, username: String? = nil, edit: (String) -> String = { $0 }) throws -> ImportResult {
        let text = edit(try Fixtures.text("sswan/\(name)"))
        return try ImportFormat.importChecked(Array(text.utf8), name: "road", source: name,
                                              options: ImportOptions(username: username, identityPassword: password))
    }

    func refusal(_ name: String, password: String? = nil, edit: (String) -> String = { $0 }) -> VPNError? {
        #expect(throws: VPNError.self) { try load(name, password: password, edit: edit) }
    }

    func ikev2(_ r: ImportResult) throws -> IKEv2Configuration {
        guard case .ikev2(let c) = r.profile.protocol else { Issue.record("not ikev2: \(r.profile.protocol)"); throw VPNError(.failure, "not ikev2") }
        return c
    }

    @Test func hwdsl2sCertificateProfileImportsWithItsIdentityAndTheCAInItsP12() throws {
        let r = try load("hwdsl2-cert.sswan")
        let c = try ikev2(r)
        #expect(c.serverAddress == "198.18.0.1" && c.remoteIdentifier == "198.18.0.1")
        #expect(c.authenticationMethod == .certificate && c.identitySecret == "identity" && c.username == nil)
        let identity = String(decoding: try #require(r.secrets["identity"]), as: UTF8.self)
        #expect(identity.contains("-----BEGIN CERTIFICATE-----") && identity.contains("PRIVATE KEY-----"))
        let fp = try Self.caFP()
        #expect(c.caFingerprint == fp && r.anchors.keys.sorted() == [fp])
        #expect(c.ikeProposals == ["aes256-sha256-modp2048"] && c.childProposals == ["aes128gcm16"])
        #expect(c.remoteTrafficSelectors == nil, "no split-tunneling: a full tunnel")
        #expect(r.notes.contains { $0.contains("local.rsa-pss") }, "rsa-pss is named, not dropped: \(r.notes)")
        #expect(r.notes.contains { $0.contains("CA in local.p12") && $0.contains("IKEv2 VPN CA") })
        #expect(r.notes.contains { $0.contains("--keep-id its id is the file's uuid") })
        #expect(r.fileID?.lowercasedString == "5b7c2a4e-8f31-4d2a-9c55-0e4d6b1a7f20")
        #expect(r.noEffect == ["local.rsa-pss"] && r.summary.tunnel == "server", "no split-tunneling: the server's selectors decide")
    }

    @Test func anEncryptedP12NeedsItsPasswordAndTheSplitTunnelBecomesTheSelectors() throws {
        let e = refusal("cert-split.sswan")
        #expect(e?.problems.contains { $0.hasPrefix("local.p12: ") && $0.contains("--identity-password-stdin") } == true, "\(e?.problems ?? [])")

        let r = try load("cert-split.sswan", password: "p12-pass")
        let c = try ikev2(r)
        #expect(c.serverAddress == "vpn.example.com" && c.remoteIdentifier == "vpn.example.com" && c.localIdentifier == "vpnclient")
        #expect(c.remoteTrafficSelectors == ["10.20.0.0/16", "192.0.2.7/32", "2001:db8:20::/48"])
        #expect(r.profile.dnsSettings?.servers == ["10.20.0.53", "2001:db8:20::53"])
        #expect(c.mtu == 1400 && c.ikeProposals == ["aes256gcm16-prfsha384-ecp384"] && c.childProposals == ["aes256gcm16-ecp384"])
        let fp = try Self.caFP()
        #expect(c.caFingerprint == fp && r.anchors[fp].map { String(decoding: $0, as: UTF8.self) }?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        #expect(!r.profile.includeAllNetworks)
        #expect(r.summary.tunnel == "split" && r.summary.routes == ["10.20.0.0/16", "192.0.2.7/32", "2001:db8:20::/48"])
        #expect(r.summary.text.hasPrefix("split tunnel: 10.20.0.0/16, 192.0.2.7/32, 2001:db8:20::/48; DNS 10.20.0.53, 2001:db8:20::53"), "\(r.summary.text)")
    }

    @Test func aWrongP12PasswordIsNamed() {
        let e = refusal("cert-split.sswan", password: "not-it")
        #expect(e?.problems.contains { $0.hasPrefix("local.p12: ") && $0.contains("wrong password") } == true, "\(e?.problems ?? [])")
        #expect(e?.problems.contains { $0.contains("--identity-password-stdin") } == false)
    }

    @Test func anEAPProfileTakesItsUsernameAndLeavesThePasswordToSet() throws {
        let r = try load("eap.sswan")
        let c = try ikev2(r)
        #expect(c.authenticationMethod == .none && c.username == "bob" && c.passwordSecret == "password" && r.secrets.isEmpty)
        let fp = try Self.caFP()
        #expect(c.remoteIdentifier == "vpn.lab.test" && c.caFingerprint == fp)
        #expect(r.profile.includeAllNetworks, "block-ipv4 and block-ipv6: the kill switch")
        #expect(r.notes.contains { $0.contains("nat-keepalive 45") })
        #expect(try load("eap.sswan", username: "carol").profile.protocol.model.serverHosts == ["198.18.0.1"])
        guard case .ikev2(let other) = try load("eap.sswan", username: "carol").profile.protocol else { return }
        #expect(other.username == "carol", "--username wins over local.eap_id")
    }

    @Test func malformedBase64IsNamedByKey() {
        let p12 = refusal("hwdsl2-cert.sswan") { $0.replacingOccurrences(of: "\"p12\": \"MII", with: "\"p12\": \"!!MII") }
        #expect(p12?.problems == ["local.p12 is not base64 (the PKCS#12 file, base64-encoded)"])
        let cert = refusal("eap.sswan") { $0.replacingOccurrences(of: #""cert": "-----BEGIN CERTIFICATE-----\n"#, with: #""cert": "%%%"#) }
        #expect(cert?.problems == ["remote.cert is not base64 (the CA certificate, DER base64-encoded, or PEM)"])
        let notP12 = refusal("hwdsl2-cert.sswan") { $0.replacing(#/"p12": "[^"]*"/#, with: #""p12": "aGVsbG8gd29ybGQ=""#) }
        #expect(notP12?.problems.first?.hasPrefix("local.p12: not a PKCS#12 file") == true, "\(notP12?.problems ?? [])")
    }

    @Test func typesVpnctlCannotAuthenticateWithAreRefusedByName() {
        let unknown = refusal("eap.sswan") { $0.replacingOccurrences(of: "\"ikev2-eap\"", with: "\"ikev2-psk\"") }
        #expect(unknown?.problems == ["type 'ikev2-psk' is not one of ikev2-eap, ikev2-cert, ikev2-cert-eap, ikev2-eap-tls, ikev2-byod-eap"])
        let wrongKind = refusal("eap.sswan") { $0.replacingOccurrences(of: "\"ikev2-eap\"", with: "7") }
        #expect(wrongKind?.problems == ["at type: expected a string"], "one problem, not also 'missing'")
        let tls = refusal("eap.sswan") { $0.replacingOccurrences(of: "\"ikev2-eap\"", with: "\"ikev2-eap-tls\"") }
        #expect(tls?.problems.first?.contains("not with EAP-TLS") == true)
        #expect(tls?.message.contains("strongSwan app profile") == true)
    }

    @Test func keysWithoutAPlaceHereAreRefusedNotDropped() {
        let cases: [(String, String, String)] = [
            ("\"nat-keepalive\": 45", "\"nat-keepalive\": 45, \"flavour\": 1", "'flavour': a key vpnctl does not know"),
            ("\"block-ipv4\": true,", "\"excluded\": \"192.168.1.0/24\", \"block-ipv4\": true,", "split-tunneling.excluded (192.168.1.0/24)"),
            ("\"block-ipv6\": true", "\"block-ipv6\": false", "split-tunneling.block-ipv4 without block-ipv6"),
            ("\"addr\": \"198.18.0.1\",", "\"addr\": \"198.18.0.1\", \"port\": 4500,", "remote.port 4500"),
            ("\"nat-keepalive\": 45", "\"nat-keepalive\": 45, \"included-apps\": [\"org.example\"]", "included-apps: names Android apps by package"),
            ("\"eap_id\": \"bob\"", "\"eap_id\": \"bob\", \"pin\": \"1\"", "local.'pin': a key vpnctl does not know"),
            ("\"nat-keepalive\": 45", "\"nat-keepalive\": 45, \"ike-proposal\": \"aes256-sha256\"", "ike-proposal 'aes256-sha256'"),
            ("\"nat-keepalive\": 45", "\"nat-keepalive\": 45, \"mtu\": 9000", "mtu 9000 is not a number from 1280 to 1500"),
            ("\"nat-keepalive\": 45", "\"nat-keepalive\": 45, \"dns-servers\": \"10.0.0.1 dns.example\"", "dns-servers: 'dns.example' is not an IP address"),
        ]
        for (from, to, expected) in cases {
            let e = refusal("eap.sswan") { $0.replacingOccurrences(of: from, with: to) }
            #expect(e?.problems.contains { $0.contains(expected) } == true, "\(expected): \(e?.problems ?? [])")
        }
        let noUser = refusal("eap.sswan") { $0.replacingOccurrences(of: "\"eap_id\": \"bob\"", with: "") }
        #expect(noUser?.problems.first?.contains("give it with --username") == true)
    }

    @Test func withoutRemoteCertTheP12sCAIsTheAnchorAndWithoutEitherTheFileIsRefused() throws {
        let r = try load("cert-split.sswan", password: "p12-pass") { $0.replacing(#/"cert": "[^"]*",/#, with: "") }
        let fp = try Self.caFP()
        #expect(try ikev2(r).caFingerprint == fp)
        let e = refusal("eap.sswan") { $0.replacing(#/"cert": "[^"]*"/#, with: #""certreq": true"#) }
        #expect(e?.problems.count == 1 && e?.problems.first?.hasPrefix("remote.cert: missing") == true, "\(e?.problems ?? [])")
    }

    @Test func vpnctlsOwnJSONIsNotMistakenForIt() throws {
        #expect(!StrongSwanProfile.recognizes(Array(#"{"id":"x","name":"a","protocol":{"type":"wireguard"}}"#.utf8)))
        #expect(StrongSwanProfile.recognizes(Array(try Fixtures.text("sswan/eap.sswan").utf8)))
    }

    @Test func theNarrowedSelectorsReachCharonAndSurviveTheStore() throws {
        let r = try load("cert-split.sswan", password: "p12-pass")
        let again = try Profile.parse(Array(try JSONEncoder().encode(r.profile)))
        #expect(again.protocol == r.profile.protocol)
        let c = try ikev2(r)
        let conn = try #require(CharonLaunch.connection(c, caCertificate: "CA", identity: ["CERT"])["vpnctl"]?.section)
        let child = try #require(conn["children"]?.section?["vpnctl"]?.section)
        #expect(child["remote_ts"]?.texts == ["10.20.0.0/16", "192.0.2.7/32", "2001:db8:20::/48"])
        var bad = c
        bad.remoteTrafficSelectors = ["10.0.0.0/33"]
        let problems = ProfileValidator(secretExists: { _ in true }).problems(in: Profile(name: "x", protocol: .ikev2(bad)))
        #expect(problems.contains("protocol.remoteTrafficSelectors: '10.0.0.0/33' is not a CIDR prefix"))
    }
}
