import Foundation
import Testing
@testable import VPNCore

@Suite struct ValidationTests {
    let validator = ProfileValidator(secretExists: { _ in true })

    @Test func validWireGuardProfileHasNoProblems() {
        #expect(validator.problems(in: sampleProfile("office")) == [])
    }

    @Test func brokenWireGuardProfileReportsEveryProblemAtOnce() {
        let p = Profile(name: "-bad", protocol: .wireguard(WireGuardConfiguration(
            privateKeySecret: nil, addresses: ["10.0.0.300/24", "fd00::1/129"], dns: ["not a domain"], mtu: 100,
            table: "main2", interfaceName: "this-name-is-way-too-long",
            peers: [WireGuardPeer(publicKey: "short", allowedIPs: [], endpoint: "198.18.0.1"),
                    WireGuardPeer(publicKey: "", allowedIPs: ["10.0.0.0/8"], endpoint: "[::1]:0")])))
        let problems = validator.problems(in: p)
        let expected = [
            "name: '-bad' starts with '-'",
            "protocol.privateKeySecret: missing",
            "protocol.addresses: '10.0.0.300/24'",
            "protocol.addresses: 'fd00::1/129'",
            "protocol.dns: 'not a domain'",
            "protocol.mtu: 100 is out of range",
            "protocol.table: 'main2'",
            "protocol.interfaceName:",
            "protocol.peers[0].publicKey: not a WireGuard key",
            "protocol.peers[0].allowedIPs: missing",
            "protocol.peers[0].endpoint: '198.18.0.1' has no port",
            "protocol.peers[1].publicKey: missing",
            "protocol.peers[1].endpoint: '[::1]:0' has a port outside",
        ]
        for e in expected {
            #expect(problems.contains { $0.hasPrefix(e) }, "missing problem '\(e)' in \(problems)")
        }
        #expect(problems.count == expected.count, "\(problems)")
    }

    @Test func wireGuardWithoutPeers() {
        let p = Profile(name: "x", protocol: .wireguard(WireGuardConfiguration(privateKeySecret: "k", addresses: ["10.0.0.2"])))
        #expect(validator.problems(in: p) == ["protocol.peers: missing (at least one peer with a public key, allowed IPs and an endpoint)"])
    }

    /// Issue 36, item 3: `persistent` is WireGuard's; another profile that
    /// asks for it is refused by name, and the key survives a round trip.
    @Test func persistentIsWireGuardsAndRefusedByNameElsewhere() throws {
        var wg = sampleProfile("office")
        wg.persistent = true
        #expect(validator.problems(in: wg) == [])
        let text = Array(String(decoding: try JSONEncoder().encode(wg), as: UTF8.self).utf8)
        #expect(try Profile.parse(text).persistent)
        #expect(try !Profile.parse(Array(String(decoding: try JSONEncoder().encode(sampleProfile("office")), as: UTF8.self).utf8)).persistent)
        var ovpn = Profile(name: "x", protocol: .openvpn(OpenVPNConfiguration()))
        ovpn.persistent = true
        #expect(validator.problems(in: ovpn).contains("persistent: only WireGuard profiles can be persistent so far (remove the key)"))
    }

    @Test func openVPNNeedsRemoteCAAndAuthentication() {
        let p = Profile(name: "x", protocol: .openvpn(OpenVPNConfiguration()))
        let problems = validator.problems(in: p)
        #expect(problems.count == 3, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("protocol.remotes: missing") })
        #expect(problems.contains { $0.hasPrefix("protocol.caFingerprints: missing") })
        #expect(problems.contains { $0.hasPrefix("protocol: no client authentication") })
    }

    @Test func openVPNUsernameNeedsPasswordAndCertNeedsKey() {
        let p = Profile(name: "x", protocol: .openvpn(OpenVPNConfiguration(
            remotes: [.init(host: "vpn.example", port: 70000, proto: "sctp")], caFingerprints: ["ABC"],
            certificate: "-----BEGIN CERTIFICATE-----", username: "alice")))
        let problems = validator.problems(in: p)
        for e in ["protocol.remotes[0].port", "protocol.remotes[0].proto", "protocol.caFingerprints: 'ABC'",
                  "protocol.keySecret: missing", "protocol.passwordSecret: missing"] {
            #expect(problems.contains { $0.hasPrefix(e) }, "missing \(e) in \(problems)")
        }
    }

