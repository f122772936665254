import Foundation
import Testing
@testable import VPNCore
import VPNSystem

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
        let fp = try #require(o.caFingerprints.first)
        #expect(o.caFingerprints.count == 1 && r.anchors[fp] != nil && TrustAnchor.isFingerprint(fp))
        #expect(o.options.contains("cipher AES-256-GCM"))
        #expect(o.options.contains("remote-cert-tls server"))
        let listed = r.notes.first { $0.hasPrefix("not passed to openvpn") } ?? ""
        #expect(!listed.contains("redirect-gateway"))
        #expect(o.options.contains("redirect-gateway def1"))
        #expect(listed.contains("'route-delay' (line 17: vpnctl sets the addresses and routes itself"))
        #expect(r.summary.noEffect == ["route-delay"])
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
        #expect(OpenVPNDirectives.tokenize(#"verify-x509-name "CN=my server" name # comment"#) == ["verify-x509-name", "CN=my server", "name"])
        #expect(OpenVPNDirectives.tokenize(#"setenv A 'b c' d\ e"#) == ["setenv", "A", "b c", "d e"])
    }

    /// openvpn's parse_line: a quote only opens a word at its start, a
    /// closing quote ends the word, and a stray backslash or an open quote
    /// makes the line unreadable.
    @Test func tokenizerReadsLinesAsOpenVPNDoes() {
        #expect(OpenVPNDirectives.tokenize("verify-x509-name O'Brien name") == ["verify-x509-name", "O'Brien", "name"])
        #expect(OpenVPNDirectives.tokenize(#"verify-x509-name "ab"cd name"#) == ["verify-x509-name", "ab", "cd", "name"])
        #expect(OpenVPNDirectives.tokenize(#"pull-filter ignore "a\"b\\c""#) == ["pull-filter", "ignore", #"a"b\c"#])
        #expect(OpenVPNDirectives.tokenize("cipher a#b ;comment") == ["cipher", "a#b"])
        #expect(OpenVPNDirectives.tokenize(#"cipher "open"#) == nil)
        #expect(OpenVPNDirectives.tokenize(#"cipher a\b"#) == nil)
    }

    /// Every word vpnctl writes reads back as the same word.
    @Test(arguments: ["O'Brien", "a b", #"x"y"#, #"back\slash"#, "#hash", ";semi", "'", "\"", "", "ünï", "a\u{301}\"b"])
    func quotingRoundTrips(word: String) {
        let line = OpenVPNDirectives.render(["verify-x509-name", word, "name"])
        #expect(OpenVPNDirectives.tokenize(line) == ["verify-x509-name", word, "name"], "\(line)")
    }

    @Test func verifyX509NameKeepsItsQuotingThroughImportAndRender() throws {
        let r = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/wrapped-harmless.ovpn"), name: "w", source: "w.ovpn")
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        let stored = try #require(o.options.first { $0.hasPrefix("verify-x509-name") })
        #expect(OpenVPNDirectives.tokenize(stored) == ["verify-x509-name", "O'Brien", "name"])
        let rendered = try OpenVPNLaunch(interface: "utun0", managementSocket: "/run/m", caPath: "/ca.pem").render(o)
        let line = try #require(rendered.split(separator: "\n").first { $0.hasPrefix("verify-x509-name") })
        #expect(OpenVPNDirectives.tokenize(String(line)) == ["verify-x509-name", "O'Brien", "name"])
    }

    /// openvpn reads 'setenv opt D' as D: a wrapped program is refused like a plain one.
    @Test func directivesWrappedInSetenvOptAreRefusedByName() {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("ovpn/setenv-opt.ovpn"), name: "h", source: "setenv-opt.ovpn")
        }
        #expect(e?.problems == [
            "line 5: 'setenv opt script-security 2' allows running programs; vpnctl refuses it (remove the line)",
            "line 6: 'setenv opt up' runs a program; vpnctl refuses to import it (remove the line)",
            "line 7: 'setenv opt plugin' runs a program; vpnctl refuses to import it (remove the line)",
            "line 8: 'setenv opt down' runs a program; vpnctl refuses to import it (remove the line)",
            "line 9: 'setenv opt setenv opt route-up' runs a program; vpnctl refuses to import it (remove the line)",
            "line 10: 'config' makes openvpn read another file of directives; vpnctl keeps every directive in the profile",
        ])
    }

    /// Wrapped directives vpnctl does not pass (or setenv of a variable) are
    /// left out and listed; a wrapped allowed one is passed as itself.
    @Test func harmlessWrappersImportWithoutTheirWrapper() throws {
        let r = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/wrapped-harmless.ovpn"), name: "w", source: "w.ovpn")
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.options == ["ignore-unknown-option block-outside-dns", "cipher AES-256-GCM", "verify-x509-name \"O'Brien\" name", "key-direction 1"])
        let listed = r.notes.first { $0.hasPrefix("not passed to openvpn") } ?? ""
        for n in ["'setenv' (line 8: it only matters to scripts", "'setenv' (line 9: it only", "'writepid' (line 10: vpnctl tracks"] {
            #expect(listed.contains(n), "\(n) not in \(listed)")
        }
        let noEffect = r.notes.first { $0.hasPrefix("no effect on Linux") } ?? ""
        #expect(noEffect.contains("'setenv opt block-outside-dns' (line 6)"), "\(noEffect)")
    }

    @Test func allowedDirectivesHaveTheirArgumentsChecked() {
        let ok = ["key-direction 1", "compress lz4-v2", "compress", "mtu-disc yes", "remote-cert-tls server", #"pull-filter ignore "route ""#,
                  "route 10.0.0.0 255.0.0.0", "route 10.1.0.0 255.255.0.0 net_gateway 5", "route-ipv6 2001:db8::/32", "tun-mtu 1500",
                  "verb 4", "cipher AES-256-GCM", "data-ciphers AES-256-GCM:?CHACHA20-POLY1305", "tls-cipher DEFAULT:@SECLEVEL=0",
                  "resolv-retry infinite", "verify-x509-name vpn.example.com name", "remote-cert-ku a0 88", "--persist-tun",
                  "tls-version-min 1.2 or-highest", "mssfix 1400 mtu", "keepalive 10 60", "explicit-exit-notify"]
        for line in ok { #expect(OpenVPNDirectives.problem(in: line) == nil, "\(line)") }
        let bad: [(String, String)] = [
            ("key-direction 2", "does not fit 'key-direction 0|1'"), ("compress /tmp/x", "does not fit"), ("mtu-disc /x", "does not fit"),
            ("remote-cert-tls /etc/x", "does not fit"), ("pull-filter allow route", "does not fit"), ("route /etc/passwd", "does not fit"),
            ("route-ipv6 10.0.0.0/8", "does not fit"), ("tun-mtu big", "does not fit"), ("verb 12", "does not fit"),
            ("cipher ../x", "does not fit"), ("verify-x509-name x nombre", "does not fit"), ("persist-key now", "does not fit"),
            ("keepalive 10", "does not fit"),
            ("writepid /run/x", "'writepid' is not a directive vpnctl passes"), ("log /etc/passwd", "'log' is not"),
            ("setenv FOO bar", "'setenv' is not"), ("ignore-unknown-option up", "does not fit 'ignore-unknown-option"),
            ("setenv opt up /x", "'setenv opt' makes openvpn read"), ("setenv opt cipher AES-256-GCM", "'setenv opt' makes openvpn read"),
            ("config /x", "'config' makes openvpn read"), ("--up /x", "'up' can run programs"), ("UP /x", "'up' can run programs"),
            ("script-security 1", "'script-security' can run programs"), (#"cipher "x"#, "openvpn cannot read"),
            ("verify-x509-name " + String(repeating: "a", count: 300), "longer than 254 characters"),
        ]
        for (line, problem) in bad {
            #expect(OpenVPNDirectives.problem(in: line)?.contains(problem) == true, "\(line): \(OpenVPNDirectives.problem(in: line) ?? "accepted")")
        }
        // A bad value is quoted, not copied whole.
        #expect((OpenVPNDirectives.problem(in: "cipher " + String(repeating: "x/", count: 5000)) ?? "").count < 200)
    }

    @Test func eachCAOfABlockBecomesAnAnchorOfItsOwn() throws {
        let two = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/two-ca.ovpn"), name: "two", source: "two-ca.ovpn")
        let one = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/one-ca.ovpn"), name: "one", source: "one-ca.ovpn")
        guard case .openvpn(let o2) = two.profile.protocol, case .openvpn(let o1) = one.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o2.caFingerprints == [ca1, ca2])
        #expect(o1.caFingerprints == [ca1])
        #expect(Set(two.anchors.keys) == [ca1, ca2] && Set(one.anchors.keys) == [ca1])
        for (fp, pem) in two.anchors {
            let blocks = PEM.blocks(String(decoding: pem, as: UTF8.self))
            #expect(blocks.count == 1 && blocks[0].der.map(SHA256.hex) == fp)
        }
        #expect(one.anchors[ca1] == two.anchors[ca1])
    }

    @Test func aPrivateKeyInTheCAIsRefusedByName() throws {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(try Fixtures.bytes("ovpn/ca-with-key.ovpn"), name: "k", source: "ca-with-key.ovpn")
        }
        #expect(e?.problems.count == 1)
        #expect(e?.problems.first?.hasPrefix("<ca>: it holds a private key") == true)
        // The same through a referenced ca file.
        let dir = TempDir()
        let block = try Fixtures.text("ovpn/ca-with-key.ovpn").components(separatedBy: "<ca>\n")[1].components(separatedBy: "</ca>")[0]
        FileManager.default.createFile(atPath: dir.path + "/ca.pem", contents: Data(block.utf8))
        let file = try Fixtures.text("ovpn/one-ca.ovpn").replacingOccurrences(of: "<ca>", with: "ca ca.pem\n<x>")
            .replacingOccurrences(of: "</ca>", with: "</x>")
        let f = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array(file.utf8), name: "k", source: "k.ovpn", options: ImportOptions(baseDirectory: dir.path))
        }
        #expect(f?.problems.contains { $0.hasPrefix("<ca>: it holds a private key") } == true, "\(f?.problems ?? [])")
    }

    @Test func usernameWithoutAuthUserPassIsAUsageError() {
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importChecked(try Fixtures.bytes("ovpn/one-ca.ovpn"), name: "u", source: "one-ca.ovpn",
                                           options: ImportOptions(username: "alice"))
        }
        #expect(e?.code == .usage)
        #expect(e?.message.contains("--username") == true && e?.hint?.contains("without --username") == true)
    }

    /// A <connection> block is refused by name (what it holds never reaches
    /// openvpn), and so is any directive or block vpnctl cannot carry: never
    /// a footnote after a success.
    @Test func whatCannotBeCarriedIsRefusedByName() throws {
        let text = try Fixtures.text("ovpn/one-ca.ovpn") + "<connection>\nremote evil.example 443 tcp\nup /bin/sh\n</connection>\n"
        let e = #expect(throws: VPNError.self) { try ImportFormat.importChecked(Array(text.utf8), name: "c", source: "c.ovpn") }
        #expect(e?.problems.contains { $0.contains("<connection> blocks are not supported") && $0.contains("'remote HOST PORT PROTO'") } == true)
        let unknown = try Fixtures.text("ovpn/one-ca.ovpn") + "user nobody\nhttp-proxy 198.18.0.9 3128\n"
        let e2 = #expect(throws: VPNError.self) { try ImportFormat.importChecked(Array(unknown.utf8), name: "c", source: "c.ovpn") }
        #expect(e2?.problems.count == 2)
        #expect(e2?.problems.allSatisfy { $0.contains("is not a directive vpnctl carries") } == true, "\(e2?.problems ?? [])")
        #expect(e2?.problems.first?.contains("'user'") == true)
        let bad = try Fixtures.text("ovpn/one-ca.ovpn") + "auth-user-pass\nstatic-challenge \"Enter your code\" 2\n"
        let e3 = #expect(throws: VPNError.self) {
            try ImportFormat.importChecked(Array(bad.utf8), name: "c", source: "c.ovpn", options: ImportOptions(username: "u"))
        }
        #expect(e3?.problems.contains { $0.contains("does not fit 'static-challenge TEXT 0|1'") } == true, "\(e3?.problems ?? [])")
    }

    /// static-challenge is carried: the code is asked at each start, and
    /// import says so beside the password the file leaves out.
    @Test func aStaticChallengeIsCarriedAndSaidToBeAsked() throws {
        let otp = try Fixtures.text("ovpn/one-ca.ovpn") + "auth-user-pass\nstatic-challenge \"Enter your code\" 1\n"
        let r = try ImportFormat.importChecked(Array(otp.utf8), name: "c", source: "c.ovpn", options: ImportOptions(username: "u"))
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.staticChallenge == .init(text: "Enter your code", echo: true))
        #expect(r.summary.asksFor == ["password", "oneTimeCode"])
        #expect(r.summary.text.contains("asks at each start for: password, one-time code"), "\(r.summary.text)")
        let file = try #require(try ProfileExport.ovpn(o, secret: { _ in nil }, anchor: { _ in "" }).split(separator: "\n").first { $0.hasPrefix("static-challenge") })
        #expect(file == "static-challenge \"Enter your code\" 1")
    }

    /// A huge bad value is quoted in part, not copied into the message.
    @Test func badValuesAreQuotedShort() {
        let long = String(repeating: "x;", count: 50_000)
        let text = "client\ndev \(long)\nproto \(long)\nremote \(long) 1194\nremote ok.example \(long)\nsetenv opt \(long)\ntun-mtu \(long)\n"
        let e = #expect(throws: VPNError.self) { try ImportFormat.importProfile(Array(text.utf8), name: "l", source: "l.ovpn") }
        #expect((e?.problems.count ?? 0) >= 4)
        for p in e?.problems ?? [] { #expect(p.count < 300, "\(p.prefix(120))") }
    }

    @Test func tlsAuthDirectionIsChecked() throws {
        let text = try Fixtures.text("ovpn/wrapped-harmless.ovpn").replacingOccurrences(of: "tls-auth [inline] 1", with: "tls-auth [inline] up")
        let e = #expect(throws: VPNError.self) { try ImportFormat.importProfile(Array(text.utf8), name: "t", source: "t.ovpn") }
        #expect(e?.problems.contains { $0.contains("tls-auth direction 'up' must be 0 or 1") } == true, "\(e?.problems ?? [])")
    }
}

