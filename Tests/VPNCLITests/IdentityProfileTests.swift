import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore

/// Issue 30: a .mobileconfig holding only PKCS#12 identities is what `create
/// --identity` takes, and import says so; a .sswan's encrypted p12 opens with
/// --identity-password-stdin.
@Suite struct IdentityProfileTests {
    typealias PKI = MobileConfigCommandTests.PKI

    /// A profile of identity payloads: (PayloadDisplayName, p12, Password or nil).
    static func identities(_ payloads: [(String, [UInt8], String?)]) -> String {
        PropertyList.dict(["PayloadType": .string("Configuration"), "PayloadVersion": .integer(1), "PayloadIdentifier": .string("t.ids"),
                           "PayloadContent": .array(payloads.enumerated().map { i, p in
                               var d: [String: PropertyList] = ["PayloadType": .string("com.apple.security.pkcs12"), "PayloadUUID": .string("ID-\(i)"),
                                                                "PayloadIdentifier": .string("t.ids.\(i)"), "PayloadDisplayName": .string(p.0),
                                                                "PayloadContent": .data(p.1)]
                               if let pw = p.2 { d["Password"] = .string(pw) }
                               return .dict(d)
                           })]).xmlDocument()
    }

    static func clientP12(_ pki: PKI, cn: String) throws -> [UInt8] {
        try pki.openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(cn).key",
                        "-out", "\(cn).csr", "-subj", "/CN=\(cn)")
        try pki.openssl("x509", "-req", "-in", "\(cn).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "\(cn).pem", "-days", "30")
        try pki.openssl("pkcs12", "-export", "-in", "\(cn).pem", "-inkey", "\(cn).key", "-out", "\(cn).p12", "-passout", "pass:p12-pass")
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: pki.path("\(cn).p12"))))
    }

    func create(_ h: Harness, _ name: String, identity: String, _ extra: String...) -> Harness.Result {
        h.run(["create", name, "ikev2", "--server", "198.18.0.1", "--remote-id", "vpn.lab.test", "--auth", "certificate",
               "--identity", identity, "--ca", h.fixture("sswan/ca.pem")] + extra)
    }

    func identitySecret(_ h: Harness, _ r: Harness.Result) throws -> String {
        let id = try #require(jsonObject(r.stdout)["id"] as? String)
        return try String(contentsOfFile: h.configDir + "/secrets/\(id)/identity", encoding: .utf8)
    }

    @Test func aPKCS12OnlyMobileconfigIsAnIdentityForCreateAndImportSaysSo() throws {
        let h = Harness()
        let pki = try PKI()
        let alice = try Self.clientP12(pki, cn: "alice")
        let file = h.write("alice.mobileconfig", Self.identities([("Alice", alice, "p12-pass")]))

        let imported = h.run("import", file)
        #expect(imported.code == 5)
        #expect(imported.stderr.hasPrefix("vpnctl: \(file) holds only an identity (PKCS#12 'Alice'); use it with vpnctl create NAME ikev2 --identity \(file)\n"),
                "\(imported.stderr)")

        let made = create(h, "road", identity: file, "--json")
        #expect(made.code == 0, "\(made.stderr)")
        let identity = try identitySecret(h, made)
        #expect(identity.contains("-----BEGIN CERTIFICATE-----") && identity.contains("PRIVATE KEY-----"))
        let prefs = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        #expect(!prefs.contains("PRIVATE KEY") && prefs.contains("\"identitySecret\""))
    }

    @Test func withoutAPasswordInThePayloadItIsReadFromStdinAndAWrongOneIsNamed() throws {
        let h = Harness()
        let pki = try PKI()
        let file = h.write("alice.mobileconfig", Self.identities([("Alice", try Self.clientP12(pki, cn: "alice"), nil)]))
        h.stdin = Array("nope\n".utf8)
        let wrong = create(h, "road", identity: file)
        #expect(wrong.code == 5)
        #expect(wrong.stderr.contains("identity payload 'Alice': wrong password for the PKCS#12 file"), "\(wrong.stderr)")
        h.stdin = Array("p12-pass\n".utf8)
        let ok = create(h, "road", identity: file, "--json")
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(try identitySecret(h, ok).contains("PRIVATE KEY-----"))
    }

    @Test func severalIdentitiesArePickedByName() throws {
        let h = Harness()
        let pki = try PKI()
        let file = h.write("ids.mobileconfig", Self.identities([("Alice", try Self.clientP12(pki, cn: "alice"), "p12-pass"),
                                                                ("Bob", try Self.clientP12(pki, cn: "bob"), "p12-pass")]))
        let imported = h.run("import", file)
        #expect(imported.stderr.contains("holds only identities (PKCS#12 'Alice', 'Bob'); use one with vpnctl create NAME ikev2 --identity \(file) --identity-payload 'Alice'"),
                "\(imported.stderr)")
        let unsaid = create(h, "road", identity: file)
        #expect(unsaid.code == 2)
        #expect(unsaid.stderr.contains("holds 2 identities (PKCS#12 'Alice', 'Bob'); say which with --identity-payload NAME"), "\(unsaid.stderr)")
        let unknown = create(h, "road", identity: file, "--identity-payload", "Carol")
        #expect(unknown.code == 2 && unknown.stderr.contains("has no identity payload named 'Carol'; it has 'Alice', 'Bob'"), "\(unknown.stderr)")
        let bob = create(h, "road", identity: file, "--identity-payload", "Bob", "--json")
        #expect(bob.code == 0, "\(bob.stderr)")
        let bobPEM = try String(contentsOfFile: pki.path("bob.pem"), encoding: .utf8)
        #expect(try identitySecret(h, bob).hasPrefix(bobPEM))
        #expect(create(h, "other", identity: h.fixture("sswan/ca.pem"), "--identity-payload", "Bob").stderr
                    .contains("--identity-payload picks a payload of a .mobileconfig"))
    }

    /// A .p12 is DER too, and its first bytes name a pkcs7 OID: it must not be
    /// taken for a signed .mobileconfig (it was: "signed profile refused").
    @Test func aPlainP12IsStillReadAsOne() throws {
        let h = Harness()
        let pki = try PKI()
        let p12 = try Self.clientP12(pki, cn: "alice")
        #expect(!Crypto.looksLikeCMS(p12) && !MobileConfig.recognizes(p12))
        h.stdin = Array("p12-pass\n".utf8)
        let ok = create(h, "road", identity: pki.path("alice.p12"), "--json")
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(try identitySecret(h, ok).contains("PRIVATE KEY-----"))
    }

    /// A .p12 is opened by libcrypto, as a .mobileconfig's identity payload
    /// is: the same words for a wrong password and for what is no PKCS#12.
    @Test func aP12WithAWrongPasswordOrNoneAtAllIsNamedAsAnIdentityPayloadIs() throws {
        let h = Harness()
        let pki = try PKI()
        _ = try Self.clientP12(pki, cn: "alice")
        let p12 = pki.path("alice.p12")
        h.stdin = Array("nope\n".utf8)
        let wrong = create(h, "road", identity: p12)
        #expect(wrong.code == 5)
        #expect(wrong.stderr.hasPrefix("vpnctl: \(p12): wrong password for the PKCS#12 file (its integrity check fails)\n"), "\(wrong.stderr)")
        #expect(wrong.stderr.contains("check the password (from --secret-file or standard input)"), "\(wrong.stderr)")
        h.stdin = Array("p12-pass\n".utf8)
        let notP12 = create(h, "road", identity: h.fixture("sswan/ca.pem"))
        #expect(notP12.code == 5)
        #expect(notP12.stderr.hasPrefix("vpnctl: \(h.fixture("sswan/ca.pem")): not a PKCS#12 file"), "\(notP12.stderr)")
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/preferences.json"))
    }

    @Test func anIdentityNoVPNPayloadUsesIsNamedNotDropped() throws {
        let h = Harness()
        let pki = try PKI()
        let ca = try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
        let text = PropertyList.dict(["PayloadType": .string("Configuration"), "PayloadVersion": .integer(1), "PayloadIdentifier": .string("t.mix"),
                                      "PayloadContent": .array([
                                          .dict(["PayloadType": .string("com.apple.security.pkcs12"), "PayloadUUID": .string("ID-1"),
                                                 "PayloadIdentifier": .string("t.mix.id"), "PayloadDisplayName": .string("Alice"),
                                                 "Password": .string("p12-pass"), "PayloadContent": .data(try Self.clientP12(pki, cn: "alice"))]),
                                          .dict(["PayloadType": .string("com.apple.security.pem"), "PayloadIdentifier": .string("t.mix.ca"),
                                                 "PayloadContent": .data(Array(ca.utf8))]),
                                      ])]).xmlDocument()
        let r = h.run("import", h.write("mix.mobileconfig", text))
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stderr.contains("payload 'Alice' ('t.mix.id'): no VPN payload uses this identity"), "\(r.stderr)")
    }

    @Test func aSswansEncryptedP12OpensWithIdentityPasswordStdin() throws {
        let h = Harness()
        h.stdin = Array("p12-pass\n".utf8)
        let r = h.run("import", h.fixture("sswan/cert-split.sswan"), "--name", "office", "--identity-password-stdin", "--json")
        #expect(r.code == 0, "\(r.stderr)")
        let out = jsonObject(r.stdout)
        #expect(out["secrets"] as? [String] == ["identity"] && (out["trustAnchors"] as? [String])?.count == 1)
        let eap = h.run("import", h.fixture("sswan/eap.sswan"), "--name", "road")
        #expect(eap.code == 0 && eap.stdout.contains("next: vpnctl start road (it asks for the password; or store it first: vpnctl secret set road password)"), "\(eap.stdout)\(eap.stderr)")
        let conf = h.write("wg.conf", "[Interface]\nPrivateKey = \(String(repeating: "A", count: 43))=\n")
        let refused = h.run("import", conf, "--identity-password-stdin")
        #expect(refused.code == 2 && refused.stderr.contains("--identity-password-stdin is for a .mobileconfig or a strongSwan app profile (.sswan)"))
    }
}