    /// `vpnctl edit` must not get around what import refuses: options are
    /// written into the file openvpn reads.
    @Test func openVPNOptionsHostsAndUsernameCannotCarryPrograms() {
        let fp = String(repeating: "ab", count: 32)
        let p = Profile(name: "x", protocol: .openvpn(OpenVPNConfiguration(
            remotes: [.init(host: "vpn.example; rm", port: 1194, proto: "udp"), .init(host: "2001:db8::1", port: 1194, proto: "tcp6-client")],
            caFingerprints: [fp], certificate: "-----BEGIN CERTIFICATE-----", keySecret: "key", username: "alice\nsignal SIGTERM",
            passwordSecret: "password",
            options: ["cipher AES-256-GCM", "up /tmp/x.sh", "--script-security 2", "verb 3\nup /tmp/x.sh", "config /etc/other.conf"])))
        #expect(validator.problems(in: p) == [
            "protocol.remotes[0].host: 'vpn.example; rm' is not a host name or an IP address",
            "protocol.options[1]: 'up' can run programs; vpnctl refuses it",
            "protocol.options[2]: 'script-security' can run programs; vpnctl refuses it",
            #"protocol.options[3]: a control character (a line break?) in "verb 3\nup /tmp/x.sh""#,
            "protocol.options[4]: 'config' makes openvpn read another file of directives; vpnctl keeps every directive in the profile",
            "protocol.username: a control character (a line break?) in it",
        ])
    }

    /// `vpnctl edit` gets the import rules: no wrapper, only allowed
    /// directives, each with arguments that fit its grammar.
    @Test func openVPNOptionsCannotBeSmuggledThroughWrappers() {
        let p = Profile(name: "x", protocol: .openvpn(OpenVPNConfiguration(
            remotes: [.init(host: "vpn.example", port: 1194, proto: "udp")], caFingerprints: [String(repeating: "ab", count: 32)],
            username: "alice", passwordSecret: "password",
            options: ["setenv opt script-security 2", "setenv opt up '/bin/sh -c id'", "ignore-unknown-option up", "setenv FORWARD_COMPATIBLE 1",
                      "writepid /etc/passwd", "key-direction 5", "verify-x509-name \"O'Brien name\" name", "compress lz4-v2"])))
        #expect(validator.problems(in: p) == [
            "protocol.options[0]: 'setenv opt' makes openvpn read the rest of the line as a directive; write the directive itself",
            "protocol.options[1]: 'setenv opt' makes openvpn read the rest of the line as a directive; write the directive itself",
            "protocol.options[2]: 'ignore-unknown-option up' does not fit 'ignore-unknown-option NAME [NAME ...] (no directive that runs a program)'",
            "protocol.options[3]: 'setenv' is not a directive vpnctl passes to openvpn",
            "protocol.options[4]: 'writepid' is not a directive vpnctl passes to openvpn",
            "protocol.options[5]: 'key-direction 5' does not fit 'key-direction 0|1'",
        ])
    }

    /// Profiles saved before each CA had its own anchor name one fingerprint.
    @Test func oldSingleCAFingerprintStillLoads() throws {
        let fp = String(repeating: "ab", count: 32)
        let json = #"{"id":"6f1c3a52-0d7e-4b8e-9a43-2f6d8c1e5b70","name":"old","protocol":{"type":"openvpn","remotes":[{"host":"vpn.example","port":1194,"proto":"udp"}],"caFingerprint":"\#(fp)","username":"a","passwordSecret":"password"}}"#
        let p = try Profile.parse(Array(json.utf8))
        guard case .openvpn(let o) = p.protocol else { Issue.record("not openvpn"); return }
        #expect(o.caFingerprints == [fp])
        let encoded = String(decoding: try JSONEncoder().encode(p), as: UTF8.self)
        #expect(encoded.contains(#""caFingerprints":["\#(fp)"]"#) && !encoded.contains(#""caFingerprint":"#))
        let both = json.replacingOccurrences(of: #""caFingerprint":"#, with: #""caFingerprints":["\#(fp)"],"caFingerprint":"#)
        #expect(throws: (any Error).self) { try Profile.parse(Array(both.utf8)) }
    }

    @Test(arguments: [("off", true), ("0", true), ("51820", true), ("0x1f", true), ("0XCA6C", true), ("4294967295", true),
                      ("junk", false), ("", false), ("0x", false), ("+5", false), ("-1", false), ("0x+f", false), ("4294967296", false)])
    func wireGuardFwmark(text: String, valid: Bool) {
        var p = sampleProfile("x")
        if case .wireguard(var w) = p.protocol {
            w.fwmark = text
            p.protocol = .wireguard(w)
        }
        let problems = validator.problems(in: p)
        #expect(problems.contains { $0.hasPrefix("protocol.fwmark:") } == !valid, "\(problems)")
    }

    @Test func ikev2NamesEachMissingPiece() {
        let shared = Profile(name: "x", protocol: .ikev2(IKEv2Configuration(serverAddress: "", authenticationMethod: .sharedSecret)))
        #expect(validator.problems(in: shared) == [
            "protocol.serverAddress: missing",
            "protocol.remoteIdentifier: missing (the server's IKE identity)",
            "protocol.sharedSecretSecret: missing (sharedSecret authentication needs it)",
        ])
        let user = Profile(name: "x", protocol: .ikev2(IKEv2Configuration(serverAddress: "vpn", remoteIdentifier: "vpn",
                                                                           authenticationMethod: .certificate, username: "bob")))
        #expect(validator.problems(in: user) == [
            "protocol.identitySecret: missing (certificate authentication needs a client identity)",
            "protocol.passwordSecret: missing (a username needs a password secret)",
            "protocol.caFingerprint: missing (the server's certificate is checked against the remote identifier; that needs a trust anchor)",
        ])
    }

    /// Every missing or inconsistent piece of an IKEv2 profile at once, never one generic line.
    @Test func ikev2NamesEveryProblemAtOnce() {
        var c = IKEv2Configuration(serverAddress: "vpn", authenticationMethod: .none, username: "")
        c.ikeProposals = ["aes256-sha256", "aes128gcm16-sha256-ecp256", "aes256-sha256-modp2048", "rot13-sha1-modp2048"]
        c.childProposals = ["aes128gcm16", "aes256", "aes128-sha256-ecp256-noesn"]
        c.enablePFS = true
        c.mtu = 9000
        #expect(validator.problems(in: Profile(name: "x", protocol: .ikev2(c))) == [
            "protocol.remoteIdentifier: missing (the server's IKE identity)",
            "protocol.username: empty",
            "protocol.passwordSecret: missing (a username needs a password secret)",
            "protocol.caFingerprint: missing (the server's certificate is checked against the remote identifier; that needs a trust anchor)",
            "protocol.ikeProposals[0]: 'aes256-sha256': no key exchange group (modp2048, ecp256, curve25519, ...)",
            "protocol.ikeProposals[1]: 'aes128gcm16-sha256-ecp256': the AEAD 'aes128gcm16' takes no integrity algorithm ('sha256')",
            "protocol.ikeProposals[3]: 'rot13-sha1-modp2048': 'rot13' is not an algorithm strongSwan knows",
            "protocol.childProposals[1]: 'aes256': no integrity algorithm for 'aes256'",
            "protocol.childProposals[0]: 'aes128gcm16' has no key exchange group, and enablePFS needs one",
            "protocol.mtu: 9000 is out of range (1280–1500)",
        ])
    }

    @Test(arguments: [("aes256-sha256-modp2048", true, nil), ("aes128gcm16-prfsha256-ecp256", true, nil), ("default", true, nil),
                      ("chacha20poly1305-prfsha256-curve25519", true, nil), ("aes128-aes256-sha256-sha384-modp3072-ecp256", true, nil),
                      ("aes256gcm16-esn", false, nil), ("aes128-sha1", false, nil),
                      ("aes256-sha256-esn", true, "'esn' is for child (ESP) proposals only"),
                      ("aes256-prfsha256-sha256", false, "'prfsha256' is for IKE proposals only"),
                      ("sha256-modp2048", true, "no encryption algorithm"),
                      ("aes256--sha256", true, "an empty algorithm (two '-' in a row, or one at an end)"),
                      ("aes128gcm16-aes256-modp2048", true, "mixes the AEAD 'aes128gcm16' with the classic 'aes256' (make two proposals)")])
    func proposalsAsCharonTakesThem(proposal: String, ike: Bool, problem: String?) {
        #expect(IKEv2Proposal.problem(proposal, ike: ike) == problem)
    }

    @Test func missingSecretsAreListedSeparately() {
        let v = ProfileValidator(secretExists: { $0 == "private-key" })
        var p = sampleProfile("x")
        if case .wireguard(var w) = p.protocol {
            w.peers[0].presharedKeySecret = "psk"
            p.protocol = .wireguard(w)
        }
        #expect(v.missingSecrets(in: p) == ["peers[0].presharedKeySecret: secret 'psk' is not set"])
    }

    @Test(arguments: [
        ("10.0.0.1", true), ("10.0.0.1/0", true), ("10.0.0.1/32", true), ("10.0.0.1/33", false),
        ("::/0", true), ("fd00::1/128", true), ("fd00::1/129", false), ("10.1", false), ("10.0.0.1/", false),
        ("10.0.0.1/+1", false), ("", false), ("1.2.3.4/8/8", false),
    ])
    func cidr(text: String, valid: Bool) {
        #expect((CIDR(text) != nil) == valid)
    }

    @Test(arguments: [
        ("198.18.0.1:51820", true), ("[2001:db8::1]:51820", true), ("vpn.example.com:443", true),
        ("198.18.0.1", false), ("2001:db8::1:51820", false), ("host:0", false), ("host:65536", false), (":51820", false),
        ("[::1:51820", false), ("host:12a", false),
    ])
    func endpoint(text: String, valid: Bool) {
        if case .success = Endpoint.parse(text) { #expect(valid) } else { #expect(!valid) }
    }
}