let ca1 = "63bd5318ac8671a64551617edcfaba65fcd4304490402302b41e812786764b48"
let ca2 = "4aa4ddca2218b6454a55c5b5ecb053d168bb44cdcc7b988c8472549e2dcc94ef"

/// Anchors: one certificate per file, checked against the name at start.
@Suite struct TrustStoreTests {
    func anchors() throws -> [String: [UInt8]] {
        try ImportFormat.importChecked(try Fixtures.bytes("ovpn/two-ca.ovpn"), name: "two", source: "two-ca.ovpn").anchors
    }

    @Test func bundleHoldsExactlyTheNamedAnchors() throws {
        let dir = TempDir()
        let trust = TrustStore(configDirectory: dir.path + "/etc")
        for (fp, pem) in try anchors() { try trust.install(pem, fingerprint: fp) }
        let bundle = String(decoding: try trust.bundle([ca1]), as: UTF8.self)
        #expect(PEM.blocks(bundle).compactMap { $0.der.map(SHA256.hex) } == [ca1])
        let both = String(decoding: try trust.bundle([ca2, ca1]), as: UTF8.self)
        #expect(PEM.blocks(both).compactMap { $0.der.map(SHA256.hex) } == [ca2, ca1])
        #expect(throws: VPNError.self) { try trust.bundle([]) }
    }

