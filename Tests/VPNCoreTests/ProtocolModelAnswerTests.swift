import Foundation
import Testing
@testable import VPNCore

/// Issue 32: what each protocol's model answers for export and the import
/// summary, pinned per protocol, so that moving an answer into the model
/// cannot change it.
@Suite struct ProtocolModelAnswerTests {
    static let wireguard = sampleProfile("w")
    static let openvpn = Profile(name: "o", protocol: .openvpn(OpenVPNConfiguration(
        remotes: [.init(host: "vpn.example.net")], caFingerprints: [String(repeating: "a", count: 64)],
        username: "bob", passwordSecret: "password")))
    static let ikev2 = Profile(name: "i", protocol: .ikev2(IKEv2Configuration(
        serverAddress: "vpn.example.net", remoteIdentifier: "vpn.example.net", authenticationMethod: .sharedSecret,
        sharedSecretSecret: "shared-secret")))
    static let provider = Profile(name: "p", protocol: .provider(ProviderConfiguration(
        providerIdentifier: "com.example.vpn", providerConfiguration: ["server": "relay.example.net"], secrets: ["token": "token"])))
    static let all = [wireguard, openvpn, ikev2, provider]

    func export(_ p: Profile, _ f: ProfileExport.Format, secret: @escaping (String) -> [UInt8]? = { _ in nil }) throws -> String {
        String(decoding: try ProfileExport.export(p, as: f, secret: secret, anchor: { "anchor \($0.prefix(8))\n" }).bytes, as: UTF8.self)
    }

    @Test func everyProtocolHasItsDefaultExportFormat() {
        #expect(Self.all.map(\.protocol.model.defaultExportFormat) == [.wgQuick, .ovpn, .mobileconfig, .mobileconfig])
    }

    /// json and mobileconfig for every protocol; wg-quick and .ovpn for their own only, refused by name otherwise.
    @Test func everyProtocolIsWrittenInItsFormatsAndRefusedInTheOthers() throws {
        let expected: [[ProfileExport.Format]] = [[.json, .wgQuick, .mobileconfig], [.json, .ovpn, .mobileconfig],
                                                  [.json, .mobileconfig], [.json, .mobileconfig]]
        for (p, formats) in zip(Self.all, expected) {
            #expect(p.protocol.model.exportFormats == formats, "\(p.name)")
            for f in ProfileExport.Format.allCases {
                do {
                    _ = try export(p, f)
                    #expect(formats.contains(f), "\(p.name) written as \(f)")
                } catch let e as VPNError {
                    #expect(!formats.contains(f), "\(p.name) refused as \(f)")
                    #expect(e.code == .usage)
                }
            }
        }
        let messages: [(Profile, ProfileExport.Format, String, String)] = [
            (Self.wireguard, .ovpn, "'w' is a wireguard profile; --format ovpn is for openvpn profiles", "use --format wg-quick, mobileconfig or json"),
            (Self.openvpn, .wgQuick, "'o' is an openvpn profile; --format wg-quick is for wireguard profiles", "use --format ovpn, mobileconfig or json"),
            (Self.ikev2, .ovpn, "'i' is an ikev2 profile; --format ovpn is for openvpn profiles", "use --format mobileconfig, mobileconfig or json"),
            (Self.provider, .wgQuick, "'p' is a provider profile; --format wg-quick is for wireguard profiles", "use --format mobileconfig, mobileconfig or json"),
        ]
        for (p, f, message, hint) in messages {
            #expect(throws: VPNError.self) { try export(p, f) }
            do { _ = try export(p, f) } catch let e as VPNError {
                #expect(e.message == message && e.hint == hint)
            }
        }
    }

