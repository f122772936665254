import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// NetworkManager keyfiles (Tests/fixtures/nm/, written in the shape
/// nmcli and the keyfile plugin write them) imported into vpnctl's models.
@Suite struct NMKeyfileTests {
    static let directory = Fixtures.root.appendingPathComponent("fixtures/nm").path

    func load(_ file: String, name: String = "office") throws -> ImportResult {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: "\(Self.directory)/\(file)")))
        return try ImportFormat.importChecked(bytes, name: name, source: file, options: ImportOptions(baseDirectory: Self.directory))
    }

    func problems(_ text: String, base: String? = nil) -> [String] {
        do {
            _ = try ImportFormat.importProfile(Array(text.utf8), name: "p", source: "p.nmconnection", options: ImportOptions(baseDirectory: base))
            Issue.record("imported")
            return []
        } catch let e as VPNError {
            return e.problems
        } catch {
            Issue.record("\(error)")
            return []
        }
    }

    @Test func detectsByTheConnectionSection() throws {
        #expect(ImportFormat.detect("# exported\n[connection]\nid=x\ntype=vpn\n") == .networkManager)
        #expect(ImportFormat.detect("[connection]\ntype = wireguard\n") == .networkManager)
        // A wg-quick file is not mistaken for one, nor a [connection] with no type.
        #expect(ImportFormat.detect("[Interface]\nPrivateKey = x\n") == .wgQuick)
        #expect(ImportFormat.detect("[connection]\nid=x\n") == nil)
        #expect(ImportFormat.detect("[vpn]\ntype=vpn\n") == nil)
    }

    @Test func wireguardKeyfileMapsToTheWireGuardModel() throws {
        let r = try load("wg-office.nmconnection")
        guard case .wireguard(let w) = r.profile.protocol else { Issue.record("not wireguard"); return }
        #expect(r.profile.name == "office")
        #expect(w.privateKeySecret == "private-key")
        #expect(w.listenPort == 51821 && w.fwmark == "51820" && w.mtu == 1420)
        #expect(w.interfaceName == "wg-office")
        #expect(w.table == nil)
        #expect(w.addresses == ["10.10.0.2/32", "fd10::2/128"])
        #expect(w.dns == ["10.10.0.1", "corp.example"])
        #expect(r.profile.dnsSettings == DNSSettings(matchDomains: ["lab.example"]))
        #expect(w.peers.count == 2)
        #expect(w.peers[0] == WireGuardPeer(publicKey: "JP6f7l/j7Nfc/7ntPUZ41BKxjLtimNrX5P6m6jgeA2M=", presharedKeySecret: "peer1-preshared-key",
                                            allowedIPs: ["10.10.0.0/16", "fd10::/64"], endpoint: "vpn.example.com:51820", persistentKeepalive: 25))
        // preshared-key-flags=1: an agent keeps it; the reference stays, unset.
        #expect(w.peers[1].presharedKeySecret == "peer2-preshared-key" && w.peers[1].allowedIPs == ["10.20.0.0/16"])
        #expect(Set(r.secrets.keys) == ["private-key", "peer1-preshared-key"])
        // NetworkManager's uuid is the id the file names, for --keep-id.
        #expect(r.fileID?.lowercasedString == "5f0c7d0e-2a4b-4c3e-9d41-0b7f3c2a1e10")
        #expect(r.summary.noEffect == ["connection.autoconnect", "connection.permissions", "connection.timestamp", "ipv6.addr-gen-mode"])
        #expect(r.secrets["private-key"] == Array("33c5gf09EV8YQHpYQ/pvogE+x5zrxOhedN6CniSB7Oc=".utf8))
        let json = String(decoding: try JSONEncoder().encode(r.profile), as: UTF8.self)
        #expect(!json.contains("33c5gf09") && !json.contains("twHBckFl"))
        #expect(r.notes.contains("secret 'peer2-preshared-key' is unset (wireguard-peer.QDn02ZSVKKf+AwTUEfePZU1IxcFi/wgHz2393iytAT0=.preshared-key-flags=1: a secret agent keeps it); set it with: vpnctl secret set office peer2-preshared-key"))
        #expect(r.notes.contains("line 35 (ipv4.route2): 192.0.2.0/24 is not carried: vpnctl routes a WireGuard tunnel's allowed IPs; add it to a peer's allowed-ips"))
        #expect(!r.notes.contains { $0.contains("route1") })
        #expect(r.notes.contains("connection.id 'Office WireGuard': the profile is named 'office' (another with --name NAME)"))
        #expect(r.notes.contains("no effect here (vpnctl keeps its own state, names and users): connection.autoconnect, connection.permissions, connection.timestamp, ipv6.addr-gen-mode"))
        // ip4-auto-default-route=0: no peer has 0.0.0.0/0, so no default route either way.
        #expect(!r.notes.contains { $0.contains("ip4-auto-default-route") })
    }

    @Test func wireguardPeerRoutesOffAndNeverDefaultAreNamed() throws {
        let text = """
        [connection]
        type=wireguard
        [wireguard]
        private-key-flags=2
        peer-routes=false
        [wireguard-peer.JP6f7l/j7Nfc/7ntPUZ41BKxjLtimNrX5P6m6jgeA2M=]
        endpoint=[2001:db8::1]:51820
        allowed-ips=0.0.0.0/0;::/0;
        [ipv4]
        address1=10.0.0.2/24
        never-default=true

        """
        let r = try ImportFormat.importChecked(Array(text.utf8), name: "wg", source: "wg.nmconnection")
        guard case .wireguard(let w) = r.profile.protocol else { Issue.record("not wireguard"); return }
        #expect(w.table == "off")
        #expect(w.privateKeySecret == "private-key" && r.secrets.isEmpty)
        #expect(r.notes.contains("secret 'private-key' is unset (wireguard.private-key-flags=2: NetworkManager does not save it); set it with: vpnctl secret set wg private-key"))
        // With no routes at all, never-default is kept by construction.
        #expect(!r.notes.contains { $0.contains("never-default") })
        let full = text.replacingOccurrences(of: "peer-routes=false\n", with: "")
        let r2 = try ImportFormat.importChecked(Array(full.utf8), name: "wg", source: "wg.nmconnection")
        let auto = full.replacingOccurrences(of: "never-default=true\n", with: "").replacingOccurrences(of: "[wireguard]\n", with: "[wireguard]\nip6-auto-default-route=0\n")
        let r3 = try ImportFormat.importChecked(Array(auto.utf8), name: "wg", source: "wg.nmconnection")
        #expect(r3.notes.contains("line 4 (wireguard.ip6-auto-default-route): not carried: a peer's allowed-ips hold ::/0, so vpnctl sends all of ipv6 through the tunnel; narrow allowed-ips to keep the default route outside"))
        #expect(r2.notes.contains("line 10 (ipv4.never-default): not carried: a peer's allowed-ips hold 0.0.0.0/0, so vpnctl sends all of ipv4 through the tunnel; narrow allowed-ips to keep the default route outside"))
    }

    @Test func openvpnPasswordTLSWithRelativeAndInlineFiles() throws {
        let r = try load("ovpn-office.nmconnection", name: "work")
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.remotes == [.init(host: "vpn.example.com", port: 1194, proto: "udp"), .init(host: "198.18.0.1", port: 443, proto: "tcp")])
        #expect(o.username == "alice")
        // password-flags=2: not saved, so unset and named; the import still succeeds.
        #expect(o.passwordSecret == "password" && r.secrets["password"] == nil)
        #expect(r.notes.contains("secret 'password' is unset (vpn.password-flags=2: NetworkManager does not save it); set it with: vpnctl secret set work password"))
        #expect(o.keySecret == "key")
        let key = try String(contentsOfFile: "\(Self.directory)/certs/client.key", encoding: .utf8)
        #expect(r.secrets["key"] == Array(key.utf8), "the inline key, its \\n escapes resolved")
        let cert = try String(contentsOfFile: "\(Self.directory)/certs/client.crt", encoding: .utf8)
        #expect(o.certificate == cert)
        let ta = Array(try Data(contentsOf: URL(fileURLWithPath: "\(Self.directory)/ta.key")))
        #expect(o.tlsAuthSecret == "tls-auth" && r.secrets["tls-auth"] == ta)
        let fp = try #require(o.caFingerprints.first)
        #expect(o.caFingerprints.count == 1 && r.anchors[fp] != nil)
        #expect(Set(r.secrets.keys) == ["key", "tls-auth"])
        #expect(o.options == [
            "key-direction 1", "cipher AES-256-GCM", "data-ciphers AES-256-GCM:AES-128-GCM:CHACHA20-POLY1305", "auth SHA256",
            "remote-cert-tls server", "tun-mtu 1400", "verify-x509-name \"CN=vpn.example.com, O=Example\" subject", "comp-lzo no",
            "pull-filter ignore redirect-gateway", "pull-filter ignore dhcp-option",
            "route 10.20.0.0 255.255.0.0", "route 10.30.0.0 255.255.0.0 vpn_gateway 50", "route-ipv6 fd20::/48",
        ])
        #expect(r.profile.dnsSettings == DNSSettings(servers: ["10.8.0.1"], searchDomains: ["corp.example"]))
        #expect(r.notes.contains("not carried (vpnctl has no such setting for this profile): vpn.static-key-direction"))
        #expect(r.notes.contains("no effect here (vpnctl keeps its own state, names and users): connection.autoconnect, connection.permissions, ipv6.addr-gen-mode"))
        #expect(!r.notes.contains { $0.contains("in place of") }, "ignore-auto-dns=true: the file's servers replace the pushed ones, as vpnctl does")
    }

    @Test func openvpnRefusesAnEncryptedKeyAndStaticKeyMode() throws {
        let base = """
        [connection]
        type=vpn
        [vpn]
        service-type=org.freedesktop.NetworkManager.openvpn
        remote=vpn.example.com
        ca=ca.pem
        cert=certs/client.crt
        key=certs/encrypted.key
        cert-pass-flags=1

        """
        #expect(problems(base, base: Self.directory) == [
            "line 8 (vpn.key): the key is encrypted, and vpnctl cannot give openvpn its passphrase: decrypt it (openssl pkey -in KEY -out PLAIN) and import again",
        ])
        #expect(problems(base.replacingOccurrences(of: "cert-pass-flags=1", with: "connection-type=static-key"), base: Self.directory) == [
            "line 9 (vpn.connection-type): 'static-key' is not supported; vpnctl imports tls, password and password-tls",
        ])
        #expect(problems(base.replacingOccurrences(of: "ca=ca.pem", with: "ca=missing.pem"), base: Self.directory).first
                == "line 6 (vpn.ca): the file 'missing.pem' does not exist (a relative path is read from the keyfile's directory)")
    }

    @Test func strongswanEAPMapsToTheIKEv2Model() throws {
        let r = try load("sswan-eap.nmconnection", name: "ipsec")
        guard case .ikev2(let i) = r.profile.protocol else { Issue.record("not ikev2"); return }
        #expect(i.serverAddress == "vpn.example.org" && i.remoteIdentifier == "vpn.example.org")
        #expect(i.authenticationMethod == IKEv2Configuration.AuthenticationMethod.none)
        #expect(i.username == "alice" && i.passwordSecret == "password")
        #expect(r.secrets == ["password": Array("correct horse\\battery".utf8)])
        #expect(i.caFingerprint != nil && r.anchors[i.caFingerprint!] != nil)
        #expect(i.ikeProposals == ["aes256-sha256-modp2048", "aes128-sha256-ecp256"])
        #expect(i.childProposals == ["aes256gcm16-modp2048"])
        #expect(i.useServerVirtualIP == true)
        #expect(r.profile.dnsSettings == DNSSettings(servers: ["10.9.0.1"]))
        #expect(!r.notes.contains { $0.contains("not carried") }, "\(r.notes)")
        let json = String(decoding: try JSONEncoder().encode(r.profile), as: UTF8.self)
        #expect(!json.contains("horse"))
    }

    @Test func strongswanUnsupportedMethodsAndSettingsAreNamed() throws {
        let text = """
        [connection]
        type=vpn
        [vpn]
        service-type=org.freedesktop.NetworkManager.strongswan
        address=vpn.example.org
        method=agent

        """
        #expect(problems(text) == [
            "line 6 (vpn.method): 'agent' is not supported; vpnctl imports eap, psk and key (a certificate and its key file), not an ssh-agent or a smartcard",
        ])
        let psk = text.replacingOccurrences(of: "method=agent", with: "method=psk\npassword-flags=1\nencap=yes\n[ipv4]\nnever-default=true\nroute1=10.0.0.0/8")
        let r = try ImportFormat.importChecked(Array(psk.utf8), name: "s", source: "s.nmconnection")
        guard case .ikev2(let i) = r.profile.protocol else { Issue.record("not ikev2"); return }
        #expect(i.authenticationMethod == .sharedSecret && i.sharedSecretSecret == "shared-secret" && r.secrets.isEmpty)
        #expect(r.notes.contains("not carried (vpnctl has no such setting for this profile): vpn.encap, ipv4.never-default, ipv4.route1"))
    }

    @Test func malformedKeyfilesGiveClearErrors() throws {
        let head = "[connection]\ntype=wireguard\n"
        // A peer after the line under test, so that its problem is the only one.
        let peer = "[wireguard-peer.JP6f7l/j7Nfc/7ntPUZ41BKxjLtimNrX5P6m6jgeA2M=]\nendpoint=vpn.example.com:51820\nallowed-ips=0.0.0.0/0;\n"
        #expect(problems(head + "[wireguard]\nprivate-key=a\\qb\n" + peer) == ["line 4 (wireguard.private-key): the escape '\\q' is not one GLib knows (\\s \\n \\t \\r \\\\ \\;)"])
        #expect(problems(head + "[wireguard]\nprivate-key=ab\\\n" + peer) == ["line 4 (wireguard.private-key): a '\\' at the end of the value (write '\\\\' for a backslash)"])
        #expect(problems("[vpn]\nservice-type=org.freedesktop.NetworkManager.openvpn\n") == ["no [connection] section"])
        #expect(problems(head + "[wireguard]\nprivate-key=short\n" + peer) == ["line 4 (wireguard.private-key): not a WireGuard key (44 characters of base64 encoding 32 bytes)"])
        #expect(problems("[connection]\ntype=vpn\n[vpn]\nservice-type=org.freedesktop.NetworkManager.pptp\n")
                == ["vpn.service-type 'org.freedesktop.NetworkManager.pptp': vpnctl imports org.freedesktop.NetworkManager.openvpn and org.freedesktop.NetworkManager.strongswan connections only"])
        #expect(problems("[connection]\ntype=802-3-ethernet\n")
                == ["connection.type '802-3-ethernet' is not a VPN; vpnctl imports wireguard and vpn (openvpn, strongswan) connections"])
        #expect(problems(head + "[wireguard]\nlisten-port=1\nlisten-port=2\n")
                == ["line 5: wireguard.listen-port is given twice (first at line 4); NetworkManager would use the last one: keep only the one you mean"])
        #expect(problems(head + "[ipv4]\n[ipv4]\n") == ["line 4: section [ipv4] again (first at line 3); keep one"])
        #expect(problems(head + "oops\n[broken\n") == ["line 3: expected 'key=value' or '[section]'", "line 4: section header '[broken' is not '[name]'"])
        #expect(problems(head + "[wireguard]\nmtu=big\n" + peer) == ["line 4 (wireguard.mtu): 'big' must be a number from 0 to 65535"])
        let big = head + "# " + String(repeating: "x", count: ImportFormat.maximumSize) + "\n"
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importProfile(Array(big.utf8), name: "p", source: "big.nmconnection")
        }
        #expect(e?.message == "big.nmconnection is larger than 1 MiB; that is not a VPN configuration file")
    }

    @Test func listValuesKeepEscapedSeparators() {
        #expect(NMKeyfile.splitList("a;b\\;c;;d;").map(String.init) == ["a", "b\\;c", "", "d"])
        var problem: String?
        #expect(NMKeyfile.unescape("b\\;c\\sd\\\\", problem: &problem) == "b;c d\\")
        #expect(problem == nil)
    }
}

