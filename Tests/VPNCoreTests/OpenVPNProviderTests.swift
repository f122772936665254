import Foundation
import Testing
@testable import VPNCore

@Suite struct ManagementProtocolTests {
    @Test(arguments: [
        (">STATE:1795971452,CONNECTED,SUCCESS,198.19.8.2,198.18.0.1,1194,,", ManagementMessage.state(name: "CONNECTED", detail: "SUCCESS")),
        (">STATE:1795971452,RECONNECTING,auth-failure,,,,,\r", .state(name: "RECONNECTING", detail: "auth-failure")),
        (">PASSWORD:Need 'Auth' username/password", .password("Need 'Auth' username/password")),
        (">PASSWORD:Verification Failed: 'Auth'", .password("Verification Failed: 'Auth'")),
        (">HOLD:Waiting for hold release:0", .hold("Waiting for hold release:0")),
        (">UPDOWN:UP", .upDown("UP")),
        (">UPDOWN:ENV,ifconfig_local=198.19.8.2", .upDownEnv(key: "ifconfig_local", value: "198.19.8.2")),
        (">UPDOWN:ENV,foreign_option_1=dhcp-option DNS 1.1.1.1", .upDownEnv(key: "foreign_option_1", value: "dhcp-option DNS 1.1.1.1")),
        (">UPDOWN:ENV,END", .upDownEnvEnd),
        (">LOG:1795971452,W,VERIFY ERROR: depth=0, error=certificate has expired: CN=server", .log(flags: "W", message: "VERIFY ERROR: depth=0, error=certificate has expired: CN=server")),
        (">FATAL:Cannot open TUN/TAP dev utun0", .fatal("Cannot open TUN/TAP dev utun0")),
        ("SUCCESS: hold release succeeded", .success("hold release succeeded")),
        ("ERROR: unknown command", .error("unknown command")),
        ("garbage", .other("garbage")),
        (">", .other(">")),
        ("", .other("")),
    ])
    func parses(line: String, expected: ManagementMessage) {
        #expect(ManagementMessage.parse(line) == expected)
    }

    @Test func statesMapToStatuses() {
        for s in ["CONNECTING", "WAIT", "AUTH", "GET_CONFIG", "ASSIGN_IP", "ADD_ROUTES", "RESOLVE", "TCP_CONNECT"] {
            #expect(OpenVPNState.status(s) == .connecting)
        }
        #expect(OpenVPNState.status("CONNECTED") == .connected)
        #expect(OpenVPNState.status("RECONNECTING") == .reasserting)
        #expect(OpenVPNState.status("EXITING") == .disconnecting)
        #expect(OpenVPNState.status("NEW_STATE") == nil)
    }

    @Test func quotingForCommands() {
        #expect(ManagementMessage.quote(#"pa"ss\word"#) == #""pa\"ss\\word""#)
        #expect(ManagementMessage.quote("pass\nsignal SIGTERM") == nil)
        #expect(ManagementMessage.quote("a\u{7F}") == nil)
    }
}

@Suite struct OpenVPNDiagnosisTests {
    func diagnose(_ lines: [String]) -> OpenVPNDiagnosis {
        var d = OpenVPNDiagnosis()
        for l in lines { d.observe(ManagementMessage.parse(l)) }
        return d
    }

    @Test(arguments: [
        (">PASSWORD:Verification Failed: 'Auth'", "authenticationFailed"),
        (">LOG:1,E,AUTH: Received control message: AUTH_FAILED", "authenticationFailed"),
        (">LOG:1,W,VERIFY ERROR: depth=0, error=certificate has expired: CN=server", "serverCertificateExpired"),
        (">LOG:1,W,VERIFY ERROR: depth=0, error=certificate is not yet valid: CN=server", "serverCertificateNotYetValid"),
        (">LOG:1,W,VERIFY ERROR: depth=1, error=unable to get local issuer certificate: CN=x", "serverCertificateInvalid"),
        (">LOG:1,N,VERIFY EKU ERROR", "serverCertificateInvalid"),
        (">LOG:1,N,OpenSSL: error:0A000415:SSL routines::sslv3 alert certificate expired", "clientCertificateExpired"),
        (">LOG:1,N,OpenSSL: error:0A000412:SSL routines::sslv3 alert bad certificate", "clientCertificateInvalid"),
        (">LOG:1,W,RESOLVE: Cannot resolve host address: nosuch.invalid:1194 (Name or service not known)", "serverAddressResolutionFailed"),
        (">FATAL:Options error: --ca fails with 'x': No such file", "configurationFailed"),
    ])
    func mapsOpenVPNsWordsToSpecificErrorsQuotingThem(line: String, name: String) {
        let d = diagnose([line])
        #expect(d.fatal?.name == name)
        #expect(d.fatal?.message.contains("openvpn") == true)
    }

    @Test func timeoutIsServerNotRespondingUnlessTheServerAnswered() {
        let silent = diagnose([">LOG:1,W,TLS Error: TLS key negotiation failed to occur within 60 seconds"])
        let e = silent.timeoutError(seconds: 3, remote: "198.18.0.1:1199/udp")
        #expect(e.name == "serverNotResponding")
        #expect(e.message == "no answer from the server at 198.18.0.1:1199/udp within 3 s (openvpn: TLS Error: TLS key negotiation failed to occur within 60 seconds)")
        let answered = diagnose([">LOG:1,I,TLS: Initial packet from [AF_INET]198.18.0.1:1194"])
        #expect(answered.timeoutError(seconds: 3, remote: "r").name == "negotiationFailed")
    }
}

