import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// The session's start failures and its reading of the path and the peers.
@Suite struct WireGuardGoSessionPathTests {
    func session(_ f: ContextFixture, key: String? = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=") throws
        -> (TunnelContext, WireGuardGoSession) {
        let profile = sampleProfile("wg")
        if let key { try f.store.secrets.set(profile.id, name: "private-key", value: Array(key.utf8)) }
        let context = try f.context(profile)
        return (context, WireGuardGoSession(context: context, config: profile.wireguardConfiguration!, program: "wireguard-go"))
    }

    @Test func aMissingWireGuardGoIsNamedAndNothingIsTouched() throws {
        let f = ContextFixture()
        f.system.missingPrograms = ["wireguard-go"]
        let (context, session) = try session(f)
        session.start()
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError == ConnectionError(.pluginFailed, "wireguard-go is not installed"))
        #expect(context.record.stopReason == .providerFailed)
        #expect(f.system.calls.isEmpty)
    }

    @Test func anUnsetKeyIsAConfigurationFailure() throws {
        let f = ContextFixture()
        let (context, session) = try session(f, key: nil)
        session.start()
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError == ConnectionError(.configurationFailed, "secret 'private-key' is not set"))
        #expect(context.record.stopReason == .configurationFailed)
        #expect(f.system.calls.isEmpty)
    }

    @Test func aBringUpFailureEndsWithEverythingUndone() throws {
        let f = ContextFixture()
        f.system.failAt = "setUp"
        let (context, session) = try session(f)
        session.start()
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError?.name == "configurationFailed")
        #expect(context.record.lastDisconnectError?.message.contains("Injected") == true)
        #expect(context.status == .disconnected)
        #expect(f.system.calls.last == "deleteLink utun0")
        #expect(context.record.providerPid == nil, "the provider's pid is recorded only once it runs")
    }

    /// Handshake: connected, keepalive restored. No route: reasserting at
    /// once. Route back and data received: connected again, a reconnect.
    @Test func thePathBreaksAndIsRestored() throws {
        let f = ContextFixture()
        f.system.getReply = handshakeReply(rx: 92, tx: 148)
        let (context, session) = try session(f)
        session.start()
        #expect(context.status == .connected)
        #expect(f.system.calls.suffix(3) == ["route 198.18.0.1", "uapi get=1", "uapi set=1 keepalive"],
                "the bring-up's keepalive is restored to the peer's (none) once connected")
        f.system.endpointRoute = nil
        session.networkChanged()
        #expect(context.status == .reasserting)
        #expect(f.lines.contains("[*] path broken: no route to the endpoint 198.18.0.1:51820"))
        session.networkChanged()
        #expect(f.lines.filter { $0.hasPrefix("[*] path broken") }.count == 1, "said once")
        f.system.endpointRoute = RouteDecision(outputInterfaceIndex: 2, gateway: nil)
        f.system.getReply = handshakeReply(rx: 184, tx: 240)
        session.networkChanged()
        #expect(context.status == .connected)
        #expect(f.lines.contains("[*] path restored"))
        #expect(context.record.reconnects == 1)
        #expect(context.exitCode == nil)
        withExtendedLifetime(session) {}
    }

    @Test func aRouteIntoTheTunnelItselfIsAPathProblem() throws {
        let f = ContextFixture()
        let (_, session) = try session(f)
        session.start()
        let tunnel = try #require(session.tunnel)
        f.system.endpointRoute = RouteDecision(outputInterfaceIndex: tunnel.ifindex, gateway: nil)
        #expect(WireGuardGoSession.pathProblem(tunnel, f.system)
                == "the route to the endpoint 198.18.0.1:51820 goes into the tunnel itself")
        f.system.endpointRoute = RouteDecision(outputInterfaceIndex: 2, gateway: nil)
        #expect(WireGuardGoSession.pathProblem(tunnel, f.system) == nil)
    }
}
