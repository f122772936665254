import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// What openvpn says and does after the bring-up, on a fake clock: the test
/// plays openvpn on the real management socket and hands each read to the
/// tunnel itself.
@Suite struct OpenVPNTunnelEventTests {
    typealias FakeOpenVPN = OpenVPNTunnelTests.FakeOpenVPN

    struct Running {
        let context: TunnelContext
        let tunnel: OpenVPNTunnel
        let openvpn: FakeOpenVPN?
        /// openvpn says `lines`; the tunnel reads them.
        func say(_ lines: String...) {
            for line in lines { openvpn!.say(line) }
            tunnel.readManagement()
        }
    }

    /// Started, with openvpn connected to its management socket.
    func running(_ f: ContextFixture, user: String? = nil, password: String? = nil, options: [String] = []) throws -> Running {
        var profile = try f.openvpnProfile()
        var c = profile.openvpnConfiguration!
        c.options += options
        if let user, let password {
            c.username = user
            c.passwordSecret = "password"
            try f.store.secrets.set(profile.id, name: "password", value: Array(password.utf8))
        }
        profile.protocol = .openvpn(c)
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: c, program: "openvpn")
        tunnel.start()
        let openvpn = try FakeOpenVPN(path: f.runtime.providerFile(profile.id, .management))
        tunnel.acceptManagement()
        #expect(tunnel.management >= 0)
        return Running(context: context, tunnel: tunnel, openvpn: openvpn)
    }

    @Test(arguments: [false, true]) func aStartThatRunsOutOfTimeNamesTheServer(heard: Bool) throws {
        let f = ContextFixture()
        let r = try running(f)
        if heard { r.say(">LOG:1764430000,I,TLS: Initial packet from [AF_INET]198.18.0.1:1194, sid=1") }
        f.loop.run()
        #expect(f.clock.nowMs - 1_000 == 30_000)
        #expect(r.context.record.lastDisconnectError == (heard
            ? ConnectionError(.negotiationFailed,
                              "the server at vpn2.example.com:1194/udp answered but the TLS negotiation did not complete within 30 s")
            : ConnectionError(.serverNotResponding, "no answer from the server at vpn2.example.com:1194/udp within 30 s")))
        #expect(r.context.record.stopReason == .connectionFailed)
        #expect(r.openvpn!.read().hasSuffix("signal SIGTERM\n"))
        #expect(f.system.calls.filter { !$0.hasPrefix("close") }.suffix(2) == ["stopProvider 4242", "deleteLink utun0"])
    }

    @Test func openvpnThatIgnoresSIGTERMIsStoppedByTheUndoSteps() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.tunnel.stop(reason: .userInitiated)
        #expect(r.context.status == .disconnecting)
        r.tunnel.stop(reason: .userInitiated)  // a second stop changes nothing
        f.loop.run()
        #expect(f.clock.nowMs - 1_000 == OpenVPNTunnel.exitTimeoutMs)
        #expect(f.lines.contains("[!] openvpn did not exit within 5 s of SIGTERM"))
        #expect(r.context.exitCode == 0)
        #expect(r.context.record.stopReason == .userInitiated)
        #expect(r.openvpn!.read() == "state on\nlog on\nsignal SIGTERM\n")
        #expect(f.system.calls.filter { !$0.hasPrefix("close") }.suffix(2) == ["stopProvider 4242", "deleteLink utun0"])
    }

    /// openvpn said why and exited; the exit is seen before the words.
    @Test func anExitReadsWhatOpenVPNSaidBeforeIt() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.openvpn!.say(">PASSWORD:Verification Failed: 'Auth'")
        r.tunnel.childExited(4242, .exited(1))
        #expect(r.context.record.lastDisconnectError == ConnectionError(.authenticationFailed,
            "the server rejected the username or password (openvpn: Verification Failed: 'Auth')"))
        #expect(r.context.record.stopReason == .connectionFailed)
    }

    @Test func anExitWhileConnectedIsAProviderFailureWithTheLastReason() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.say(">STATE:1,CONNECTED,SUCCESS,198.19.8.2,198.18.0.1,1194,,")
        #expect(r.context.status == .connected)
        r.openvpn!.say(">LOG:1764430001,N,read UDPv4: Connection refused (code=111)")
        r.tunnel.childExited(4242, .signalled(9))
        #expect(r.context.record.lastDisconnectError == ConnectionError(.pluginFailed,
            "openvpn (pid 4242) was killed by signal 9 (openvpn: read UDPv4: Connection refused (code=111))"))
        #expect(r.context.record.stopReason == .providerFailed)
        #expect(r.context.status == .disconnected)
    }

    @Test func aClosedManagementConnectionEndsTheTunnel() throws {
        let f = ContextFixture()
        let r = try running(f)
        shutdown(r.openvpn!.fd, Int32(SHUT_RDWR))
        r.tunnel.readManagement()
        #expect(r.context.record.lastDisconnectError == ConnectionError(.pluginFailed, "openvpn closed its management connection"))
        #expect(r.context.record.stopReason == .providerFailed)
        #expect(f.system.calls.filter { !$0.hasPrefix("close") }.suffix(2) == ["stopProvider 4242", "deleteLink utun0"])
    }

    @Test func aClosedManagementConnectionWhileStoppingWaitsForTheExit() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.tunnel.stop(reason: .userInitiated)
        shutdown(r.openvpn!.fd, Int32(SHUT_RDWR))
        r.tunnel.readManagement()
        #expect(r.context.exitCode == nil)
        #expect(r.context.status == .disconnecting)
        r.tunnel.childExited(4242, .exited(0))
        #expect(r.context.exitCode == 0)
        #expect(r.context.record.lastDisconnectError == nil)
    }

    @Test func aFatalErrorWhileConnectingEndsTheStart() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.say(">FATAL:Cannot load private key file /x")
        #expect(r.context.record.lastDisconnectError == ConnectionError(.clientCertificateInvalid,
                                                                         "openvpn: Cannot load private key file /x"))
        #expect(r.context.record.stopReason == .connectionFailed)
        #expect(r.openvpn!.read().hasSuffix("signal SIGTERM\n"))
    }

    @Test func credentialsAreAnsweredQuotedAndOtherQuestionsAreLogged() throws {
        let f = ContextFixture()
        let r = try running(f, user: "alice", password: "p\"w\\")
        r.say(">PASSWORD:Need 'Private Key' password")
        #expect(f.lines.contains("[!] openvpn asks for something vpnctl cannot answer: Need 'Private Key' password"))
        #expect(r.context.exitCode == nil)
        r.say(">PASSWORD:Need 'Auth' username/password")
        #expect(r.openvpn!.read() == "state on\nlog on\nusername \"Auth\" \"alice\"\npassword \"Auth\" \"p\\\"w\\\\\"\n")
    }

    @Test func pushedSettingsThatAreNotAddressesAreRefused() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.say(">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.x", ">UPDOWN:ENV,END")
        #expect(r.context.record.lastDisconnectError == ConnectionError(.configurationFailed,
            "the server pushed settings that are not valid addresses or domain names: ifconfig_local=198.19.8.x/32"))
        #expect(r.context.record.stopReason == .configurationFailed)
        #expect(r.openvpn!.read().hasSuffix("signal SIGTERM\n"))
        #expect(!f.system.calls.contains { $0.hasPrefix("addAddress") })
    }

    @Test func aPushedDomainThatIsNotANameIsRefusedBeforeAnythingIsApplied() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.say(">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.2", ">UPDOWN:ENV,ifconfig_netmask=255.255.255.0",
              ">UPDOWN:ENV,foreign_option_1=dhcp-option DOMAIN corp;nameserver", ">UPDOWN:ENV,END")
        #expect(r.context.record.lastDisconnectError?.message.contains("foreign_option_1=dhcp-option DOMAIN corp;nameserver") == true)
        #expect(r.context.record.stopReason == .configurationFailed)
        #expect(!f.system.calls.contains { $0.hasPrefix("addAddress") })
    }

    @Test func pushedSettingsThatCannotBeAppliedAreUndone() throws {
        let f = ContextFixture()
        let r = try running(f)
        f.system.failAt = "addRoute"
        r.say(">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.2", ">UPDOWN:ENV,ifconfig_netmask=255.255.255.0",
              ">UPDOWN:ENV,route_network_1=198.19.9.0", ">UPDOWN:ENV,route_netmask_1=255.255.255.0", ">UPDOWN:ENV,END")
        #expect(r.context.record.lastDisconnectError == ConnectionError(.configurationFailed,
                                                                         "cannot apply the pushed settings: Injected()"))
        let undo = f.system.calls.drop { !$0.hasPrefix("addRoute") }.dropFirst().filter { !$0.hasPrefix("close") }
        #expect(Array(undo) == ["deleteAddress 198.19.8.2/24", "stopProvider 4242", "deleteLink utun0"])
    }
}

