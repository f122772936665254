import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore

@Suite struct CreateCommandTests {
    @Test func everyMissingOptionIsNamedAtOnce() {
        let h = Harness()
        let r = h.run("create", "road", "ikev2", "--auth", "eap")
        #expect(r.code == 2)
        #expect(r.stderr.hasPrefix("vpnctl: create road ikev2 needs --server <host>, --remote-id <id>, --username <user> (with --auth eap), "
                                   + "--ca <file> (the server's certificate is checked against it)\n"))
        #expect(h.run("create", "road", "l2tp").stderr.contains("create makes wireguard, openvpn and ikev2 profiles"))
    }

    @Test func pskFromStdinIsASecretNeverInThePreferences() throws {
        let h = Harness()
        h.stdin = Array("correct horse battery\n".utf8)
        let r = h.run("create", "road", "ikev2", "--server", "198.18.0.1", "--remote-id", "vpn.lab.test", "--local-id", "alice@lab.test",
                      "--auth", "psk", "--json")
        #expect(r.code == 0, "\(r.stderr)")
        let out = jsonObject(r.stdout)
        #expect(out["protocol"] as? String == "ikev2" && out["secrets"] as? [String] == ["shared-secret"])
        let id = try #require(out["id"] as? String)
        #expect(try String(contentsOfFile: "\(h.configDir)/secrets/\(id)/shared-secret", encoding: .utf8) == "correct horse battery")
        let prefs = try String(contentsOfFile: "\(h.configDir)/preferences.json", encoding: .utf8)
        #expect(!prefs.contains("correct horse") && prefs.contains("sharedSecretSecret") && prefs.contains("\"shared-secret\""))
        #expect(!r.stdout.contains("correct horse") && !r.stderr.contains("correct horse"))
        #expect(h.run("create", "road", "ikev2", "--server", "x", "--remote-id", "y", "--auth", "psk").code == 5, "a second 'road'")
    }

    @Test func certificateAuthNeedsCertKeyAndCA() {
        let h = Harness()
        let r = h.run("create", "c", "ikev2", "--server", "s", "--remote-id", "r", "--auth", "certificate")
        #expect(r.code == 2)
        #expect(r.stderr.contains("needs --cert <file> and --key <file>, or --identity <file.p12> (with --auth certificate), --ca <file>"))
        #expect(h.run("create", "c", "ikev2", "--server", "s", "--remote-id", "r", "--auth", "certificate", "--cert", "x", "--ca", "y")
                    .stderr.hasPrefix("vpnctl: create c ikev2 needs --key <file> (with --cert)\n"))
        h.stdin = []
        #expect(h.run("create", "p", "ikev2", "--server", "s", "--remote-id", "r", "--auth", "psk").stderr.contains("no value for the shared secret"))
    }
}

/// Issue 36 item 7: `create NAME wireguard|openvpn` makes the profile that
/// importing the equivalent file makes, secrets and anchors included.
@Suite struct CreateWireGuardOpenVPNTests {
    /// What a store holds for its one profile: the protocol, and each secret's
    /// name, value and mode; the trust anchors' files.
    func stored(_ h: Harness) throws -> (ProtocolConfiguration, [String: String], [String: UInt16], [String]) {
        let store = PreferencesStore(directory: h.configDir)
        let profiles = try store.load()
        #expect(profiles.count == 1)
        let p = try #require(profiles.first)
        var values: [String: String] = [:], modes: [String: UInt16] = [:]
        for ref in p.secretReferences {
            let path = "\(h.configDir)/secrets/\(p.id.lowercasedString)/\(ref.name)"
            values[ref.name] = try String(contentsOfFile: path, encoding: .utf8)
            modes[ref.name] = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.uint16Value
        }
        let anchors = (try? FileManager.default.contentsOfDirectory(atPath: h.configDir + "/trust"))?.sorted() ?? []
        let prefs = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        for v in values.values { #expect(!prefs.contains(v), "a secret value in the preferences") }
        return (p.protocol, values, modes, anchors)
    }

    @Test func item7_createdWireGuardEqualsTheImportedFile() throws {
        let imported = Harness()
        #expect(imported.run("import", imported.fixture("wg/office.conf"), "--name", "office").code == 0)
        let created = Harness()
        let psk = created.write("psk", "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE=\n")
        created.stdin = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n".utf8)
        let r = created.run("create", "office", "wireguard", "--private-key-file", "-", "--address", "10.0.0.2/32", "--address", "fd00::2/128",
                            "--dns", "1.1.1.1,corp.example", "--mtu", "1380", "--peer-public-key", "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                            "--preshared-key-file", psk, "--allowed-ips", "0.0.0.0/0, ::/0", "--endpoint", "198.18.0.1:51820",
                            "--persistent-keepalive", "25")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout.contains("public key: HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw="))
        #expect(!r.stdout.contains("yAnz5TF") && !r.stderr.contains("yAnz5TF"))
        let a = try stored(imported), b = try stored(created)
        #expect(a.0 == b.0)
        #expect(a.1 == b.1 && Set(b.1.keys) == ["private-key", "peer1-preshared-key"])
        #expect(b.2.values.allSatisfy { $0 == 0o600 })
    }

