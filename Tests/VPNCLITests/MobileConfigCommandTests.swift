import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

/// `vpnctl import x.mobileconfig` end to end in-process: the store, secrets,
/// trust anchors, re-import, signatures and identities. Keys, certificates,
/// PKCS#12 files and signatures are made per run with openssl.
@Suite struct MobileConfigCommandTests {
    func profiles(_ h: Harness) -> [[String: Any]] {
        jsonObject(h.run("list", "--json").stdout)["profiles"] as? [[String: Any]] ?? []
    }

    @Test func importsEveryPayloadKindWithSecretsApart() throws {
        let h = Harness()
        for (file, name, proto) in [("wireguard.mobileconfig", "wg-office", "wireguard"), ("openvpn.mobileconfig", "ovpn-office", "openvpn"),
                                    ("ikev2.mobileconfig", "ike-office", "ikev2"), ("provider.mobileconfig", "acme", "provider")] {
            let r = h.run("import", h.fixture("mobileconfig/\(file)"))
            #expect(r.code == 0, "\(file): \(r.stderr)")
            #expect(r.stdout.contains("imported '\(name)' (\(proto), id "), "\(r.stdout)")
            #expect(r.stdout.hasPrefix("unsigned profile "))
        }
        #expect(profiles(h).count == 4)
        let prefs = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        for secret in ["yAnz5TF", "correct horse", "s3cret-psk", "eap-password", "tok-123", "pw-bob"] {
            #expect(!prefs.contains(secret), "\(secret) is in the preferences")
            for (path, text) in h.allFilesExceptSecrets() { #expect(!text.contains(secret), "\(secret) is in \(path)") }
        }
        #expect(prefs.contains("\"payloadIdentifier\" : \"com.example.ikev2.vpn\""))
        let show = h.run("show", "ike-office")
        #expect(show.stdout.contains("shared secret:       secret 'shared-secret' (set)"), "\(show.stdout)")
        #expect(show.stdout.contains("password:            secret 'password' (set)"), "\(show.stdout)")
        #expect(show.stdout.contains("imported from:       com.example.ikev2 (payload com.example.ikev2.vpn)\n"), "\(show.stdout)")
        // Apple's SA parameters, DPD, PFS, MTU, DNS and the flags are carried.
        for row in ["ike proposals:       aes256gcm16-prfsha256-ecp256", "dead peer detection: medium", "mtu:                 1400",
                    "dns servers:         10.0.0.1", "kill switch:         includeAllNetworks"] {
            #expect(show.stdout.contains(row), "\(show.stdout)")
        }
        // The root payload is an anchor of its own; the ikev2 profile names it.
        let trust = try FileManager.default.contentsOfDirectory(atPath: h.configDir + "/trust")
        #expect(trust.count == 1)
        #expect(prefs.contains(trust[0].replacingOccurrences(of: ".pem", with: "")))
        let secretDir = h.configDir + "/secrets"
        for dir in try FileManager.default.contentsOfDirectory(atPath: secretDir) {
            for f in try FileManager.default.contentsOfDirectory(atPath: secretDir + "/" + dir) {
                let mode = try FileManager.default.attributesOfItem(atPath: "\(secretDir)/\(dir)/\(f)")[.posixPermissions] as? Int
                #expect(mode == 0o600)
            }
        }
    }

    @Test func reimportReplacesUpdatesAndRemoves() throws {
        let h = Harness()
        let two = try twoPayloads(endpoint: "198.18.0.1:51820")
        let first = h.run("import", h.write("two.mobileconfig", two), "--json")
        #expect(first.code == 0, "\(first.stderr)")
        let r1 = jsonObject(first.stdout)
        #expect(r1["changed"] as? Bool == true)
        let ids = Dictionary(uniqueKeysWithValues: profiles(h).map { ($0["name"] as! String, $0["id"] as! String) })

        let again = h.run("import", h.write("two.mobileconfig", two))
        #expect(again.code == 0)
        #expect(again.stdout.contains("unchanged 'wg-a'"))
        #expect(again.stdout.contains("unchanged 'wg-b'"))

        // One endpoint changes: that profile is updated in place, same id, next revision.
        let changed = h.run("import", h.write("two.mobileconfig", try twoPayloads(endpoint: "198.18.0.9:51820")), "--json")
        #expect(changed.code == 0, "\(changed.stderr)")
        let rows = jsonObject(changed.stdout)["profiles"] as? [[String: Any]] ?? []
        #expect(rows.first { $0["name"] as? String == "wg-a" }?["change"] as? String == "updated")
        #expect(rows.first { $0["name"] as? String == "wg-a" }?["revision"] as? Int == 2)
        #expect(rows.first { $0["name"] as? String == "wg-b" }?["change"] as? String == "unchanged")
        let after = Dictionary(uniqueKeysWithValues: profiles(h).map { ($0["name"] as! String, $0["id"] as! String) })
        #expect(after["wg-a"] == ids["wg-a"])

        // The new version drops wg-b: it goes, with its secrets.
        let one = try twoPayloads(endpoint: "198.18.0.9:51820", keepSecond: false)
        let dropped = h.run("import", h.write("two.mobileconfig", one))
        #expect(dropped.code == 0, "\(dropped.stderr)")
        #expect(dropped.stdout.contains("removed 'wg-b'"))
        #expect(profiles(h).map { $0["name"] as! String } == ["wg-a"])
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/secrets/" + ids["wg-b"]!))
    }

    /// A configuration profile with two WireGuard payloads (the second one optional).
    func twoPayloads(endpoint: String, keepSecond: Bool = true) throws -> String {
        // Only wg-a's endpoint follows the argument; wg-b's stays.
        let wg = """
        [Interface]
        PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
        Address = 10.0.0.2/32
        [Peer]
        PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
        AllowedIPs = 0.0.0.0/0
        Endpoint = \(endpoint)
        """
        func payload(_ name: String) -> PropertyList {
            .dict(["PayloadType": .string("com.apple.vpn.managed"), "PayloadIdentifier": .string("t.\(name)"), "UserDefinedName": .string(name),
                   "VPNType": .string("VPN"), "VPNSubType": .string("com.wireguard.ios"),
                   "VendorConfig": .dict(["WgQuickConfig": .string(name == "wg-a" ? wg
                       : wg.replacingOccurrences(of: "10.0.0.2", with: "10.0.0.3").replacingOccurrences(of: endpoint, with: "198.18.0.1:51820"))])])
        }
        let payloads = keepSecond ? [payload("wg-a"), payload("wg-b")] : [payload("wg-a")]
        return PropertyList.dict(["PayloadType": .string("Configuration"), "PayloadVersion": .integer(1), "PayloadIdentifier": .string("t.two"),
                                  "PayloadContent": .array(payloads)]).xmlDocument()
    }

    @Test func aBadPayloadLeavesTheStoreUntouched() throws {
        let h = Harness()
        #expect(h.run("import", h.fixture("wg/office.conf"), "--name", "wg-office").code == 0)
        let before = h.allFilesExceptSecrets().map { "\($0.0)\n\($0.1)" }.sorted()
        let secretsBefore = try FileManager.default.subpathsOfDirectory(atPath: h.configDir + "/secrets").sorted()
        let bad = h.run("import", h.fixture("mobileconfig/hostile.mobileconfig"))
        #expect(bad.code == 5)
        #expect(bad.stderr.contains("nothing was imported"))
        #expect(bad.stderr.contains("PostUp runs a shell command"))
        // A name taken by a hand-made profile refuses the whole file too.
        let clash = h.run("import", h.fixture("mobileconfig/wireguard.mobileconfig"))
        #expect(clash.code == 5)
        #expect(clash.stderr.contains("a profile named 'wg-office' already exists (made by hand); nothing was imported"))
        #expect(h.allFilesExceptSecrets().map { "\($0.0)\n\($0.1)" }.sorted() == before)
        #expect(try FileManager.default.subpathsOfDirectory(atPath: h.configDir + "/secrets").sorted() == secretsBefore)
        let enc = h.run("import", h.fixture("mobileconfig/encrypted.mobileconfig"))
        #expect(enc.code == 5)
        #expect(enc.stderr.contains("encrypted profile (IsEncrypted)"))
        let ca = h.run("import", h.fixture("wg/office.conf"), "--ca", h.fixture("wg/office.conf"))
        #expect(ca.code == 2)
    }

    // MARK: Signed profiles and identities, made with openssl per run

    final class PKI {
        let dir: String
        init() throws {
            dir = NSTemporaryDirectory() + "vpnctl-pki-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
                        "-out", "ca.pem", "-days", "30", "-subj", "/CN=Profile Signing CA")
            try openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "other.key",
                        "-out", "other.pem", "-days", "30", "-subj", "/CN=Some Other CA")
            try openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "signer.key",
                        "-out", "signer.csr", "-subj", "/CN=MDM Signer/O=Example Org")
            try openssl("x509", "-req", "-in", "signer.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                        "-out", "signer.pem", "-days", "30")
        }
        deinit { try? FileManager.default.removeItem(atPath: dir) }

