import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore

/// Issue 32: `create` and `export` take their per-protocol answers from the
/// profile's model; their output stays what it was.
@Suite struct ProtocolModelCommandTests {
    /// create's last lines: import's next steps for WireGuard and OpenVPN,
    /// none for IKEv2 (its help names them).
    @Test func createEndsWithTheNextStepsButForIKEv2() {
        let h = Harness()
        h.stdin = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n".utf8)
        let wg = h.run("create", "w", "wireguard", "--private-key-file", "-", "--address", "10.0.0.2/32", "--peer-public-key",
                       "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", "--allowed-ips", "0.0.0.0/0", "--endpoint", "198.18.0.1:51820")
        #expect(wg.code == 0, "\(wg.stderr)")
        #expect(wg.stdout.hasSuffix("""
            secrets stored: private-key
            public key: HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw= (give this to the server as this peer's key)
            next: vpnctl start w

            """), "\(wg.stdout)")
        h.stdin = Array("pw\n".utf8)
        let ovpn = h.run("create", "o", "openvpn", "--remote", "vpn.example.com", "--ca", h.fixture("sswan/ca.pem"), "--username", "bob")
        #expect(ovpn.code == 0 && ovpn.stdout.hasSuffix("\nnext: vpnctl start o\n"), "\(ovpn.stdout)\(ovpn.stderr)")
        h.stdin = Array("psk\n".utf8)
        let ike = h.run("create", "i", "ikev2", "--server", "198.18.0.1", "--remote-id", "vpn.lab.test", "--auth", "psk")
        #expect(ike.code == 0 && ike.stdout.hasSuffix("; kept outside: 198.18.0.1\nsecrets stored: shared-secret\n"), "\(ike.stdout)\(ike.stderr)")
        #expect(!ike.stdout.contains("next:"))

        // Without --format, each is written in its own format.
        #expect(h.run("export", "w").stdout.contains("[Interface]\n"))
        #expect(h.run("export", "o").stdout.contains("\nclient\ndev tun\nremote vpn.example.com 1194 udp\n"))
        #expect(h.run("export", "i").stdout.hasPrefix("<?xml"))
        let refused = h.run("export", "i", "--format", "wg-quick")
        #expect(refused.code == 2 && refused.stderr.hasPrefix("vpnctl: 'i' is an ikev2 profile; --format wg-quick is for wireguard profiles\n"))
    }
}