    @Test func item7_createdOpenVPNEqualsTheImportedFile() throws {
        let text = try String(contentsOfFile: Harness().fixture("ovpn/client.ovpn"), encoding: .utf8)
        func block(_ tag: String) -> String {
            let body = text.components(separatedBy: "<\(tag)>\n")[1].components(separatedBy: "</\(tag)>")[0]
            return body
        }
        let imported = Harness()
        imported.stdin = []
        #expect(imported.run("import", imported.fixture("ovpn/client.ovpn"), "--name", "work", "--username", "alice").code == 0)
        // import leaves the password unset; create asks for it: set the same one.
        imported.stdin = Array("s3cret\n".utf8)
        #expect(imported.run("secret", "set", "work", "password").code == 0)
        let created = Harness()
        let ca = created.write("ca.pem", block("ca")), cert = created.write("me.crt", block("cert"))
        let key = created.write("me.key", block("key")), tc = created.write("tc.key", block("tls-crypt"))
        created.stdin = Array("s3cret\n".utf8)
        var args = ["create", "work", "openvpn", "--remote", "vpn.example.com", "--remote", "198.18.0.1:1195:tcp", "--proto", "udp",
                    "--dev-type", "tun", "--ca", ca, "--cert", cert, "--key", key, "--tls-crypt", tc, "--username", "alice"]
        for o in ["resolv-retry infinite", "nobind", "persist-key", "persist-tun", "remote-cert-tls server", "cipher AES-256-GCM",
                  "auth SHA256", "verb 3", "redirect-gateway def1", "route-delay 2"] {
            args += ["--option", o]
        }
        let r = created.run(args)
        #expect(r.code == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("s3cret") && !r.stderr.contains("s3cret"))
        #expect(r.stderr.contains("'route-delay' (--option 'route-delay 2': vpnctl sets the addresses"), "\(r.stderr)")
        #expect(!r.stderr.contains("line 0") && !r.stderr.contains("auth-user-pass:"), "\(r.stderr)")
        let a = try stored(imported), b = try stored(created)
        #expect(a.0 == b.0)
        #expect(a.1 == b.1 && Set(b.1.keys) == ["key", "tls-crypt", "password"])
        #expect(b.2.values.allSatisfy { $0 == 0o600 })
        #expect(a.3 == b.3 && b.3.count == 1)
    }

    @Test func item7_missingAndBadFieldsAreNamed() throws {
        let h = Harness()
        let r = h.run("create", "w", "wireguard", "--generate-key")
        #expect(r.code == 2)
        #expect(r.stderr.hasPrefix("vpnctl: create w wireguard needs --address <prefix>, --peer-public-key <key>, --allowed-ips <prefixes>, --endpoint <host:port>\n"))
        let bad = h.run("create", "w", "wireguard", "--generate-key", "--address", "10.0.0.300/32", "--peer-public-key", "xyz",
                        "--allowed-ips", "0.0.0.0/0", "--endpoint", "198.18.0.1", "--persistent-keepalive", "often")
        #expect(bad.code == 5)
        for field in ["--address: ", "--peer-public-key: ", "--endpoint: ", "--persistent-keepalive: "] {
            #expect(bad.stderr.contains("  - \(field)"), "\(field) in \(bad.stderr)")
        }
        #expect(h.run("create", "w", "wireguard", "--server", "x").stderr.hasPrefix("vpnctl: create w wireguard takes no --server\n"))
        #expect(h.run("create", "w", "wireguard", "--server", "x").code == 2)
        let o = h.run("create", "o", "openvpn", "--remote", "vpn.example.com")
        #expect(o.code == 2 && o.stderr.contains("--ca <file>") && o.stderr.contains("--cert <file> and --key <file>, or --username <user>"))
        let ca = h.write("ca.pem", "not a certificate\n")
        h.stdin = Array("pw\n".utf8)
        let o2 = h.run("create", "o", "openvpn", "--remote", "bad host!", "--ca", ca, "--username", "u", "--option", "up /bin/sh",
                       "--dev-type", "tap")
        #expect(o2.code == 5)
        #expect(o2.stderr.contains("  - --remote: 'bad host!' is not a host name or an IP address"), "\(o2.stderr)")
        #expect(o2.stderr.contains("  - --option 'up /bin/sh': 'up' runs a program"), "\(o2.stderr)")
        #expect(o2.stderr.contains("  - --dev-type: 'dev-type tap': only tun is supported"), "\(o2.stderr)")
        let o4 = h.run("create", "o", "openvpn", "--remote", "vpn.example.com", "--ca", ca, "--username", "u",
                       "--option", "script-security 2", "--option", "remote other.example.com", "--option", "cipher")
        #expect(o4.code == 5)
        #expect(o4.stderr.contains("  - --option 'script-security 2': vpnctl runs no scripts"), "\(o4.stderr)")
        #expect(o4.stderr.contains("  - --option 'remote other.example.com': 'remote' is given with its own option"), "\(o4.stderr)")
        #expect(o4.stderr.contains("  - --option 'cipher': 'cipher' does not fit"), "\(o4.stderr)")
        let o3 = h.run("create", "o", "openvpn", "--remote", "vpn.example.com", "--ca", ca, "--username", "u")
        #expect(o3.code == 5 && o3.stderr.contains("--ca: <ca>: no PEM certificate in it"), "\(o3.stderr)")
        #expect(h.run("create", "x", "l2tp").code == 2)
        #expect(try PreferencesStore(directory: h.configDir).load().isEmpty)
    }