extension NMKeyfileTests {
    @Test func usernameOptionAndIPv6OffForOpenVPN() throws {
        let text = """
        [connection]
        type=vpn
        [vpn]
        service-type=org.freedesktop.NetworkManager.openvpn
        connection-type=password
        remote=vpn.example.com
        ca=ca.pem
        username=alice
        [vpn-secrets]
        password=pw
        [ipv6]
        method=disabled

        """
        let r = try ImportFormat.importChecked(Array(text.utf8), name: "o", source: "o.nmconnection",
                                               options: ImportOptions(username: "bob", baseDirectory: Self.directory))
        guard case .openvpn(let o) = r.profile.protocol else { Issue.record("not openvpn"); return }
        #expect(o.username == "bob" && o.passwordSecret == "password" && r.secrets["password"] == Array("pw".utf8))
        #expect(o.options == ["pull-filter ignore ifconfig-ipv6", "pull-filter ignore route-ipv6"])
        let lz4 = text.replacingOccurrences(of: "username=alice\n", with: "username=alice\ncompress=lz4-v2\n")
        let z = try ImportFormat.importChecked(Array(lz4.utf8), name: "o", source: "o.nmconnection", options: ImportOptions(baseDirectory: Self.directory))
        #expect(z.notes.contains { $0.hasPrefix("'compress lz4-v2': openvpn 2.6's default, allow-compression asym, applies") })
        let e = #expect(throws: VPNError.self) {
            try ImportFormat.importChecked(try Data(contentsOf: URL(fileURLWithPath: "\(Self.directory)/wg-office.nmconnection")).map { $0 },
                                           name: "w", source: "wg.nmconnection", options: ImportOptions(username: "bob"))
        }
        #expect(e?.code == .usage)
    }
}
