import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// `vpnctl import x.nmconnection` end to end: the store, the secrets, and
/// what the user is told to do next.
@Suite struct NMKeyfileCommandTests {
    @Test func importsAnOpenVPNKeyfileAndNamesTheUnsavedPassword() throws {
        let h = Harness()
        let r = h.run("import", h.fixture("nm/ovpn-office.nmconnection"), "--name", "work")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout.contains("imported 'work' (openvpn, id "))
        #expect(r.stdout.contains("secrets stored: key, tls-auth\n"))
        #expect(r.stdout.contains("next: vpnctl start work (it asks for the password; or store it first: vpnctl secret set work password)\n"))
        #expect(r.stderr.contains("note: secret 'password' is unset (vpn.password-flags=2: NetworkManager does not save it); set it with: vpnctl secret set work password\n"))
        #expect(r.stderr.contains("note: not carried (vpnctl has no such setting for this profile): vpn.static-key-direction\n"))
        let list = h.run("secret", "list", "work")
        #expect(list.stdout.contains("password"))
        // The JSON of the import lists the same notes, as data.
        let again = h.run("import", h.fixture("nm/sswan-eap.nmconnection"), "--name", "ipsec", "--json")
        #expect(again.code == 0, "\(again.stderr)")
        let json = jsonObject(again.stdout)
        #expect(json["protocol"] as? String == "ikev2")
        #expect(json["secrets"] as? [String] == ["password"])
        // --keep-id: NetworkManager's connection.uuid becomes the profile's id.
        let kept = h.run("import", h.fixture("nm/wg-office.nmconnection"), "--keep-id", "--json")
        #expect(kept.code == 0, "\(kept.stderr)")
        #expect(jsonObject(kept.stdout)["id"] as? String == "5f0c7d0e-2a4b-4c3e-9d41-0b7f3c2a1e10")
    }

    @Test func refusesAnUnknownPluginByName() {
        let h = Harness()
        let file = h.write("pptp.nmconnection", "[connection]\nid=old\ntype=vpn\n\n[vpn]\nservice-type=org.freedesktop.NetworkManager.pptp\ngateway=198.18.0.1\n")
        let r = h.run("import", file)
        #expect(r.code == 5)
        #expect(r.stderr.contains("vpn.service-type 'org.freedesktop.NetworkManager.pptp': vpnctl imports org.freedesktop.NetworkManager.openvpn and org.freedesktop.NetworkManager.strongswan connections only"))
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/preferences.json"))
    }
}