@Suite struct OpenVPNTunnelStartTests {
    @Test func noFreeInterfaceNameIsNamed() throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        f.system.existing = Set((0..<256).map { "utun\($0)" })
        let context = try f.context(profile)
        OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn").start()
        #expect(context.record.lastDisconnectError == ConnectionError(.configurationFailed, "no free utunN name"))
        #expect(context.record.stopReason == .configurationFailed)
        #expect(f.system.calls.isEmpty)
    }

    /// A store error keeps its hint; what was made is undone.
    @Test func aKeyOthersCanReadIsRefusedWithItsHint() throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        let config = profile.openvpnConfiguration!
        let key = f.store.secrets.path(profile.id, try #require(config.keySecret))
        chmod(key, 0o644)
        let context = try f.context(profile)
        OpenVPNTunnel(context: context, config: config, program: "openvpn").start()
        #expect(context.record.lastDisconnectError == ConnectionError(.configurationFailed,
            "secret file \(key) is readable by others (mode 644) (chmod 600 \(key))"))
        #expect(context.record.stopReason == .configurationFailed)
        #expect(!f.system.calls.contains { $0.hasPrefix("spawn") })
        #expect(f.system.calls.last == "deleteLink utun0")
        #expect(f.runFiles(profile.id).isEmpty)
    }
}