    /// Each protocol's payload type, and where the on-demand rules and the
    /// kill-switch flags go: IKEv2's own dictionary, or the VPN dictionary.
    @Test func everyProtocolsMobileconfigPayload() throws {
        let types = [("VPN", "com.wireguard.ios", "VPN"), ("VPN", "net.openvpn.connect.app", "VPN"),
                     ("IKEv2", nil, "IKEv2"), ("VPN", "com.example.vpn", "VPN")]
        for (var p, (type, subType, settingsKey)) in zip(Self.all, types) {
            p.onDemand = OnDemand(enabled: true, rules: [OnDemandRule(action: .connect)])
            p.includeAllNetworks = true
            let plist = try PropertyList.parse(Array(try export(p, .mobileconfig).utf8))
            let payload = try #require(plist.dict?["PayloadContent"]?.array?.last?.dict)
            #expect(payload["VPNType"]?.string == type && payload["VPNSubType"]?.string == subType, "\(p.name)")
            let settings = try #require(payload[settingsKey]?.dict, "\(p.name)")
            #expect(settings["OnDemandEnabled"] == .integer(1) && settings["IncludeAllNetworks"] == .integer(1), "\(p.name)")
            #expect(payload[settingsKey == "VPN" ? "IKEv2" : "VPN"] == nil, "\(p.name)")
        }
        // A provider with nothing for the VPN dictionary has none.
        let bare = try PropertyList.parse(Array(try export(Self.provider, .mobileconfig).utf8))
        #expect(bare.dict?["PayloadContent"]?.array?.last?.dict?["VPN"] == nil)
        // Its password secret is Apple's AuthPassword, the others VendorConfig keys.
        var withPassword = Self.provider
        if case .provider(var c) = withPassword.protocol {
            c.secrets["password"] = "password"
            withPassword.protocol = .provider(c)
        }
        let full = try PropertyList.parse(Array(try export(withPassword, .mobileconfig, secret: { Array("v-\($0)".utf8) }).utf8))
        let payload = try #require(full.dict?["PayloadContent"]?.array?.last?.dict)
        #expect(payload["VPN"]?.dict?["AuthPassword"]?.string == "v-password")
        #expect(payload["VendorConfig"]?.dict == ["server": .string("relay.example.net"), "token": .string("v-token")])
    }

    /// A provider's secrets left out are named in key order, every time (a
    /// dictionary's order is not the same from one process to the next).
    @Test func aProvidersSecretsLeftOutAreNamedInKeyOrder() throws {
        let keys = (0..<12).map { String(UnicodeScalar(UInt8(ascii: "a") + UInt8($0))) }
        let p = Profile(name: "p", protocol: .provider(ProviderConfiguration(
            providerIdentifier: "com.example.vpn", secrets: Dictionary(uniqueKeysWithValues: keys.map { ($0, "s-\($0)") }))))
        let out = try ProfileExport.export(p, as: .mobileconfig, secret: { _ in nil }, anchor: { _ in "" })
        #expect(out.secretsLeftOut == keys.map { "s-\($0)" })
        #expect(out.secretsLeftOut == p.secretReferences.map(\.name))
    }