    @Test func anAnchorWhoseContentIsNotItsNameIsRefused() throws {
        let dir = TempDir()
        let trust = TrustStore(configDirectory: dir.path + "/etc")
        let a = try anchors()
        try trust.install(a[ca1]!, fingerprint: ca1)
        // What vpnctl used to store: the whole <ca> under the first fingerprint.
        try AtomicFile.write(a[ca1]! + a[ca2]!, to: trust.path(ca1), mode: 0o644)
        let two = #expect(throws: VPNError.self) { try trust.bundle([ca1]) }
        #expect(two?.message == "trust anchor \(trust.path(ca1)) holds 2 certificates; an anchor is exactly one certificate, named by its SHA-256")
        #expect(two?.remedy == .reimport)
        try AtomicFile.write(a[ca2]!, to: trust.path(ca1), mode: 0o644)
        let other = #expect(throws: VPNError.self) { try trust.certificate(ca1) }
        #expect(other?.message.contains("a certificate whose SHA-256 is not its name") == true)
        try AtomicFile.write(a[ca1]! + Array("-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n".utf8), to: trust.path(ca1), mode: 0o644)
        #expect(throws: VPNError.self) { try trust.certificate(ca1) }
        let missing = #expect(throws: VPNError.self) { try trust.certificate(ca2) }
        #expect(missing?.message == "trust anchor \(trust.path(ca2)) is not installed")
        // Importing again rewrites the anchor to the one certificate its name stands for.
        try AtomicFile.write(a[ca1]! + a[ca2]!, to: trust.path(ca1), mode: 0o644)
        try trust.install(a[ca1]!, fingerprint: ca1)
        #expect(try trust.bundle([ca1]) == a[ca1]!)
    }
}
