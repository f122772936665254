import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Issue 30 (OpenVPN's slice): redirect-gateway, client-side and pushed, is a
/// full tunnel; a pushed option openvpn only warns about ends nothing; the
/// directives generators write are carried or named.
@Suite struct OpenVPNFullTunnelTests {
    static let pushReply = "PUSH: Received control message: 'PUSH_REPLY,redirect-gateway def1 bypass-dhcp,redirect-gateway ipv6,"
        + "block-outside-dns,dhcp-option DNS 198.19.8.1,tun-ipv6,route-gateway 198.19.8.1,topology subnet,"
        + "ifconfig 198.19.8.2 255.255.255.0,peer-id 0,cipher AES-256-GCM'"

    @Test func theServersPushReplyIsReadFromOpenVPNsLog() {
        let options = RedirectGateway.pushedOptions(Self.pushReply)!
        #expect(options.first == "redirect-gateway def1 bypass-dhcp")
        #expect(options.contains("dhcp-option DNS 198.19.8.1"))
        let r = RedirectGateway.pushed(options)!
        #expect(r.ipv4 && r.ipv6, "the last redirect-gateway wins; 'ipv6' keeps IPv4 unless '!ipv4'")
        #expect(r.routes == ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"])
        #expect(RedirectGateway.pushedOptions("PUSH: Received control message: 'AUTH_FAILED'") == nil)
        #expect(RedirectGateway.pushed(["route 10.0.0.0 255.0.0.0"]) == nil)
    }

    @Test func flagsAsOpenVPNDocumentsThem() {
        let r = RedirectGateway(["redirect-gateway", "def1", "bypass-dns", "!ipv4", "ipv6", "block-local"])!
        #expect(!r.ipv4 && r.ipv6 && r.bypassDNS)
        #expect(r.routes == ["::/1", "8000::/1"])
        #expect(r.ignored.count == 1 && r.ignored[0].hasPrefix("block-local"))
        #expect(RedirectGateway(["redirect-private", "def1"]) == nil)
    }

    @Test func aPushedOptionOpenVPNDoesNotKnowIsNotFatal() {
        var d = OpenVPNDiagnosis()
        d.observe(.log(flags: "W", message: "Options error: Unrecognized option or missing or extra parameter(s) in [PUSH-OPTIONS]:3: block-outside-dns (2.6.14)"))
        #expect(d.fatal == nil)
        d.observe(.log(flags: "F", message: "Options error: --ca fails with 'x': No such file"))
        #expect(d.fatal?.name == "configurationFailed")
    }

    func running(_ f: ContextFixture, options: [String] = []) throws -> OpenVPNTunnelEventTests.Running {
        try OpenVPNTunnelEventTests().running(f, options: options)
    }

    /// openvpn's PUSH_REPLY (when given), then its UP with the session's settings.
    func up(_ r: OpenVPNTunnelEventTests.Running, pushReply: String? = nil) {
        if let pushReply { r.say(">LOG:1764430000,I,\(pushReply)") }
        r.say(">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.2", ">UPDOWN:ENV,ifconfig_netmask=255.255.255.0",
              ">UPDOWN:ENV,trusted_ip=198.18.0.1", ">UPDOWN:ENV,foreign_option_1=dhcp-option DNS 198.19.8.1",
              ">UPDOWN:ENV,route_network_1=198.19.9.0", ">UPDOWN:ENV,route_netmask_1=255.255.255.0", ">UPDOWN:ENV,END")
    }

    @Test func aPushedRedirectGatewayRoutesBothHalvesAndKeepsTheServerOutside() throws {
        let f = ContextFixture()
        let r = try running(f)
        up(r, pushReply: Self.pushReply.replacingOccurrences(of: "redirect-gateway ipv6,", with: ""))
        let s = r.context.record.settings
        #expect(s?.routes == ["198.19.9.0/24", "0.0.0.0/1", "128.0.0.0/1"])
        #expect(s?.excludedRoutes == ["198.18.0.1/32"])
        let excluded = f.system.calls.firstIndex(of: "addRoute 198.18.0.1/32 dev 2 via 198.18.0.254")
        let half = f.system.calls.firstIndex { $0.hasPrefix("addRoute 0.0.0.0/1") }
        #expect(excluded != nil && half != nil && excluded! < half!, "the server's route is in place before the default goes")
        #expect(f.lines.contains { $0.contains("redirect-gateway: full tunnel (IPv4), 198.18.0.1/32 kept outside") })
    }

    @Test func theProfilesOwnRedirectGatewayAndRouteNopull() throws {
        let f = ContextFixture()
        let r = try running(f, options: ["redirect-gateway def1"])
        up(r)
        #expect(r.context.record.settings?.routes.contains("128.0.0.0/1") == true)

        let g = ContextFixture()
        let r2 = try running(g, options: ["route-nopull"])
        up(r2, pushReply: Self.pushReply)
        #expect(r2.context.record.settings?.routes.contains("0.0.0.0/1") == false, "route-nopull: the pushed redirect-gateway is ignored")
    }

    // openvpn logs the server's PUSH_REPLY before its pull-filters run: vpnctl filters it the same way.
    @Test func pullFilterDecidesWhetherAPushedRedirectGatewayCounts() throws {
        let f = ContextFixture()
        let r = try running(f, options: ["pull-filter ignore redirect-gateway"])
        up(r, pushReply: Self.pushReply)
        #expect(r.context.record.settings?.routes == ["198.19.9.0/24"], "ignored: split tunnel, the pushed routes only")
        #expect(r.context.record.settings?.excludedRoutes == [])

        let filter = PullFilter(options: ["pull-filter accept \"redirect-gateway def1\"", "pull-filter ignore redirect-gateway",
                                          "pull-filter reject \"route 10.\"", "verb 3"])
        #expect(filter.action(for: "redirect-gateway def1 bypass-dhcp") == .accept, "the first match decides")
        #expect(filter.action(for: "redirect-gateway ipv6") == .ignore)
        #expect(filter.action(for: "  route 10.0.0.0 255.0.0.0") == .reject, "leading spaces are skipped, as openvpn does")
        #expect(filter.action(for: "dhcp-option DNS 10.8.0.1") == .accept, "no rule matches: accepted")
        #expect(RedirectGateway.pushed(filter.kept(["redirect-gateway ipv6", "redirect-gateway def1"]))?.ipv6 == false)
    }

    @Test func withoutRedirectGatewayNothingChanges() throws {
        let f = ContextFixture()
        let r = try running(f)
        up(r, pushReply: "PUSH: Received control message: 'PUSH_REPLY,route 198.19.9.0 255.255.255.0'")
        #expect(r.context.record.settings?.routes == ["198.19.9.0/24"])
        #expect(r.context.record.settings?.excludedRoutes == [])
    }

    // Import: what Nyr's, angristan's and PiVPN's client files hold.
    @Test func theGeneratorsDirectivesAreCarriedOrNamed() throws {
        let generated = """
        client
        proto udp
        resolv-retry infinite
        nobind
        persist-key
        persist-tun
        auth SHA512
        ignore-unknown-option block-outside-dns
        block-outside-dns
        redirect-gateway def1 bypass-dhcp
        dhcp-option DNS 10.8.0.1
        dhcp-option DOMAIN corp.example
        dhcp-option WINS 10.8.0.2
        register-dns
        verb 3

        """
        let file = generated + (try Fixtures.text("ovpn/one-ca.ovpn"))
        let r = try ImportFormat.importChecked(Array(file.utf8), name: "nyr", source: "nyr.ovpn")
        let options = r.profile.openvpnConfiguration!.options
        #expect(options.contains("ignore-unknown-option block-outside-dns"))
        #expect(options.contains("redirect-gateway def1 bypass-dhcp"))
        #expect(options.contains("dhcp-option DNS 10.8.0.1"))
        #expect(options.contains("dhcp-option DOMAIN corp.example"))
        #expect(!options.contains { $0.hasPrefix("block-outside-dns") || $0.hasPrefix("register-dns") || $0.contains("WINS") })
        #expect(r.notes.contains { $0.hasPrefix("no effect on Linux") && $0.contains("block-outside-dns") && $0.contains("register-dns")
                && $0.contains("WINS") })
        #expect(r.notes.contains { $0.hasPrefix("full tunnel (redirect-gateway): IPv4") })
        #expect(OpenVPNDirectives.problem(in: "dhcp-option DOMAIN evil;x") != nil)
        #expect(OpenVPNDirectives.problem(in: "redirect-gateway def1 sideways") != nil)
        #expect(OpenVPNDirectives.problem(in: "block-outside-dns")?.contains("no effect on Linux") == true)
    }
}