    @Test func item7_generatedKeyIsStoredAndItsPublicKeyPrinted() throws {
        let h = Harness()
        let r = h.run("create", "g", "wireguard", "--generate-key", "--address", "10.0.0.2/32", "--peer-public-key",
                      "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "--allowed-ips", "0.0.0.0/0", "--endpoint", "198.18.0.1:51820", "--json")
        #expect(r.code == 0, "\(r.stderr)")
        let out = jsonObject(r.stdout)
        let id = try #require(out["id"] as? String)
        let key = try String(contentsOfFile: "\(h.configDir)/secrets/\(id)/private-key", encoding: .utf8)
        #expect(WireGuardKey.isValid(key))
        #expect(out["publicKey"] as? String == (try X25519.publicKey(base64: key)))
    }

    @Test func item7_genkeyAndPubkey() throws {
        let h = Harness()
        let g = h.run("genkey")
        #expect(g.code == 0)
        let key = String(g.stdout.dropLast())
        let raw = try #require(WireGuardKey.decode(key))
        #expect(raw[0] & 7 == 0 && raw[31] & 0x80 == 0 && raw[31] & 0x40 != 0, "clamped")
        #expect(h.run("genkey").stdout != g.stdout)
        h.stdin = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n".utf8)
        #expect(h.run("pubkey").stdout == "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=\n")
        h.stdin = Array("not a key\n".utf8)
        let bad = h.run("pubkey")
        #expect(bad.code == 5 && bad.stdout.isEmpty && bad.stderr.contains("not a WireGuard private key"))
        h.stdin = []
        #expect(h.run("pubkey").stderr.hasPrefix("vpnctl: no private key on standard input\n"))
    }
}

/// Issue 36 item 8: `vpnctl logs`.
@Suite struct LogsCommandTests {
    @Test func item8_logsOfAnUnknownProfileExit9() {
        let h = Harness()
        let r = h.run("logs", "nope")
        #expect(r.code == 9 && r.stderr.hasPrefix("vpnctl: no profile named 'nope'"))
    }

    @Test func item8_logsPrintsTheRotatedPartFirstAndFilters() throws {
        let h = Harness()
        h.stdin = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n".utf8)
        #expect(h.run("import", h.fixture("wg/office.conf"), "--name", "office").code == 0)
        let id = try #require(try PreferencesStore(directory: h.configDir).load().first?.id)
        let runtime = RuntimeStore(directory: h.runDir)
        try runtime.prepare()
        let old = Timestamp.iso8601(Date().addingTimeInterval(-7200)), recent = Timestamp.iso8601(Date().addingTimeInterval(-60))
        FileManager.default.createFile(atPath: runtime.logPath(id) + ".1", contents: Data("\(old) [#] first\n".utf8))
        FileManager.default.createFile(atPath: runtime.logPath(id), contents: Data("\(old) [#] second\n\(recent) [*] third \u{1B}[2J\n".utf8))
        let all = h.run("logs", "office")
        #expect(all.code == 0)
        #expect(all.stdout == "\(old) [#] first\n\(old) [#] second\n\(recent) [*] third \\u{1B}[2J\n", "escaped, in order")
        #expect(h.run("logs", "office", "--since", "1h").stdout == "\(recent) [*] third \\u{1B}[2J\n")
        let json = jsonObject(h.run("logs", "office", "--since", "1h", "--json").stdout)
        #expect((json["lines"] as? [[String: Any]])?.first?["message"] as? String == "[*] third \u{1B}[2J")
        let bad = h.run("logs", "office", "--since", "yesterday")
        #expect(bad.code == 2 && bad.stderr.contains("'--since <time>'"))
        #expect(h.run("remove", "office").code == 0)
        #expect(!FileManager.default.fileExists(atPath: runtime.logPath(id)) && !FileManager.default.fileExists(atPath: runtime.logPath(id) + ".1"))
    }
}
