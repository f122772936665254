import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// A plugin's run on a fake system and clock: the test plays the plugin on
/// the real control socket (the fake's socketpair) and hands each read to
/// the tunnel, as the loop would.
@Suite struct PluginTunnelTests {
    static let manifest = PluginManifest(identifier: "org.example.relay", executable: "/opt/relay", version: "1",
                                         capabilities: ["packet-tunnel"], user: "vpnp", path: "/pkg/relay.json")
    static let user = UserIdentity(name: "vpnp", uid: 990, gid: 990)

    struct Running {
        let f: ContextFixture
        let context: TunnelContext
        let tunnel: PluginTunnel
        var plugin: Int32 { f.system.pairs[0].1 }
        /// The plugin says `lines`; the tunnel reads them.
        func say(_ lines: String...) {
            for line in lines { _ = (line + "\n").withCString { send(plugin, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
            tunnel.readControl()
        }
        /// What the supervisor sent the plugin so far.
        func heard() -> [String] {
            var out = [UInt8](repeating: 0, count: 65536)
            let n = out.withUnsafeMutableBytes { recv(plugin, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            return n > 0 ? String(decoding: out[0..<n], as: UTF8.self).split(separator: "\n").map(String.init) : []
        }
    }

    func running(_ f: ContextFixture = ContextFixture(), secrets: [String: String] = ["token": "relay-token"]) throws -> Running {
        let config = ProviderConfiguration(providerIdentifier: "org.example.relay", providerConfiguration: ["mtu": "1400"],
                                           secrets: secrets, serverAddress: "198.18.0.1:5555")
        let profile = try f.store.save(Profile(name: "relay", protocol: .provider(config)))
        try f.store.secrets.set(profile.id, name: "relay-token", value: Array("s3cret-token".utf8))
        let context = try f.context(profile)
        let tunnel = PluginTunnel(context: context, config: config) {
            CheckedPlugin(manifest: Self.manifest, user: Self.user,
                          executable: CheckedExecutable(handle: 55, resolved: "/opt/relay", isScript: false, interpreter: nil)) {}
        }
        tunnel.start()
        return Running(f: f, context: context, tunnel: tunnel)
    }

    @Test func theBringUpHandsOverTheTunAndTheSocketAsTheUser() throws {
        let r = try running()
        let pair = r.f.system.pairs[0]
        #expect(r.f.system.calls.filter { !$0.hasPrefix("close") } == [
            "createTun utun0", "markLink utun0 vpnctl:", "ifindex utun0", "socketPair",
            "spawn fd 55 (/opt/relay) /opt/relay as vpnp fds=[10, \(pair.1)]"])
        // Neither the tun nor the plugin's end stays open in the supervisor.
        #expect(r.f.system.calls.contains("close 10") && r.f.system.calls.contains("close \(pair.1)"))
        #expect(r.heard() == [#"{"interface":"utun0","providerConfiguration":{"mtu":"1400"},"serverAddress":"198.18.0.1:5555","type":"start"}"#])
        #expect(r.context.status == .connecting)
        #expect(r.context.record.providerPid == 4242)
    }

    @Test func settingsAreAppliedAndAnsweredThenConnected() throws {
        let r = try running()
        _ = r.heard()
        r.f.system.calls = []
        r.say(#"{"type":"setTunnelNetworkSettings","id":5,"addresses":["198.19.20.2/32"],"routes":["198.19.20.0/24"],"mtu":1400,"dns":["198.19.20.1"]}"#)
        #expect(r.f.system.calls == ["addAddress 198.19.20.2/32", "setMTU 1400", "setUp utun0", "addRoute 198.19.20.0/24 dev 7"])
        #expect(r.heard() == [#"{"id":5,"ok":true,"type":"setTunnelNetworkSettings"}"#])
        #expect(r.context.record.settings?.routes == ["198.19.20.0/24"] && r.context.record.settings?.dns == ["198.19.20.1"])
        r.say(#"{"type":"status","status":"connected"}"#)
        #expect(r.context.status == .connected)
        r.say(#"{"type":"status","status":"reasserting"}"#, #"{"type":"status","status":"connected"}"#)
        #expect(r.context.status == .connected && r.context.record.reconnects == 1)
    }

    /// Issue 29, item 10: a first settings call the kernel refuses is
    /// answered with the error and fails the start with its reason; its
    /// address is undone, the plugin stopped, the utun deleted, and the DNS
    /// it asked for never applied.
    @Test func firstSettingsTheKernelRefusesFailTheStartAndLeaveNothing() throws {
        let r = try running()
        _ = r.heard()
        r.f.system.calls = []
        r.f.system.failAt = "addRoute"
        r.say(#"{"type":"setTunnelNetworkSettings","id":1,"addresses":["198.19.20.2/32"],"routes":["198.19.20.0/24"],"dns":["198.19.20.53"]}"#)
        let reply = try #require(r.heard().first)
        #expect(reply.hasPrefix(#"{"error":"#) && reply.hasSuffix(#""id":1,"ok":false,"type":"setTunnelNetworkSettings"}"#))
        #expect(r.context.exitCode == 1)
        let e = try #require(r.context.record.lastDisconnectError)
        #expect(e.name == "configurationFailed" && e.message.hasPrefix("plugin 'org.example.relay''s settings were refused: "), "\(e.message)")
        #expect(r.context.record.stopReason == .configurationFailed)
        #expect(r.f.system.calls.filter { !$0.hasPrefix("route ") } == [
            "addAddress 198.19.20.2/32", "setUp utun0", "addRoute 198.19.20.0/24 dev 7",
            "deleteAddress 198.19.20.2/32", "stopProvider 4242", "close \(r.f.system.pairs[0].0)", "deleteLink utun0"])
        #expect(r.context.record.settings == nil && r.context.record.resolver == nil)
    }

    /// A later call that is refused is answered with the error; the tunnel
    /// keeps the settings it had, whole.
    @Test func laterSettingsTheKernelRefusesLeaveTheEarlierOnes() throws {
        let r = try running()
        r.say(#"{"type":"setTunnelNetworkSettings","id":1,"addresses":["198.19.20.2/32"],"routes":["198.19.20.0/24"]}"#,
              #"{"type":"status","status":"connected"}"#)
        _ = r.heard()
        let before = r.context.record.settings
        r.f.system.failAt = "addRoute 198.19.30.0/24"
        r.say(#"{"type":"setTunnelNetworkSettings","id":2,"addresses":["198.19.20.2/32"],"routes":["198.19.30.0/24"]}"#)
        let reply = try #require(r.heard().first)
        #expect(reply.hasSuffix(#""id":2,"ok":false,"type":"setTunnelNetworkSettings"}"#))
        #expect(r.context.exitCode == nil && r.context.status == .connected)
        #expect(r.context.record.settings == before && before?.routes == ["198.19.20.0/24"])
        #expect(r.f.system.calls.suffix(2) == ["addRoute 198.19.30.0/24 dev 7", "addRoute 198.19.20.0/24 dev 7"], "put back: \(r.f.system.calls)")
    }

    @Test func onlyTheProfilesOwnSecretsAreGivenAndNeverLogged() throws {
        let r = try running()
        _ = r.heard()
        r.say(#"{"type":"secret","id":1,"name":"token"}"#, #"{"type":"secret","id":2,"name":"relay-token"}"#)
        #expect(r.heard() == [#"{"id":1,"name":"token","type":"secret","value":"s3cret-token"}"#,
                              #"{"error":"the profile has no secret 'relay-token' (its secrets: token)","id":2,"name":"relay-token","type":"secret"}"#])
        #expect(!r.f.lines.joined().contains("s3cret-token"))
    }

    @Test(arguments: [
        ("not json", "sent a line that is not JSON"),
        (#"{"type":"exec","cmd":"rm"}"#, "sent a message of unknown type \"exec\""),
        (#"{"type":"error","name":"kaboom"}"#, "sent an error whose name is not an NEVPNConnectionError name: \"kaboom\""),
    ])
    func aMalformedMessageStopsThePluginAndUndoesEverything(_ line: String, _ reason: String) throws {
        let r = try running()
        r.f.system.calls = []
        r.say(line)
        #expect(r.context.exitCode == 1)
        let e = try #require(r.context.record.lastDisconnectError)
        #expect(e.name == "pluginFailed" && e.message.hasPrefix("plugin 'org.example.relay' \(reason)") && e.message.hasSuffix("; it was stopped"),
                "\(e.message)")
        #expect(r.context.record.stopReason == .providerFailed)
        #expect(r.f.system.calls == ["stopProvider 4242", "close \(r.f.system.pairs[0].0)", "deleteLink utun0"])
    }

    @Test func anOverLongLineIsRefusedBeforeItEnds() throws {
        let r = try running()
        r.say(String(repeating: "x", count: 70_000))
        #expect(r.context.record.lastDisconnectError?.message == "plugin 'org.example.relay' sent a line longer than 65536 bytes; it was stopped")
    }

    @Test func anErrorSaidJustBeforeTheExitIsTheReason() throws {
        let r = try running()
        _ = "{\"type\":\"error\",\"name\":\"authenticationFailed\",\"message\":\"bad token\"}\n".withCString {
            send(r.plugin, $0, strlen($0), Int32(MSG_NOSIGNAL))
        }
        r.tunnel.childExited(4242, .exited(1))
        #expect(r.context.record.lastDisconnectError == ConnectionError(.authenticationFailed, "bad token"))
        #expect(r.context.record.stopReason == .providerFailed)
    }

    @Test func anExitIsAPluginFailure() throws {
        let r = try running()
        r.say(#"{"type":"status","status":"connected"}"#)
        r.tunnel.childExited(4242, .signalled(9))
        #expect(r.context.record.lastDisconnectError == ConnectionError(.pluginFailed, "plugin 'org.example.relay' (pid 4242) was killed by signal 9"))
        #expect(r.context.status == .disconnected)
    }

    @Test func aStopTellsThePluginWhyAndEndsWhenItExits() throws {
        let r = try running()
        r.say(#"{"type":"status","status":"connected"}"#)
        _ = r.heard()
        r.tunnel.stop(reason: .userInitiated)
        #expect(r.heard() == [#"{"reason":"userInitiated","type":"stop"}"#])
        #expect(r.context.status == .disconnecting && r.context.exitCode == nil)
        r.tunnel.childExited(4242, .exited(0))
        #expect(r.context.exitCode == 0 && r.context.record.stopReason == .userInitiated && r.context.record.lastDisconnectError == nil)
    }

    @Test func aPluginThatDoesNotExitWhenToldIsStoppedByTheUndoSteps() throws {
        let f = ContextFixture()
        let r = try running(f)
        r.say(#"{"type":"status","status":"connected"}"#)
        r.tunnel.stop(reason: .userInitiated)
        r.f.system.calls = []
        let before = f.clock.nowMs
        f.loop.run()
        #expect(f.clock.nowMs - before == 5_000)
        #expect(r.context.exitCode == 0 && r.context.record.stopReason == .userInitiated)
        #expect(r.f.system.calls == ["stopProvider 4242", "close \(r.f.system.pairs[0].0)", "deleteLink utun0"])
        #expect(f.lines.contains("[!] plugin 'org.example.relay' did not exit within 5 s of stop"))
    }

    @Test func aPluginThatNeverConnectsEndsAtTheTimeout() throws {
        let f = ContextFixture()
        let r = try running(f)
        f.loop.run()
        #expect(r.context.record.lastDisconnectError == ConnectionError(.pluginFailed, "plugin 'org.example.relay' did not report connected within 30 s"))
    }

    @Test func aRefusedPluginNeverRuns() throws {
        let f = ContextFixture()
        let profile = try f.store.save(Profile(name: "relay", protocol: .provider(ProviderConfiguration(providerIdentifier: "x"))))
        let context = try f.context(profile)
        let tunnel = PluginTunnel(context: context, config: ProviderConfiguration(providerIdentifier: "x")) {
            throw VPNError(.providerUnavailable, "no provider plugin 'x' is installed", hint: "installed: y (/p/y.json)")
        }
        tunnel.start()
        #expect(context.record.lastDisconnectError == ConnectionError(.pluginDisabled, "no provider plugin 'x' is installed (installed: y (/p/y.json))"))
        #expect(f.system.calls.isEmpty)
    }
}

/// The plugins' spawn on the fake: by the checked executable's handle.
extension FakeTunnelSystem {
    func spawnProvider(_ executable: CheckedExecutable, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                       as user: UserIdentity) throws -> pid_t {
        try record("spawn fd \(executable.handle) (\(executable.resolved)) \(argv.joined(separator: " ")) as \(user.name) fds=\(passFDs)")
        return 4242
    }
}