/// Issue 30, round trips: an export that leaves its secrets out imports as
/// the same profile with those secrets unset (the advice it prints can be followed).
@Suite struct ExportWithoutSecretsRoundTripTests {
    func roundTrip(_ file: String, name: String, format: ProfileExport.Format, options: ImportOptions = ImportOptions()) throws -> (ImportResult, ImportResult) {
        let r = try ImportFormat.importChecked(Array(file.utf8), name: name, source: "\(name) file", options: options)
        let out = try ProfileExport.export(r.profile, as: format, secret: { _ in nil }, anchor: { _ in try Fixtures.text("ovpn/one-ca.ovpn").components(separatedBy: "<ca>\n")[1].components(separatedBy: "</ca>")[0] })
        #expect(!out.secretsLeftOut.isEmpty)
        let again = try ImportFormat.importChecked(out.bytes, name: name, source: "export", options: options)
        return (r, again)
    }

    @Test func aWGQuickExportWithoutItsKeysImportsAsTheSameProfile() throws {
        let file = """
        [Interface]
        PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
        Address = 10.7.0.2/24
        [Peer]
        PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
        PresharedKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
        AllowedIPs = 0.0.0.0/0
        Endpoint = 203.0.113.5:51820
        """
        let (r, again) = try roundTrip(file, name: "wg", format: .wgQuick)
        #expect(again.profile.protocol == r.profile.protocol)
        #expect(again.secrets.isEmpty)
        #expect(again.notes.contains { $0.contains("private-key") && $0.contains("peer1-preshared-key") })
    }