@Suite struct PushedSettingsTests {
    @Test func subnetTopologyRoutesAndDNS() {
        let s = PushedSettings(env: [
            "ifconfig_local": "198.19.8.2", "ifconfig_netmask": "255.255.255.0", "tun_mtu": "1500",
            "route_network_1": "198.19.9.0", "route_netmask_1": "255.255.255.0", "route_gateway_1": "198.19.8.1",
            "route_network_2": "10.1.2.3", "route_netmask_2": "255.255.0.0",
            "ifconfig_ipv6_local": "fd19::1000", "ifconfig_ipv6_netbits": "64", "route_ipv6_network_1": "fd20::/48",
            "foreign_option_1": "dhcp-option DNS 198.19.8.1", "foreign_option_2": "dhcp-option DOMAIN corp.example",
        ])
        #expect(s.addresses == ["198.19.8.2/24", "fd19::1000/64"])
        #expect(s.routes == ["198.19.9.0/24", "10.1.0.0/16", "fd20::/48"])
        #expect(s.mtu == 1500)
        #expect(s.dns == ["198.19.8.1"])
        #expect(s.domains == ["corp.example"])
    }

    @Test func net30PointToPoint() {
        let s = PushedSettings(env: ["ifconfig_local": "10.8.0.6", "ifconfig_remote": "10.8.0.5"])
        #expect(s.addresses == ["10.8.0.6/32"])
        #expect(s.routes == ["10.8.0.5/32"])
    }

    @Test func masks() {
        #expect(PushedSettings.prefixLength("255.255.255.252") == 30)
        #expect(PushedSettings.prefixLength("0.0.0.0") == 0)
        #expect(PushedSettings.prefixLength("255.0.255.0") == nil)
    }

    @Test func launchFileCarriesPathsNeverSecrets() throws {
        let c = OpenVPNConfiguration(remotes: [.init(host: "198.18.0.1", port: 1194, proto: "udp")], caFingerprints: ["ab"],
                                     certificate: "PEM", keySecret: "key", username: "alice", passwordSecret: "password",
                                     tlsCryptSecret: "tls-crypt", options: ["cipher AES-256-GCM"])
        var launch = OpenVPNLaunch(interface: "utun3", managementSocket: "/run/x.mgmt", caPath: "/etc/vpnctl/trust/ab.pem")
        launch.certificatePath = "/run/x.cert.pem"
        launch.keyPath = "/etc/vpnctl/secrets/id/key"
        launch.tlsCryptPath = "/etc/vpnctl/secrets/id/tls-crypt"
        let text = try launch.render(c)
        for line in ["dev utun3", "ifconfig-noexec", "route-noexec", "management /run/x.mgmt unix", "management-client",
                     "management-hold", "management-up-down", "management-query-passwords", "remote 198.18.0.1 1194 udp",
                     "key /etc/vpnctl/secrets/id/key", "auth-user-pass", "cipher AES-256-GCM", "disable-dco"] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "missing '\(line)'")
        }
        #expect(!text.contains("alice"))
    }

    /// A store edited by hand gets past import and edit: the render checks
    /// every option again and writes each word back quoted.
    @Test func renderRefusesWhatValidationRefuses() throws {
        var c = OpenVPNConfiguration(remotes: [.init(host: "198.18.0.1", port: 1194, proto: "udp")], caFingerprints: ["ab"],
                                     username: "alice", passwordSecret: "password")
        let launch = OpenVPNLaunch(interface: "utun3", managementSocket: "/run/x y.mgmt", caPath: "/run/vpnctl/x.ca.pem")
        for option in ["setenv opt up /bin/sh", "setenv opt script-security 2", "plugin /x.so", "writepid /etc/passwd", "key-direction 9",
                       "config /tmp/x", "ignore-unknown-option up"] {
            c.options = ["cipher AES-256-GCM", option]
            let e = #expect(throws: VPNError.self) { try launch.render(c) }
            #expect(e?.message.hasPrefix("protocol.options[1]: ") == true, "\(option)")
        }
        c.options = ["verify-x509-name O'Brien name", "--Cipher AES-256-GCM"]
        let lines = try launch.render(c).split(separator: "\n").map(String.init)
        #expect(lines.contains(#"verify-x509-name "O'Brien" name"#))
        #expect(lines.contains("cipher AES-256-GCM"))
        #expect(lines.contains(#"management "/run/x y.mgmt" unix"#))
        #expect(lines.contains("ca /run/vpnctl/x.ca.pem"))
        c.remotes = [.init(host: "vpn.example\nup /bin/sh", port: 1194, proto: "udp")]
        #expect(throws: VPNError.self) { try launch.render(c) }
    }
}

@Suite struct PushedSettingsValidationTests {
    /// Found by the management fuzzer: an address that is not one.
    @Test func invalidPushedValuesAreNamedNotApplied() {
        let s = PushedSettings(env: ["ifconfig_local": "444.19.8.2", "route_network_1": "10.0.0.300", "route_ipv6_network_1": "zz::/64"])
        #expect(s.addresses.isEmpty && s.routes.isEmpty)
        #expect(s.invalid == ["ifconfig_local=444.19.8.2/32", "route_network_1=10.0.0.300", "route_ipv6_network_1=zz::/64"])
    }
}
