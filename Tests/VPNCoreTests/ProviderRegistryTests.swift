import Foundation
import Testing
@testable import VPNCore

@Suite struct ProviderRegistryTests {
    /// What front ends ask a profile without asking its protocol: the anchors
    /// it trusts, the public key its server needs, what an import left unset.
    @Test func eachConfigurationAnswersForItself() throws {
        let anchor = String(repeating: "a", count: 64)
        let ovpn = ProtocolConfiguration.openvpn(OpenVPNConfiguration(remotes: [.init(host: "198.18.0.1")], caFingerprints: [anchor],
                                                                      passwordSecret: "password"))
        #expect(ovpn.anchorReferences == [anchor] && ovpn.model.fieldsToSetBeforeStart == ["protocol.username"])
        #expect(ovpn.model.publicKey(readingSecret: { _ in [] }) == nil)
        let ike = ProtocolConfiguration.ikev2(IKEv2Configuration(serverAddress: "vpn.example.com", caFingerprint: anchor))
        #expect(ike.anchorReferences == [anchor] && ike.model.fieldsToSetBeforeStart.isEmpty)
        let wg = sampleProfile("office").protocol
        #expect(wg.anchorReferences.isEmpty)
        let key = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8)
        #expect(wg.model.publicKey(readingSecret: { _ in key }) != nil)
        #expect(wg.model.publicKey(readingSecret: { _ in throw VPNError(.failure, "unset") }) == nil)
    }

    @Test func eachProtocolFindsItsProviderOrIsNamedAsMissing() throws {
        let wg = try ProviderRegistry.provider(for: sampleProfile("office"))
        #expect(type(of: wg).implementation == "wireguard-go")
        #expect(wg.requirements == ProviderRequirements(program: "wireguard-go", package: "wireguard-go"))
        let ovpn = try ProviderRegistry.provider(for: Profile(name: "o", protocol: .openvpn(OpenVPNConfiguration(
            remotes: [.init(host: "198.18.0.1")], caFingerprints: [String(repeating: "a", count: 64)]))))
        #expect(ovpn.requirements.program == "openvpn" && ovpn.requirements.trustAnchors == [String(repeating: "a", count: 64)])
        let ike = try ProviderRegistry.provider(for: Profile(name: "i", protocol: .ikev2(IKEv2Configuration(serverAddress: "vpn.example.com"))))
        #expect(type(of: ike).implementation == "strongswan")
        #expect(ike.requirements.program == "/usr/lib/ipsec/charon" && ike.requirements.interface == .providerOwns)
        let plugin = try ProviderRegistry.provider(for: Profile(name: "p", protocol: .provider(ProviderConfiguration(providerIdentifier: "com.example.vpn"))))
        #expect(type(of: plugin).implementation == "plugin")
        // A vpnctl without a provider for a protocol names the ones it has.
        let e = #expect(throws: VPNError.self) {
            try ProviderRegistry.provider(for: sampleProfile("office"), among: [OpenVPNProvider.self, CharonProvider.self])
        }
        #expect(e?.code == .providerUnavailable)
        #expect(e?.message == "no provider for wireguard profiles in this vpnctl")
        #expect(e?.hint == "this version starts: openvpn (openvpn), ikev2 (strongswan)")
    }

    @Test func wireGuardRefusesAnExistingInterfaceAndBadKeys() throws {
        var p = sampleProfile("office")
        guard case .wireguard(var w) = p.protocol else { return }
        w.interfaceName = "admin0"
        p.protocol = .wireguard(w)
        let provider = try ProviderRegistry.provider(for: p)
        let env = ProviderEnvironment(configDirectory: "/nonexistent") { $0 == "admin0" }
        let e = #expect(throws: VPNError.self) { try provider.preflight(env) }
        #expect(e?.code == .configurationInvalid)
        #expect(e?.message.contains("admin0 already exists") == true)
        try provider.preflight(ProviderEnvironment(configDirectory: "/nonexistent") { _ in false })
        #expect(throws: VPNError.self) { try provider.checkSecret(name: "private-key", value: Array("not a key".utf8)) }
        try provider.checkSecret(name: "private-key", value: Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        try provider.checkSecret(name: "unrelated", value: Array("anything".utf8))
    }

    @Test func openVPNNamesAMissingAnchor() throws {
        let dir = TempDir()
        let fp = String(repeating: "b", count: 64)
        let provider = try ProviderRegistry.provider(for: Profile(name: "o", protocol: .openvpn(OpenVPNConfiguration(
            remotes: [.init(host: "198.18.0.1")], caFingerprints: [fp]))))
        let e = #expect(throws: VPNError.self) { try provider.preflight(ProviderEnvironment(configDirectory: dir.path) { _ in false }) }
        #expect(e?.message == "trust anchor \(dir.path)/trust/\(fp).pem is not installed")
    }
}
