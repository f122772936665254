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
        #expect(h.run("create", "road", "wireguard").stderr.contains("WireGuard and OpenVPN profiles come from their files"))
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
