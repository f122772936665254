import Foundation
import Testing
@testable import VPNCore

@Suite struct ProviderRegistryTests {
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