        @discardableResult
        func openssl(_ args: String...) throws -> String { try openssl(args) }

        @discardableResult
        func openssl(_ args: [String]) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            p.arguments = args
            p.currentDirectoryURL = URL(fileURLWithPath: dir)
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            if p.terminationStatus != 0 { throw VPNError(.failure, "openssl \(args.joined(separator: " ")): \(text)") }
            return text
        }

        func sign(_ input: String, output: String) throws {
            try openssl("cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-in", input, "-signer", "signer.pem",
                        "-inkey", "signer.key", "-out", output)
        }

        func path(_ name: String) -> String { dir + "/" + name }
    }

    @Test func signedProfilesAreCheckedAndTheSignerNamed() throws {
        let h = Harness()
        let pki = try PKI()
        try FileManager.default.copyItem(atPath: h.fixture("mobileconfig/wireguard.mobileconfig"), toPath: pki.path("wg.mobileconfig"))
        try pki.sign("wg.mobileconfig", output: "signed.mobileconfig")

        let signed = h.run("import", pki.path("signed.mobileconfig"), "--ca", pki.path("ca.pem"))
        #expect(signed.code == 0, "\(signed.stderr)")
        #expect(signed.stdout.contains("signed by: O=Example Org,CN=MDM Signer (signature verified, chain checked against --ca)"), "\(signed.stdout)")
        #expect(signed.stdout.contains("imported 'wg-office' (wireguard"))
        let again = h.run("import", pki.path("signed.mobileconfig"), "--json")
        #expect(again.code == 0)
        let signer = jsonObject(again.stdout)["signer"] as? [String: Any]
        #expect(signer?["subject"] as? String == "O=Example Org,CN=MDM Signer")
        #expect(signer?["chainVerified"] as? Bool == false)
        #expect(jsonObject(again.stdout)["changed"] as? Bool == false)

        let wrongCA = h.run("import", pki.path("signed.mobileconfig"), "--ca", pki.path("other.pem"))
        #expect(wrongCA.code == 5)
        #expect(wrongCA.stderr.contains("does not chain to the given CA"), "\(wrongCA.stderr)")

        // One byte of the signed content changed: refused, whatever --ca says.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pki.path("signed.mobileconfig"))))
        let at = try #require(Self.find(Array("198.18.0.1:51820".utf8), in: bytes))
        bytes[at + 7] = UInt8(ascii: "9")
        try Data(bytes).write(to: URL(fileURLWithPath: pki.path("tampered.mobileconfig")))
        let tampered = h.run("import", pki.path("tampered.mobileconfig"))
        #expect(tampered.code == 5)
        #expect(tampered.stderr.contains("signed profile refused: the signature does not match the content"), "\(tampered.stderr)")

        // openssl smime, PEM armour, no signer certificate, a detached signature.
        try pki.openssl("smime", "-sign", "-nodetach", "-binary", "-outform", "DER", "-in", "wg.mobileconfig", "-signer", "signer.pem",
                        "-inkey", "signer.key", "-out", "smime.mobileconfig")
        try pki.openssl("smime", "-sign", "-nodetach", "-binary", "-outform", "PEM", "-in", "wg.mobileconfig", "-signer", "signer.pem",
                        "-inkey", "signer.key", "-out", "pem.mobileconfig")
        try pki.openssl("cms", "-sign", "-nodetach", "-binary", "-nocerts", "-outform", "DER", "-in", "wg.mobileconfig", "-signer", "signer.pem",
                        "-inkey", "signer.key", "-out", "nocerts.mobileconfig")
        try pki.openssl("cms", "-sign", "-binary", "-outform", "DER", "-in", "wg.mobileconfig", "-signer", "signer.pem",
                        "-inkey", "signer.key", "-out", "detached.mobileconfig")
        for ok in ["smime", "pem"] {
            let r = Harness().run("import", pki.path("\(ok).mobileconfig"), "--ca", pki.path("ca.pem"))
            #expect(r.code == 0, "\(ok): \(r.stderr)")
            #expect(r.stdout.contains("signed by: O=Example Org,CN=MDM Signer"), "\(ok)")
        }
        let nocerts = h.run("import", pki.path("nocerts.mobileconfig"))
        #expect(nocerts.code == 5)
        #expect(nocerts.stderr.contains("does not carry its signer's certificate"), "\(nocerts.stderr)")
        let detached = h.run("import", pki.path("detached.mobileconfig"))
        #expect(detached.code == 5)
        #expect(detached.stderr.contains("the signature is detached"), "\(detached.stderr)")

        let unsignedWithCA = h.run("import", h.fixture("mobileconfig/wireguard.mobileconfig"), "--ca", pki.path("ca.pem"))
        #expect(unsignedWithCA.code == 5)
        #expect(unsignedWithCA.stderr.contains("is not signed, so --ca cannot check its signer"))
    }

    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        return (0...(hay.count - needle.count)).first { Array(hay[$0..<($0 + needle.count)]) == needle }
    }

    /// An IKEv2 payload with certificate authentication and its PKCS#12
    /// identity, modern (AES) and legacy (RC2-40, OpenSSL 1.x and macOS style).
    @Test(arguments: [false, true])
    func pkcs12IdentitiesBecomeSecrets(legacy: Bool) throws {
        let h = Harness()
        let pki = try PKI()
        try pki.openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=alice")
        try pki.openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "client.pem", "-days", "30")
        try pki.openssl(["pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-out", "client.p12", "-passout", "pass:p12-pass"]
                        + (legacy ? ["-legacy"] : []))
        let p12 = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pki.path("client.p12"))))
        let ca = try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
        func profile(password: String?) -> String {
            var identity: [String: PropertyList] = ["PayloadType": .string("com.apple.security.pkcs12"), "PayloadUUID": .string("ID-1"),
                                                    "PayloadIdentifier": .string("t.ike.id"), "PayloadContent": .data(p12)]
            if let password { identity["Password"] = .string(password) }
            return PropertyList.dict(["PayloadType": .string("Configuration"), "PayloadVersion": .integer(1), "PayloadIdentifier": .string("t.ike"),
                               "PayloadContent": .array([
                                   .dict(identity),
                                   .dict(["PayloadType": .string("com.apple.security.pem"), "PayloadIdentifier": .string("t.ike.ca"),
                                          "PayloadContent": .data(Array(ca.utf8))]),
                                   .dict(["PayloadType": .string("com.apple.vpn.managed"), "PayloadIdentifier": .string("t.ike.vpn"),
                                          "UserDefinedName": .string("ike-cert"), "VPNType": .string("IKEv2"),
                                          "IKEv2": .dict(["RemoteAddress": .string("198.18.0.1"), "RemoteIdentifier": .string("vpn.example.com"),
                                                          "AuthenticationMethod": .string("Certificate"), "PayloadCertificateUUID": .string("ID-1")])]),
                               ])]).xmlDocument()
        }
        let wrong = h.run("import", h.write("ike.mobileconfig", profile(password: "nope")))
        #expect(wrong.code == 5)
        #expect(wrong.stderr.contains("'t.ike.id': wrong password for the PKCS#12 file"), "\(wrong.stderr)")
        // The VPN payload that names the broken identity is not blamed a second time.
        #expect(wrong.stderr.contains("(1 problem)"), "\(wrong.stderr)")
        let ok = h.run("import", h.write("ike.mobileconfig", profile(password: "p12-pass")))
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("secrets stored: identity"))
        #expect(ok.stdout.contains("trust anchor: "))
        let id = try #require(profiles(h).first?["id"] as? String)
        let identity = try String(contentsOfFile: h.configDir + "/secrets/\(id)/identity", encoding: .utf8)
        #expect(identity.contains("-----BEGIN CERTIFICATE-----"))
        #expect(identity.contains("PRIVATE KEY-----"))
        let prefs = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        #expect(!prefs.contains("PRIVATE KEY"))
        #expect(!prefs.contains("p12-pass"))

        // Exported with its secrets, the identity travels as a PKCS#12 payload and
        // imports to the same profile and the same identity secret.
        let out = h.root + "/ike-export.mobileconfig"
        #expect(h.run("export", "ike-cert", "--include-secrets", "--output", out).code == 0)
        let copy = Harness()
        let back = copy.run("import", out)
        #expect(back.code == 0, "\(back.stderr)")
        let copyID = try #require(profiles(copy).first?["id"] as? String)
        #expect(try String(contentsOfFile: copy.configDir + "/secrets/\(copyID)/identity", encoding: .utf8) == identity)
        func protocolPart(_ s: String) -> String { s.components(separatedBy: "\"protocol\"")[1].components(separatedBy: "\"revision\"")[0] }
        #expect(protocolPart(try String(contentsOfFile: copy.configDir + "/preferences.json", encoding: .utf8)) == protocolPart(prefs))

        // No Password in the payload: refused by name, or given on standard input.
        let other = Harness()
        let noPassword = other.write("ike.mobileconfig", profile(password: nil))
        let asked = other.run("import", noPassword)
        #expect(asked.code == 5)
        #expect(asked.stderr.contains("no Password for the PKCS#12 file; give it with --identity-password-stdin"))
        other.stdin = Array("p12-pass\n".utf8)
        let piped = other.run("import", noPassword, "--identity-password-stdin")
        #expect(piped.code == 0, "\(piped.stderr)")
        #expect(other.run("import", other.fixture("wg/office.conf"), "--identity-password-stdin").code == 2)

        // A file that asks for more MAC iterations than vpnctl allows is refused before any is run.
        if !legacy {
            try pki.openssl("pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-out", "slow.p12", "-passout", "pass:p12-pass",
                            "-iter", "1000001")
            let slow = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pki.path("slow.p12"))))
            let e = #expect(throws: Crypto.Problem.self) { try Crypto.pkcs12(slow, password: "p12-pass") }
            #expect(e?.message == "the PKCS#12 file asks for 1000001 MAC iterations (vpnctl allows 1 to 1000000)")
            // The same for the key's own encryption, read before anything is decrypted.
            try pki.openssl("pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key", "-out", "slowbag.p12", "-passout", "pass:p12-pass",
                            "-iter", "1000001", "-nomaciter")
            let slowBag = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pki.path("slowbag.p12"))))
            let e2 = #expect(throws: Crypto.Problem.self) { try Crypto.pkcs12(slowBag, password: "p12-pass") }
            #expect(e2?.message == "the PKCS#12 file asks for 1000001 key-derivation iterations (vpnctl allows up to 1000000)")
        }
    }

    @Test func trustListShowAddRemove() throws {
        let h = Harness()
        #expect(h.run("trust", "list").stderr.contains("no trust anchors"))
        #expect(h.run("import", h.fixture("mobileconfig/ikev2.mobileconfig")).code == 0)
        let list = h.run("trust", "list", "--json")
        let anchors = jsonObject(list.stdout)["anchors"] as? [[String: Any]] ?? []
        #expect(anchors.count == 1)
        let fp = try #require(anchors.first?["fingerprint"] as? String)
        #expect(anchors.first?["usedBy"] as? [String] == ["ike-office"])
        #expect((anchors.first?["subject"] as? String)?.contains("CN=Example VPN Root CA") == true)
        let text = h.run("trust", "list")
        #expect(text.stdout.contains(String(fp.prefix(16))) && text.stdout.contains("ike-office"), "\(text.stdout)")

        // A damaged anchor file is listed as unreadable; the others still show.
        let bogus = String(repeating: "a", count: 64)
        FileManager.default.createFile(atPath: h.configDir + "/trust/\(bogus).pem", contents: Data("junk\n".utf8))
        let damaged = h.run("trust", "list")
        #expect(damaged.code == 0, "\(damaged.stderr)")
        #expect(damaged.stdout.contains("(unreadable: ") && damaged.stdout.contains("ike-office"), "\(damaged.stdout)")
        try FileManager.default.removeItem(atPath: h.configDir + "/trust/\(bogus).pem")

        let show = h.run("trust", "show", String(fp.prefix(10)))
        #expect(show.code == 0, "\(show.stderr)")
        #expect(show.stdout.contains("fingerprint: \(fp)"))
        #expect(show.stdout.contains("-----BEGIN CERTIFICATE-----"))
        #expect(h.run("trust", "show", "abc").code == 9)
        #expect(h.run("trust", "show", String(repeating: "0", count: 64)).code == 9)

        let refused = h.run("trust", "remove", fp)
        #expect(refused.code == 5)
        #expect(refused.stderr.contains("is used by 'ike-office'; it was not removed"))
        #expect(h.run("remove", "ike-office").code == 0)
        let removed = h.run("trust", "rm", fp)
        #expect(removed.code == 0, "\(removed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/trust/\(fp).pem"))

        let pki = try PKI()
        let added = h.run("trust", "add", pki.path("ca.pem"), "--json")
        #expect(added.code == 0, "\(added.stderr)")
        let row = (jsonObject(added.stdout)["added"] as? [[String: Any]])?.first
        #expect(row?["subject"] as? String == "CN=Profile Signing CA")
        let withKey = h.write("bundle.pem", try String(contentsOfFile: pki.path("ca.pem"), encoding: .utf8)
                                            + String(contentsOfFile: pki.path("ca.key"), encoding: .utf8))
        let keyRefused = h.run("trust", "add", withKey)
        #expect(keyRefused.code == 5)
        #expect(keyRefused.stderr.contains("holds a private key"))
        #expect(h.run("trust", "add", h.fixture("wg/office.conf")).code == 5)
    }

    @Test func exportLeavesSecretsOutUnlessAsked() throws {
        let h = Harness()
        #expect(h.run("import", h.fixture("mobileconfig/openvpn.mobileconfig")).code == 0)
        let bare = h.run("export", "ovpn-office")
        #expect(bare.code == 0, "\(bare.stderr)")
        #expect(bare.stdout.hasPrefix("# secrets left out (vpnctl export --include-secrets, as root): tls-crypt, password\n"), "\(bare.stdout)")
        #expect(!bare.stdout.contains("0123456789abcdef"))
        #expect(bare.stdout.contains("<ca>\n-----BEGIN CERTIFICATE-----"))
        #expect(bare.stderr.contains("note: secrets left out: tls-crypt, password"))
        let mc = h.run("export", "ovpn-office", "--format", "mobileconfig")
        #expect(mc.stdout.contains("<string>net.openvpn.connect.app</string>"))
        #expect(!mc.stdout.contains("correct horse"))
        #expect(h.run("export", "ovpn-office", "--format", "wg-quick").code == 2)
        #expect(h.run("export", "ovpn-office", "--format", "pdf").code == 2)

        // As root, with the secrets, to a 0600 file that another store imports to the same profile.
        let file = h.root + "/out.mobileconfig"
        let full = h.run("export", "ovpn-office", "--format", "mobileconfig", "--include-secrets", "--output", file)
        #expect(full.code == 0, "\(full.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(h.run("export", "ovpn-office", "--output", file).code == 1)
        let other = Harness()
        let imported = other.run("import", file)
        #expect(imported.code == 0, "\(imported.stderr)")
        let a = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        let b = try String(contentsOfFile: other.configDir + "/preferences.json", encoding: .utf8)
        func protocolPart(_ s: String) -> String { s.components(separatedBy: "\"protocol\"")[1].components(separatedBy: "\"revision\"")[0] }
        #expect(protocolPart(a) == protocolPart(b))
        #expect(other.run("secret", "list", "ovpn-office").stdout.contains("password"))
        let json = h.run("export", "ovpn-office", "--format", "json")
        let third = Harness()
        let fromJSON = third.run("import", third.write("p.json", json.stdout), "--name", "copy")
        #expect(fromJSON.code == 0, "\(fromJSON.stderr)")
        #expect(fromJSON.stderr.contains("set its secrets with 'vpnctl secret set copy NAME': password, tls-crypt"))
    }

    @Test func applyConvergesADirectoryAndLeavesHandMadeProfilesAlone() throws {
        let h = Harness()
        let dir = h.root + "/fleet"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let office = try String(contentsOfFile: h.fixture("wg/office.conf"), encoding: .utf8)
        try office.write(toFile: dir + "/branch.conf", atomically: true, encoding: .utf8)
        try twoPayloads(endpoint: "198.18.0.1:51820").write(toFile: dir + "/corp.mobileconfig", atomically: true, encoding: .utf8)
        try "ignored".write(toFile: dir + "/.hidden", atomically: true, encoding: .utf8)
        #expect(h.run("import", h.fixture("wg/office.conf"), "--name", "by-hand").code == 0)
        #expect(h.run("import", h.fixture("mobileconfig/provider.mobileconfig")).code == 0)
        func changes(_ r: Harness.Result) -> [String: String] {
            let rows = jsonObject(r.stdout)["profiles"] as? [[String: Any]] ?? []
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["name"] as! String, $0["change"] as! String) })
        }

        let plan = h.run("apply", dir, "--dry-run")
        #expect(plan.code == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("dry run: nothing was changed"))
        #expect(plan.stdout.contains("create 'branch' (wireguard) from \(dir)/branch.conf"))
        #expect(profiles(h).count == 2)

        let first = h.run("apply", dir, "--json")
        #expect(h.run("show", "branch").stdout.contains("imported from: file branch.conf, managed by vpnctl apply"))
        #expect(first.code == 0, "\(first.stderr)")
        #expect(jsonObject(first.stdout)["changed"] as? Bool == true)
        #expect(changes(first) == ["branch": "created", "wg-a": "created", "wg-b": "created"])
        let ids = Dictionary(uniqueKeysWithValues: profiles(h).map { ($0["name"] as! String, $0["id"] as! String) })

        let second = h.run("apply", dir, "--json")
        #expect(jsonObject(second.stdout)["changed"] as? Bool == false)
        #expect(changes(second) == ["branch": "unchanged", "wg-a": "unchanged", "wg-b": "unchanged"])
        let prefsBefore = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)

        // A changed file updates its profile in place; a removed payload goes.
        try twoPayloads(endpoint: "198.18.0.7:51820", keepSecond: false).write(toFile: dir + "/corp.mobileconfig", atomically: true, encoding: .utf8)
        let third = h.run("apply", dir)
        #expect(third.code == 0, "\(third.stderr)")
        #expect(third.stdout.contains("updated 'wg-a' (wireguard)"))
        #expect(third.stdout.contains("removed 'wg-b' (wireguard)"))
        #expect(third.stdout.contains("unchanged 'branch' (wireguard)"))
        let now = Dictionary(uniqueKeysWithValues: profiles(h).map { ($0["name"] as! String, $0["id"] as! String) })
        #expect(now["wg-a"] == ids["wg-a"])
        #expect(now["wg-b"] == nil)
        #expect(!prefsBefore.isEmpty)

        // A removed file removes its profile; hand-made and hand-imported ones stay.
        try FileManager.default.removeItem(atPath: dir + "/branch.conf")
        let fourth = h.run("apply", dir, "--json")
        #expect(changes(fourth) == ["branch": "removed", "wg-a": "unchanged"])
        #expect(Set(profiles(h).map { $0["name"] as! String }) == ["by-hand", "acme", "wg-a"])

        // A file whose profile name a hand-made profile has: refused, nothing changed.
        try office.write(toFile: dir + "/by-hand.conf", atomically: true, encoding: .utf8)
        let before = try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8)
        let clash = h.run("apply", dir)
        #expect(clash.code == 5)
        #expect(clash.stderr.contains("one exists (made by hand); apply never touches it"))
        try FileManager.default.removeItem(atPath: dir + "/by-hand.conf")
        // A bad file: refused, nothing changed.
        try "[Interface]\nPostUp = rm -rf /\n".write(toFile: dir + "/evil.conf", atomically: true, encoding: .utf8)
        let bad = h.run("apply", dir)
        #expect(bad.code == 5)
        #expect(bad.stderr.contains("apply changed nothing"))
        #expect(bad.stderr.contains("PostUp runs a shell command"))
        #expect(try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8) == before)
        #expect(h.run("apply", h.root + "/nope").code == 2)
        // An empty set removes what apply made only when asked to.
        try FileManager.default.removeItem(atPath: dir + "/evil.conf")
        try FileManager.default.removeItem(atPath: dir + "/corp.mobileconfig")
        let empty = h.run("apply", dir)
        #expect(empty.code == 2)
        #expect(empty.stderr.contains("that would remove all 1 profile apply made"))
        let emptied = h.run("apply", dir, "--allow-empty")
        #expect(emptied.code == 0, "\(emptied.stderr)")
        #expect(emptied.stdout.contains("removed 'wg-a'"))
        #expect(Set(profiles(h).map { $0["name"] as! String }) == ["by-hand", "acme"])
    }
}