    @Test func anOVPNExportWithoutItsKeysImportsAsTheSameProfile() throws {
        let (r, again) = try roundTrip(try Fixtures.text("ovpn/one-ca.ovpn"), name: "ov", format: .ovpn)
        #expect(again.profile.protocol == r.profile.protocol)
        #expect(again.secrets.isEmpty)
    }

    /// With auth-user-pass the export names the username in a comment; the
    /// import takes it (an --username given wins), so the round trip needs no flag.
    @Test func anOVPNExportsUsernameComesBack() throws {
        let file = try Fixtures.text("ovpn/one-ca.ovpn") + "auth-user-pass\n"
        let (r, again) = try roundTrip(file, name: "ov", format: .ovpn, options: ImportOptions(username: "alice"))
        #expect(r.profile.openvpnConfiguration?.username == "alice")
        let plain = try ImportFormat.importChecked(
            try ProfileExport.export(r.profile, as: .ovpn, secret: { _ in nil },
                                     anchor: { _ in try Fixtures.text("ovpn/one-ca.ovpn").components(separatedBy: "<ca>\n")[1].components(separatedBy: "</ca>")[0] }).bytes,
            name: "ov", source: "export")
        #expect(plain.profile.protocol == r.profile.protocol, "no --username: the export's comment names it")
        #expect(plain.notes.contains { $0.contains("the username 'alice' is the export's") })
        #expect(again.profile.openvpnConfiguration?.username == "alice")
        #expect(ExportMarker.username(in: "# username: a b (import with --username a b)") == nil)
        #expect(ExportMarker.username(in: "# username: bob (import with --username eve)") == nil)
    }

    @Test func aMarkerOnlyCountsOnTheFirstLine() throws {
        let file = "[Interface]\n# secrets left out (vpnctl export --include-secrets, as root): private-key\nAddress = 10.7.0.2/24\n"
        #expect(throws: VPNError.self) { try ImportFormat.importChecked(Array(file.utf8), name: "x", source: "x.conf") }
    }
}