    @Test func wgQuickAndOvpnAreTheProtocolsOwnFiles() throws {
        let id = "# vpnctl profile id: "
        #expect(try export(Self.wireguard, .wgQuick) == """
            # secrets left out (vpnctl export --include-secrets, as root): private-key
            \(id)\(Self.wireguard.id.lowercasedString)
            \(WGQuick.export(WireGuardConfiguration(privateKeySecret: "private-key", addresses: ["10.0.0.2/32"], peers: [samplePeer]), secret: { _ in nil }))
            """)
        #expect(try export(Self.openvpn, .ovpn) == """
            # secrets left out (vpnctl export --include-secrets, as root): password
            \(id)\(Self.openvpn.id.lowercasedString)
            # username: bob (import with --username bob)
            client
            dev tun
            remote vpn.example.net 1194 udp
            auth-user-pass
            <ca>
            anchor aaaaaaaa
            </ca>

            """)
    }

    @Test func everyProtocolsTunnelSummary() {
        func summary(_ p: Profile) -> String { ImportSummary.of(p).text }
        #expect(summary(Self.wireguard) == "full tunnel (IPv4); no DNS of its own (the system's resolver); kept outside: 198.18.0.1")
        #expect(summary(Self.openvpn) == "the routes the server gives (a full tunnel if it redirects the gateway); DNS as the server gives it; kept outside: vpn.example.net; asks at each start for: password")
        #expect(summary(Self.ikev2) == "the networks the server's traffic selectors offer (a full tunnel if it offers 0.0.0.0/0 or ::/0); DNS as the server gives it; kept outside: vpn.example.net")
        #expect(summary(Self.provider) == "the routes the plugin asks for; no DNS of its own (the system's resolver)")

        var split = WireGuardConfiguration(privateKeySecret: "k", addresses: ["10.0.0.2/32"], dns: ["10.1.0.1", "corp.example"], table: "51",
                                           peers: [WireGuardPeer(publicKey: samplePeer.publicKey, allowedIPs: ["10.1.0.0/16"], endpoint: "10.1.0.9:51820")])
        split.excludedRoutes = ["10.1.5.0/24"]
        #expect(summary(Profile(name: "s", protocol: .wireguard(split)))
                == "split tunnel: 10.1.0.0/16; routes in table 51 (no rule sends traffic there; yours decide); DNS 10.1.0.1, search corp.example; kept outside: 10.1.0.9, 10.1.5.0/24")
        split.table = "off"
        #expect(summary(Profile(name: "s", protocol: .wireguard(split))).hasPrefix("no routes (the profile adds none); "))

        func ovpn(_ options: [String]) -> String {
            summary(Profile(name: "o", protocol: .openvpn(OpenVPNConfiguration(remotes: [.init(host: "a.example"), .init(host: "a.example")], options: options))))
        }
        #expect(ovpn(["route-nopull", "route 10.2.0.0 255.255.0.0", "route-ipv6 fd00:2::/64"])
                == "split tunnel: 10.2.0.0/16, fd00:2::/64; no DNS of its own (the system's resolver); kept outside: a.example")
        #expect(ovpn(["route-nopull"]) == "no routes (the profile adds none); no DNS of its own (the system's resolver); kept outside: a.example")
        #expect(ovpn(["redirect-gateway def1 ipv6", "dhcp-option DNS 10.8.0.1", "dhcp-option DOMAIN corp.example", "dhcp-option DOMAIN corp.example"])
                == "full tunnel (IPv4 and IPv6); DNS 10.8.0.1, search corp.example, for every name; kept outside: a.example")
        #expect(ovpn(["pull-filter ignore redirect-gateway"])
                == "the routes the server gives, never a full tunnel (pull-filter keeps its redirect-gateway out); DNS as the server gives it; kept outside: a.example")

        var selectors = IKEv2Configuration(serverAddress: "vpn.example.net")
        selectors.remoteTrafficSelectors = ["10.3.0.0/16"]
        var narrowed = Profile(name: "n", protocol: .ikev2(selectors))
        narrowed.includeAllNetworks = true
        narrowed.excludeLocalNetworks = true
        #expect(summary(narrowed) == "split tunnel: 10.3.0.0/16; no DNS of its own (the system's resolver); kept outside: vpn.example.net; kill switch: includeAllNetworks, excludeLocalNetworks")
    }

    @Test func thePasswordSecretAndCreatesNextSteps() {
        #expect(Self.all.map(\.protocol.model.passwordSecret) == [nil, "password", nil, nil])
        var eap = IKEv2Configuration(serverAddress: "s")
        eap.passwordSecret = "password"
        #expect(eap.passwordSecret == "password" && (eap as any ConfigurationModel).passwordSecret == "password")
        #expect(Self.all.map(\.protocol.model.createPrintsNextSteps) == [true, true, false, true])
    }
}
