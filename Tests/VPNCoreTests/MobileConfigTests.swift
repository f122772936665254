import Foundation
import Testing
@testable import VPNCore

@Suite struct MobileConfigTests {
    func read(_ fixture: String, name: String? = nil) throws -> MobileConfig.Contents {
        try MobileConfig.read(try Fixtures.bytes("mobileconfig/\(fixture)"), source: fixture, defaultName: "imported",
                              options: MobileConfig.Options(name: name))
    }

    @Test func wireGuardPayloadGoesThroughTheWgQuickImporter() throws {
        let c = try read("wireguard.mobileconfig")
        #expect(c.identifier == "com.example.vpn")
        #expect(c.items.count == 1)
        let item = c.items[0]
        #expect(item.payloadIdentifier == "com.example.vpn.wg-office")
        let p = item.result.profile
        #expect(p.name == "wg-office")
        guard case .wireguard(let w) = p.protocol else { Issue.record("not wireguard"); return }
        #expect(w.addresses == ["10.0.0.2/32", "fd00::2/128"])
        #expect(w.peers.first?.endpoint == "198.18.0.1:51820")
        #expect(item.result.secrets["private-key"] == Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        #expect(p.onDemand.enabled)
        #expect(p.onDemand.rules == [OnDemandRule(action: .disconnect, interfaceType: .wifi, ssids: ["Office"]),
                                     OnDemandRule(action: .connect, interfaceType: .cellular)])
        // EvaluateConnection cannot run on Linux: left out, and said so, not a failed import.
        #expect(c.notes.contains { $0.contains("OnDemandRules[2] (EvaluateConnection) left out: Linux has no per-connection hook") })
        let json = String(decoding: try JSONEncoder().encode(p), as: UTF8.self)
        #expect(!json.contains("yAnz5TF"))
    }

    @Test func binaryAndXMLFormsImportTheSame() throws {
        let xml = try read("wireguard.mobileconfig"), binary = try read("wireguard-binary.mobileconfig")
        #expect(xml.items[0].result.profile.protocol == binary.items[0].result.profile.protocol)
        #expect(xml.items[0].result.profile.onDemand == binary.items[0].result.profile.onDemand)
        #expect(xml.items[0].result.secrets == binary.items[0].result.secrets)
    }

    @Test func openVPNConnectDirectiveMapGoesThroughTheOvpnImporter() throws {
        let c = try read("openvpn.mobileconfig")
        let r = c.items[0].result
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.remotes == [.init(host: "vpn.example.com", port: 1194, proto: "udp"), .init(host: "198.18.0.1", port: 443, proto: "tcp")])
        #expect(o.username == "alice")
        #expect(o.passwordSecret == "password")
        #expect(r.secrets["password"] == Array("correct horse battery".utf8))
        #expect(o.tlsCryptSecret == "tls-crypt")
        #expect(o.caFingerprints.count == 1)
        #expect(r.anchors.count == 1)
        #expect(o.options.contains("remote-cert-tls server"))
        #expect(o.options.contains("cipher AES-256-GCM"))
        #expect(c.notes.contains { $0.contains("OpenVPN Connect settings not imported: vpn-on-demand") })
        #expect(r.profile.onDemand == OnDemand(enabled: true, rules: [OnDemandRule(action: .connect)]))
    }

    @Test func otherSubTypesBecomeProviderProfilesWithSecretsApart() throws {
        let r = try read("provider.mobileconfig").items[0].result
        guard case .provider(let p) = r.profile.protocol else { Issue.record("not provider"); return }
        #expect(p.providerIdentifier == "com.acme.vpn.tunnel")
        #expect(p.providerConfiguration == ["Region": "eu-west", "Port": "8443", "Obfuscate": "true",
                                            "serverAddress": "gw.acme.example", "username": "bob"])
        #expect(p.secrets == ["APIToken": "vendor-APIToken", "password": "password"])
        #expect(r.secrets["vendor-APIToken"] == Array("tok-123".utf8))
        #expect(r.secrets["password"] == Array("pw-bob".utf8))
    }

    @Test func ikev2PayloadMapsOntoTheIKEv2ModelWithItsAnchor() throws {
        let c = try read("ikev2.mobileconfig")
        #expect(c.anchors.count == 1)
        #expect(c.anchors[0].subject.contains("CN=Example VPN Root CA"))
        let r = c.items[0].result
        guard case .ikev2(let i) = r.profile.protocol else { Issue.record("not ikev2"); return }
        #expect(i.serverAddress == "198.18.0.1")
        #expect(i.remoteIdentifier == "vpn.example.com")
        #expect(i.localIdentifier == "alice@example.com")
        #expect(i.authenticationMethod == .sharedSecret)
        #expect(i.sharedSecretSecret == "shared-secret")
        #expect(r.secrets["shared-secret"] == Array("s3cret-psk".utf8))
        #expect(i.username == "alice")
        #expect(r.secrets["password"] == Array("eap-password".utf8))
        #expect(i.caFingerprint == c.anchors[0].fingerprint)
        // OnDemandEnabled as a real (0.0) is read as a flag.
        #expect(r.profile.onDemand.enabled == false)
        // Apple's SA parameters become strongSwan proposals; the child's
        // group is part of its proposal because EnablePFS is set.
        #expect(i.ikeProposals == ["aes256gcm16-prfsha256-ecp256"])
        #expect(i.childProposals == ["aes256gcm16-ecp256"])
        #expect(i.enablePFS == true)
        #expect(i.lifetimeMinutes == 1440)
        #expect(i.deadPeerDetectionRate == .medium)
        #expect(i.disableMOBIKE == nil)
        #expect(i.mtu == 1400)
        #expect(r.profile.includeAllNetworks)
        #expect(r.profile.dnsSettings == DNSSettings(servers: ["10.0.0.1"], searchDomains: ["corp.example"]))
        #expect(!(c.notes + r.notes).contains { $0.contains("not carried") || $0.contains("DNS dictionary") })
    }

    @Test func appleSecurityAssociationParametersMapBothWays() throws {
        let cases: [([String: PropertyList], Bool, Bool, String)] = [
            ([:].merging(["EncryptionAlgorithm": .string("AES-128")]) { $1 }, true, false, "aes128-sha256-modp2048"),
            (["EncryptionAlgorithm": .string("ChaCha20Poly1305"), "IntegrityAlgorithm": .string("SHA2-512"), "DiffieHellmanGroup": .integer(31)],
             true, false, "chacha20poly1305-prfsha512-curve25519"),
            (["EncryptionAlgorithm": .string("3DES"), "IntegrityAlgorithm": .string("SHA1-96"), "DiffieHellmanGroup": .real(2)], false, false, "3des-sha1"),
            (["EncryptionAlgorithm": .string("AES-256"), "DiffieHellmanGroup": .string("20")], false, true, "aes256-sha256-ecp384"),
        ]
        for (dict, ike, pfs, proposal) in cases {
            let r = AppleIKEv2Parameters.read(dict, field: "f", ike: ike, withGroup: pfs)
            #expect(r.problems == [])
            #expect(r.proposal == proposal)
            #expect(IKEv2Proposal.problem(proposal, ike: ike) == nil, "\(proposal) is one charon takes")
            let back = try #require(AppleIKEv2Parameters.dictionary(proposal, ike: ike, lifetimeMinutes: nil))
            #expect(AppleIKEv2Parameters.read(back, field: "f", ike: ike, withGroup: pfs).proposal == proposal)
        }
        // Only a lifetime: strongSwan's defaults.
        #expect(AppleIKEv2Parameters.read(["LifeTimeInMinutes": .integer(60)], field: "f", ike: true, withGroup: false)
                == .init(proposal: nil, lifetimeMinutes: 60))
        // What Apple's keys cannot say.
        #expect(AppleIKEv2Parameters.dictionary("aes256-sha256-prfsha384-modp2048", ike: true, lifetimeMinutes: nil) == nil)
        #expect(AppleIKEv2Parameters.dictionary("camellia256-sha256-modp2048", ike: true, lifetimeMinutes: nil) == nil)
        let bad = AppleIKEv2Parameters.read(["EncryptionAlgorithm": .string("AES-512"), "DiffieHellmanGroup": .integer(99),
                                             "LifeTimeInMinutes": .integer(5), "Extra": .bool(true)], field: "f", ike: true, withGroup: false)
        #expect(bad.proposal == nil)
        #expect(bad.problems.count == 3)
        #expect(bad.problems[0].contains("f.EncryptionAlgorithm 'AES-512' is not one of DES, 3DES, AES-128"))
        #expect(bad.unknownKeys == ["Extra"])
    }

    @Test func ikev2TuningRefusalsAndDNSProtocol() throws {
        func ike(_ extra: [String: PropertyList], top: [String: PropertyList] = [:]) -> [UInt8] {
            var d: [String: PropertyList] = ["RemoteAddress": .string("h"), "RemoteIdentifier": .string("h"),
                                             "AuthenticationMethod": .string("SharedSecret"), "SharedSecret": .string("s")]
            d.merge(extra) { $1 }
            var f: [String: PropertyList] = ["VPNType": .string("IKEv2"), "IKEv2": .dict(d)]
            f.merge(top) { $1 }
            return doc([vpn("a", f)])
        }
        for (extra, expected) in [(["DeadPeerDetectionRate": PropertyList.string("Often")], "DeadPeerDetectionRate 'Often' is not None, Low"),
                                  (["MTU": .integer(9000)], "MTU '9000' is not a number from 1280 to 1500"),
                                  (["DisableMOBIKE": .string("no")], "DisableMOBIKE is a string, not a flag"),
                                  (["ChildSecurityAssociationParameters": .dict(["IntegrityAlgorithm": .string("MD5")])], "IntegrityAlgorithm 'MD5'")] {
            let e = #expect(throws: VPNError.self) { try MobileConfig.read(ike(extra), source: "t", defaultName: "d") }
            #expect((e?.problems ?? []).contains { $0.contains(expected) }, "\(e?.problems ?? []) should say \(expected)")
        }
        let doh = try MobileConfig.read(ike([:], top: ["DNS": .dict(["DNSProtocol": .string("HTTPS"), "ServerAddresses": .array([.string("10.0.0.1")])])]),
                                        source: "t", defaultName: "d")
        #expect(doh.items[0].result.profile.dnsSettings == nil)
        #expect(doh.notes.contains { $0.contains("DNS.DNSProtocol 'HTTPS'") })
        let match = try MobileConfig.read(ike(["EnforceRoutes": .integer(1)], top: ["DNS": .dict(["ServerAddresses": .array([.string("10.0.0.1")]),
                                                                         "SupplementalMatchDomains": .array([.string("corp.example")])])]),
                                          source: "t", defaultName: "d")
        let p = match.items[0].result.profile
        #expect(p.dnsSettings == DNSSettings(servers: ["10.0.0.1"], matchDomains: ["corp.example"]))
        #expect(p.enforceRoutes && !p.includeAllNetworks)
    }

    @Test func oneBadPayloadRefusesTheWholeProfileNamingEachProblem() throws {
        let e = #expect(throws: VPNError.self) { try read("hostile.mobileconfig") }
        #expect(e?.message.contains("nothing was imported") == true)
        let problems = e?.problems ?? []
        #expect(problems.contains { $0.contains("'com.example.vpn.wg-office'") && $0.contains("PostUp runs a shell command") })
        #expect(problems.contains { $0.contains("'com.example.vpn.bad'") && $0.contains("VendorConfig.up") && $0.contains("runs a program") })
        #expect(problems.contains { $0.contains("VendorConfig.dev") && $0.contains("tap") })
    }

    /// Issue 29 item 12: the profile reader's refusal of a reference of 2^63
    /// (which trapped) is a configurationInvalid error (exit 5) naming the file
    /// and the offset.
    @Test func item12_hugeObjectReferenceIsAnInvalidProfileNamingTheOffset() {
        let bytes = PropertyListTests.bplist([[0xA1, 0x80, 0, 0, 0, 0, 0, 0, 0]], refSize: 8)
        #expect(MobileConfig.recognizes(bytes))
        do {
            _ = try MobileConfig.read(bytes, source: "huge.mobileconfig", defaultName: "imported")
            Issue.record("accepted")
        } catch let e as VPNError {
            #expect(e.code == .configurationInvalid)
            #expect(e.message.contains("huge.mobileconfig is not a readable configuration profile"), "\(e.message)")
            #expect(e.message.contains("reference to object 9223372036854775808 at offset 9"), "\(e.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func encryptedProfilesAreRefusedByName() throws {
        let e = #expect(throws: VPNError.self) { try read("encrypted.mobileconfig") }
        #expect(e?.message.contains("encrypted profile (IsEncrypted)") == true)
    }

    func doc(_ payloads: [PropertyList], extra: [String: PropertyList] = [:]) -> [UInt8] {
        var top: [String: PropertyList] = ["PayloadType": .string("Configuration"), "PayloadVersion": .real(1.0),
                                           "PayloadIdentifier": .string("t.profile"), "PayloadContent": .array(payloads)]
        top.merge(extra) { $1 }
        return Array(PropertyList.dict(top).xmlDocument().utf8)
    }

    func vpn(_ id: String, _ fields: [String: PropertyList]) -> PropertyList {
        var d: [String: PropertyList] = ["PayloadType": .string("com.apple.vpn.managed"), "PayloadIdentifier": .string(id)]
        d.merge(fields) { $1 }
        return .dict(d)
    }

    @Test func refusalsNameThePayloadAndTheProblem() throws {
        let cases: [([PropertyList], String)] = [
            ([vpn("a", ["VPNType": .string("L2TP")])], "'a': VPNType 'L2TP' is not supported"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.wireguard.macos")])], "needs a VendorConfig"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.wireguard.ios"), "VendorConfig": .dict([:])])], "no WgQuickConfig"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"), "VendorConfig": .dict(["n": .array([])])])], "VendorConfig.n is an array"),
            ([vpn("a", ["VPNType": .string("IKEv2"), "IKEv2": .dict(["RemoteAddress": .string("h"), "AuthenticationMethod": .string("Certificate"), "PayloadCertificateUUID": .string("U")])])],
             "names no identity"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("net.openvpn.connect.app"),
                        "VendorConfig": .dict(["remote": .string("h 1194"), "verb": .string("3\nup /bin/sh")])])], "VendorConfig.verb spans lines"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("net.openvpn.connect.app"),
                        "VendorConfig": .dict(["remote": .string("h 1194"), "key": .string("/root/.ssh/id_rsa")])])], "VendorConfig.key is not an inline PEM"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"), "VendorConfig": .dict([:]), "OnDemandEnabled": .string("yes")])],
             "OnDemandEnabled is a string, not a flag"),
            ([.dict(["PayloadType": .string("com.apple.security.root"), "PayloadContent": .data([0x30, 0x03, 1, 2, 3])])], "not a DER X.509 certificate"),
            ([.dict(["PayloadType": .string("com.apple.security.pem"), "PayloadContent": .data(Array("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n".utf8))])],
             "holds a private key"),
            // (With a VPN payload: a profile of identities alone is for `create --identity`, IdentityProfileTests.)
            ([.dict(["PayloadType": .string("com.apple.security.pkcs12"), "PayloadUUID": .string("U"), "PayloadContent": .data([1])]),
              vpn("a", ["VPNType": .string("IKEv2"), "IKEv2": .dict(["RemoteAddress": .string("h"), "AuthenticationMethod": .string("Certificate"), "PayloadCertificateUUID": .string("U")])])],
             "no Password"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"), "VendorConfig": .dict([:]), "UserDefinedName": .string("x")]),
              vpn("b", ["VPNType": .string("VPN"), "VPNSubType": .string("com.y"), "VendorConfig": .dict([:]), "UserDefinedName": .string("x")])],
             "its profile name 'x' is also"),
            ([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"), "VendorConfig": .dict([:]), "UserDefinedName": .string("-rf")])],
             "starts with '-'"),
        ]
        for (payloads, expected) in cases {
            do {
                let c = try MobileConfig.read(doc(payloads), source: "t", defaultName: "d")
                Issue.record("accepted (\(expected)): \(c.items.map(\.result.profile))")
            } catch let e as VPNError {
                let all = ([e.message] + e.problems).joined(separator: "\n")
                #expect(all.contains(expected), "\(all) should say \(expected)")
            }
        }
    }

    @Test func topLevelRefusals() throws {
        let cases: [([UInt8], String)] = [
            (Array(PropertyList.array([]).xmlDocument().utf8), "not a configuration profile"),
            (Array(PropertyList.dict(["PayloadType": .string("com.apple.vpn.managed")]).xmlDocument().utf8), "not 'Configuration'"),
            (Array(PropertyList.dict(["PayloadType": .string("Configuration")]).xmlDocument().utf8), "no PayloadIdentifier"),
            (doc([]), "nothing to import"),
            (doc([], extra: ["PayloadVersion": .integer(2)]), "PayloadVersion 2 is not 1"),
            (Array("<plist><dict><key>a</key></dict></plist>".utf8), "not a readable configuration profile"),
        ]
        for (bytes, expected) in cases {
            let e = #expect(throws: VPNError.self) { try MobileConfig.read(bytes, source: "t", defaultName: "d") }
            let all = ([e?.message ?? ""] + (e?.problems ?? [])).joined(separator: "\n")
            #expect(all.contains(expected), "\(all) should say \(expected)")
        }
    }

    @Test func secretKeysThatCleanToOneNameStayApart() throws {
        let c = try MobileConfig.read(doc([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"),
                                                      "VendorConfig": .dict(["api token": .string("one"), "api-token": .string("two")])])]),
                                      source: "t", defaultName: "d")
        let r = c.items[0].result
        guard case .provider(let p) = r.profile.protocol else { Issue.record("not provider"); return }
        #expect(Set(p.secrets.values).count == 2)
        #expect(Set(r.secrets.values) == [Array("one".utf8), Array("two".utf8)])
        #expect(r.secrets[p.secrets["api token"]!] == Array("one".utf8))
    }

    @Test func lenientWhereRealFilesAre() throws {
        let c = try MobileConfig.read(doc([vpn("a", ["VPNType": .string("VPN"), "VPNSubType": .string("com.x"), "VendorConfig": .dict([:]),
                                                      "OnDemandEnabled": .real(1.0), "Surprise": .bool(true),
                                                      "VPN": .dict(["OnDemandRules": .array([.dict(["Action": .string("Connect")])])])])],
                                          extra: ["Unheard": .string("x")]),
                                      source: "t", defaultName: "fallback")
        let p = c.items[0].result.profile
        #expect(p.name == "fallback")
        #expect(p.onDemand == OnDemand(enabled: true, rules: [OnDemandRule(action: .connect)]))
        #expect(c.notes.contains { $0.contains("unknown keys, not imported: Surprise") })
        #expect(c.notes.contains { $0.contains("profile: unknown keys, not imported: Unheard") })
    }

    /// Export, then import: the same profile and secrets, for every payload kind and format.
    @Test(arguments: ["wireguard.mobileconfig", "openvpn.mobileconfig", "ikev2.mobileconfig", "provider.mobileconfig"])
    func exportThenImportGivesTheSameProfile(fixture: String) throws {
        let c = try read(fixture)
        var r = c.items[0].result
        r.profile.origin = ProfileOrigin(profileIdentifier: c.identifier, payloadIdentifier: c.items[0].payloadIdentifier)
        var anchors: [String: String] = [:]
        for a in c.anchors { anchors[a.fingerprint] = a.pem }
        for (fp, pem) in r.anchors { anchors[fp] = String(decoding: pem, as: UTF8.self) }
        let lookup: (String) throws -> String = { fp in
            guard let pem = anchors[fp] else { throw VPNError(.configurationInvalid, "no anchor \(fp)") }
            return pem
        }
        var formats: [ProfileExport.Format] = [.mobileconfig, .json]
        if r.profile.protocol.kind == .wireguard { formats.append(.wgQuick) }
        if r.profile.protocol.kind == .openvpn { formats.append(.ovpn) }
        for format in formats {
            let out = try ProfileExport.export(r.profile, as: format, secret: { r.secrets[$0] }, anchor: lookup)
            let again: ImportResult
            switch format {
            case .mobileconfig:
                #expect(out.secretsLeftOut.isEmpty)
                let c2 = try MobileConfig.read(out.bytes, source: "export", defaultName: "x")
                #expect(c2.identifier == c.identifier)
                #expect(c2.items.first?.payloadIdentifier == c.items[0].payloadIdentifier)
                again = try #require(c2.items.first?.result)
            case .ovpn:
                again = try ImportFormat.importChecked(out.bytes, name: r.profile.name, source: "export",
                                                       options: ImportOptions(username: { if case .openvpn(let o) = r.profile.protocol { return o.username }; return nil }()))
            default:
                again = try ImportFormat.importChecked(out.bytes, name: r.profile.name, source: "export")
            }
            var back = again.profile
            if format == .mobileconfig {
                back.origin = ProfileOrigin(profileIdentifier: c.identifier, payloadIdentifier: c.items[0].payloadIdentifier)
            }
            #expect(back.protocol == r.profile.protocol, "\(format): \(String(decoding: out.bytes, as: UTF8.self))")
            #expect(again.profile.name == r.profile.name)
            if format != .json {
                #expect(again.secrets.filter { $0.key != "password" || format != .ovpn } == r.secrets.filter { $0.key != "password" || format != .ovpn }, "\(format)")
            }
            if format == .mobileconfig || format == .json { #expect(again.profile.onDemand == r.profile.onDemand, "\(format)") }
        }
        // Without the secrets, each is named as left out and no value is written.
        let bare = try ProfileExport.export(r.profile, as: .mobileconfig, secret: { _ in nil }, anchor: lookup)
        #expect(Set(bare.secretsLeftOut) == Set(r.profile.secretReferences.map(\.name)))
        let text = String(decoding: bare.bytes, as: UTF8.self)
        for value in r.secrets.values where value.count >= 6 { #expect(!text.contains(String(decoding: value, as: UTF8.self))) }
        #expect(text.contains("secrets left out"))
    }
}
