import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// A clock the test moves.
final class FakeClock: Clock {
    var nowMs: Int64 = 1_000
}

/// Readiness the test scripts: each wait returns the next answer (indices
/// into the fds it was given) and moves the clock by the timeout it was asked
/// for, as a poll that found nothing would.
final class ScriptedPoll: EventSource {
    let clock: FakeClock
    var answers: [[Int]] = []
    var waits: [(fds: [Int32], timeoutMs: Int32)] = []
    init(clock: FakeClock) { self.clock = clock }
    func wait(_ fds: [Int32], timeoutMs: Int32) -> [Int] {
        waits.append((fds, timeoutMs))
        if !answers.isEmpty { return answers.removeFirst() }
        clock.nowMs += Int64(timeoutMs)
        return []
    }
}

@Suite struct EventLoopTests {
    @Test func readyFdsRunTheirHandlersInOrderThenDueTimers() {
        let clock = FakeClock()
        let events = ScriptedPoll(clock: clock)
        let loop = EventLoop(source: events, clock: clock, idleMs: 1000)
        var seen: [String] = []
        loop.watch(5) { seen.append("fd5") }
        loop.watch(6) { seen.append("fd6") }
        loop.after(200) { seen.append("timer200") }
        loop.after(100) { seen.append("timer100") }
        events.answers = [[1, 0]]
        loop.turn()
        #expect(events.waits.last?.fds == [5, 6])
        #expect(events.waits.last?.timeoutMs == 100, "sleeps until the first timer is due")
        #expect(seen == ["fd5", "fd6"])
        loop.turn()
        #expect(seen == ["fd5", "fd6", "timer100"])
        loop.turn()
        #expect(seen == ["fd5", "fd6", "timer100", "timer200"])
        loop.turn()
        #expect(events.waits.last?.timeoutMs == 1000, "with no timer it sleeps at most idleMs")
    }

    @Test func aHandlerCanCancelAnotherAndStopTheLoop() {
        let clock = FakeClock()
        let events = ScriptedPoll(clock: clock)
        let loop = EventLoop(source: events, clock: clock)
        var seen: [String] = []
        var second: EventLoop.Token? = nil
        loop.watch(5) {
            seen.append("first")
            loop.cancel(second)
            loop.stop()
        }
        second = loop.watch(6) { seen.append("second") }
        let timer = loop.after(0) { seen.append("timer") }
        events.answers = [[0, 1]]
        loop.run()
        #expect(seen == ["first"])
        #expect(loop.isStopped)
        loop.cancel(timer)
        loop.cancel(timer)  // twice is harmless
    }

    @Test func aTimerAddedByATimerWaitsForItsTurn() {
        let clock = FakeClock()
        let events = ScriptedPoll(clock: clock)
        let loop = EventLoop(source: events, clock: clock)
        var count = 0
        func tick() {
            count += 1
            if count < 3 { loop.after(50, tick) } else { loop.stop() }
        }
        loop.after(50, tick)
        loop.run()
        #expect(count == 3)
        #expect(events.waits.map(\.timeoutMs) == [50, 50, 50])
    }
}

/// A context over a fake system, in a private directory.
final class ContextFixture {
    let dir = TempDir()
    let system = FakeTunnelSystem()
    let clock = FakeClock()
    var lines: [String] = []
    let loop: EventLoop
    let store: PreferencesStore
    let runtime: RuntimeStore

    init(realEvents: Bool = false) {
        loop = realEvents ? EventLoop(idleMs: 20) : EventLoop(source: ScriptedPoll(clock: clock), clock: clock)
        store = PreferencesStore(directory: dir.path + "/etc")
        runtime = RuntimeStore(directory: dir.path + "/run")
    }

    func context(_ profile: Profile, startTimeoutMs: Int64 = 30_000) throws -> TunnelContext {
        try runtime.prepare()
        return TunnelContext(profile: profile, store: store, runtime: runtime, system: system, loop: loop,
                             record: RuntimeRecord(id: profile.id, name: profile.name, status: .disconnected),
                             startTimeoutMs: startTimeoutMs, searchPath: nil, outputFD: -1) { [weak self] in self?.lines.append($0) }
    }

    /// An openvpn profile whose anchor, certificate and key are in place.
    func openvpnProfile() throws -> Profile {
        let result = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/one-ca.ovpn"), name: "ovpn", source: "one-ca.ovpn")
        let trust = TrustStore(configDirectory: store.directory)
        for (fp, pem) in result.anchors { try trust.install(pem, fingerprint: fp) }
        for (name, value) in result.secrets { try store.secrets.set(result.profile.id, name: name, value: value) }
        return result.profile
    }

    func runFiles(_ id: UUID) -> [String] {
        RuntimeStore.ProviderFile.allCases.map { runtime.providerFile(id, $0) }.filter { FileManager.default.fileExists(atPath: $0) }
    }
}

@Suite struct OpenVPNTunnelTests {
    /// What the bring-up does, in order, up to openvpn waiting to connect back.
    static let bringUp = ["createPersistentTun utun0", "markLink utun0 vpnctl:", "ifindex utun0", "listenUnix", "spawn"]

    @Test(arguments: ["missing openvpn"] + bringUp)
    func failureAtAnyStepUndoesEverythingDoneNewestFirst(step: String) throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        if step == "missing openvpn" { f.system.missingPrograms = ["openvpn"] } else { f.system.failAt = step }
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        #expect(context.exitCode == 1)
        #expect(context.status == .disconnected)
        #expect(context.record.lastDisconnectError != nil)
        let done = f.system.calls.filter { !$0.hasPrefix("route ") }
        var expected: [String] = []
        if done.contains(where: { $0.hasPrefix("createPersistentTun") }) && step != "createPersistentTun utun0" {
            expected.append("deleteLink utun0")
        }
        if done.contains(where: { $0.hasPrefix("listenUnix") }) && step != "listenUnix" { expected.insert("close", at: 0) }
        let failed = done.firstIndex { $0.hasPrefix(step) } ?? done.count
        let undone = done[(failed + (step == "missing openvpn" ? 0 : 1))...].map { $0.split(separator: " ").first.map(String.init) == "close" ? "close" : $0 }
        #expect(undone == expected, "after failing at \(step): \(f.system.calls)")
        #expect(f.runFiles(profile.id).isEmpty, "no run file is left: \(f.runFiles(profile.id))")
    }

    @Test func openvpnExitingBeforeItConnectsIsAFailureAndEverythingIsUndone() throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        #expect(context.status == .connecting)
        #expect(context.record.providerPid == 4242)
        #expect(f.runFiles(profile.id).count == 4, "config, certificate, CA bundle, management socket")
        f.system.calls = []
        tunnel.childExited(4242, .exited(1))
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError?.name == "pluginFailed")
        #expect(context.record.lastDisconnectError?.message.hasPrefix("openvpn exited with status 1 before it connected") == true)
        #expect(f.system.calls.filter { !$0.hasPrefix("close") } == ["stopProvider 4242", "deleteLink utun0"])
        #expect(f.runFiles(profile.id).isEmpty)
        tunnel.childExited(4242, .exited(1))  // a second report changes nothing
        #expect(context.exitCode == 1)
    }

    @Test func openvpnThatNeverConnectsBackTimesOut() throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        f.loop.run()
        #expect(context.record.lastDisconnectError?.message == "openvpn did not connect to its management socket")
        #expect(f.clock.nowMs - 1_000 == OpenVPNTunnel.acceptTimeoutMs)
        #expect(f.system.calls.contains("deleteLink utun0"))
    }

    @Test func aStopBeforeOpenVPNConnectsBackIsClean() throws {
        let f = ContextFixture()
        let profile = try f.openvpnProfile()
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        tunnel.stop(reason: .userInitiated)
        #expect(context.exitCode == 0)
        #expect(context.record.stopReason == .userInitiated)
        #expect(context.record.lastDisconnectError == nil)
        #expect(f.system.calls.filter { !$0.hasPrefix("close") }.suffix(2) == ["stopProvider 4242", "deleteLink utun0"])
    }

    /// openvpn's side of the management socket, played by the test.
    final class FakeOpenVPN {
        let fd: Int32
        var received = ""
        /// A loaded machine (CI's other core building) once refused the first
        /// connect: a few tries, 10 ms apart, before the error is the test's.
        init(path: String) throws {
            var tries = 0
            while true {
                do {
                    fd = try UnixSocket.connect(to: path)
                    return
                } catch where tries < 50 {
                    tries += 1
                    usleep(10_000)
                }
            }
        }
        deinit { close(fd) }
        func say(_ lines: String...) {
            let text = lines.joined(separator: "\n") + "\n"
            _ = text.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        func read() -> String {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { break }
                received += String(decoding: buffer[0..<n], as: UTF8.self)
            }
            return received
        }
    }

    func turns(_ loop: EventLoop, until done: () -> Bool) {
        for _ in 0..<50 where !done() { loop.turn() }
    }

    @Test func aWholeSessionPushesSettingsReconnectsAndStopsCleanly() throws {
        let f = ContextFixture(realEvents: true)
        let profile = try f.openvpnProfile()
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        let openvpn = try FakeOpenVPN(path: f.runtime.providerFile(profile.id, .management))
        turns(f.loop) { tunnel.management >= 0 }
        openvpn.say(">HOLD:Waiting for hold release:0")
        turns(f.loop) { openvpn.read().contains("hold release") }
        #expect(openvpn.received == "state on\nlog on\nhold release\n")
        openvpn.say(">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.2", ">UPDOWN:ENV,ifconfig_netmask=255.255.255.0",
                    ">UPDOWN:ENV,route_network_1=198.19.9.0", ">UPDOWN:ENV,route_netmask_1=255.255.255.0",
                    ">UPDOWN:ENV,tun_mtu=1400", ">UPDOWN:ENV,END", ">STATE:1,CONNECTED,SUCCESS,198.19.8.2,198.18.0.1,1194,,")
        turns(f.loop) { context.status == .connected }
        #expect(context.status == .connected)
        #expect(context.record.settings?.addresses == ["198.19.8.2/24"])
        #expect(context.record.settings?.routes == ["198.19.9.0/24"])
        #expect(context.record.settings?.mtu == 1400)
        // A reconnect pushes a different route: the old one is withdrawn.
        f.system.calls = []
        openvpn.say(">STATE:2,RECONNECTING,ping-restart,,,,,", ">UPDOWN:DOWN", ">UPDOWN:ENV,END", ">HOLD:Waiting for hold release:0",
                    ">UPDOWN:UP", ">UPDOWN:ENV,ifconfig_local=198.19.8.2", ">UPDOWN:ENV,ifconfig_netmask=255.255.255.0",
                    ">UPDOWN:ENV,route_network_1=198.19.10.0", ">UPDOWN:ENV,route_netmask_1=255.255.255.0", ">UPDOWN:ENV,END",
                    ">STATE:3,CONNECTED,SUCCESS,198.19.8.2,198.18.0.1,1194,,")
        turns(f.loop) { context.record.reconnects == 1 }
        #expect(context.record.reconnects == 1)
        #expect(f.system.calls.contains("deleteRoute 198.19.9.0/24"))
        #expect(f.system.calls.contains("addRoute 198.19.10.0/24 dev 7"))
        #expect(context.record.settings?.routes == ["198.19.10.0/24"])
        // Stop: openvpn is told, exits, and everything is undone newest first.
        f.system.calls = []
        tunnel.stop(reason: .userInitiated)
        turns(f.loop) { openvpn.read().contains("signal SIGTERM") }
        #expect(context.status == .disconnecting)
        tunnel.childExited(4242, .exited(0))
        #expect(context.exitCode == 0)
        #expect(f.system.calls.filter { !$0.hasPrefix("close") } ==
                ["deleteRoute 198.19.10.0/24", "deleteAddress 198.19.8.2/24", "stopProvider 4242", "deleteLink utun0"])
        #expect(f.runFiles(profile.id).isEmpty)
    }

    /// A server's challenge (CRV1 in the refusal, CR_TEXT after the
    /// password) goes to the start on its credential line; the answer goes
    /// back to openvpn as openvpn documents it, cr-response while openvpn's
    /// own log of commands is quiet.
    @Test func aServersChallengeIsAskedOnTheLineAndAnswered() throws {
        let f = ContextFixture(realEvents: true)
        var profile = try f.openvpnProfile()
        guard case .openvpn(var o) = profile.protocol else { Issue.record("not openvpn"); return }
        o.username = "carol"
        o.passwordSecret = "password"
        profile.protocol = .openvpn(o)
        try f.store.secrets.set(profile.id, name: "password", value: Array("carol pass".utf8))
        let context = try f.context(profile)
        let (start, theirs) = try CredentialLine.pair()
        defer { start.close() }
        context.credentialLine = CredentialLine(fd: theirs)
        let tunnel = OpenVPNTunnel(context: context, config: o, program: "openvpn")
        tunnel.start()
        let openvpn = try FakeOpenVPN(path: f.runtime.providerFile(profile.id, .management))
        turns(f.loop) { tunnel.management >= 0 }
        openvpn.say(">PASSWORD:Need 'Auth' username/password")
        turns(f.loop) { openvpn.read().contains("password \"Auth\"") }
        #expect(openvpn.received.contains("username \"Auth\" \"carol\"\npassword \"Auth\" \"carol pass\"\n"))
        openvpn.say(">PASSWORD:Verification Failed: 'Auth' ['CRV1:R,E:st42:Y2Fyb2w=:Enter PIN']")
        turns(f.loop) { pollReadable([start.fd], timeoutMs: 0).contains(0) }
        let asked = start.serve { $0.fields.first?.prompt == "Enter PIN" ? CredentialAnswers([.challenge: "7890"]) : nil }
        #expect(asked?.fields.map(\.kind) == [.challenge])
        openvpn.say(">PASSWORD:Need 'Auth' username/password")
        turns(f.loop) { openvpn.read().contains("CRV1::") }
        #expect(openvpn.received.hasSuffix("username \"Auth\" \"carol\"\npassword \"Auth\" \"CRV1::st42::7890\"\n"))
        #expect(context.exitCode == nil, "a challenge is not a refusal")
        openvpn.say(">INFOMSG:CR_TEXT:R:What is your PIN?")
        turns(f.loop) { pollReadable([start.fd], timeoutMs: 0).contains(0) }
        #expect(start.serve { _ in CredentialAnswers([.challenge: "1234"]) } != nil)
        turns(f.loop) { openvpn.read().contains("cr-response") }
        #expect(openvpn.received.hasSuffix("verb 0\ncr-response MTIzNA==\nverb 3\n"))
        // The start gone: the next question ends the tunnel, authenticationRequired.
        start.close()
        openvpn.say(">INFOMSG:CR_TEXT:R:Again?")
        turns(f.loop) { openvpn.read().contains("signal SIGTERM") }
        #expect(openvpn.received.hasSuffix("signal SIGTERM\n"))
        tunnel.childExited(4242, .exited(0))
        #expect(context.record.lastDisconnectError?.name == "authenticationRequired")
        #expect(f.runFiles(profile.id).isEmpty)
    }

    @Test func aDeletedInterfaceEndsTheTunnel() throws {
        let f = ContextFixture(realEvents: true)
        let profile = try f.openvpnProfile()
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: profile.openvpnConfiguration!, program: "openvpn")
        tunnel.start()
        tunnel.networkChanged()
        #expect(context.exitCode == nil, "a change that leaves the interface is nothing")
        f.system.deletedLinks = ["utun0"]
        tunnel.networkChanged()
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError?.message == "interface utun0 was deleted under openvpn; the tunnel ended")
        #expect(f.system.calls.contains("terminate 4242"))
    }

    @Test func aSecretWithALineBreakIsNeverSentToOpenVPN() throws {
        let f = ContextFixture(realEvents: true)
        var profile = try f.openvpnProfile()
        guard case .openvpn(var c) = profile.protocol else { Issue.record("not openvpn"); return }
        c.username = "alice"
        c.passwordSecret = "password"
        profile.protocol = .openvpn(c)
        try f.store.secrets.set(profile.id, name: "password", value: Array("pw\nsignal SIGKILL".utf8))
        let context = try f.context(profile)
        let tunnel = OpenVPNTunnel(context: context, config: c, program: "openvpn")
        tunnel.start()
        let openvpn = try FakeOpenVPN(path: f.runtime.providerFile(profile.id, .management))
        turns(f.loop) { tunnel.management >= 0 }
        openvpn.say(">PASSWORD:Need 'Auth' username/password")
        turns(f.loop) { context.exitCode != nil }
        #expect(context.record.lastDisconnectError?.name == "configurationFailed")
        #expect(!openvpn.read().contains("SIGKILL"))
        #expect(!openvpn.received.contains("password \"Auth\""))
    }
}

@Suite struct WireGuardGoSessionTests {
    let key = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="

    func running(_ f: ContextFixture) throws -> (TunnelContext, WireGuardGoSession) {
        let profile = sampleProfile("wg")
        try f.store.secrets.set(profile.id, name: "private-key", value: Array(key.utf8))
        let context = try f.context(profile, startTimeoutMs: 2_000)
        let session = WireGuardGoSession(context: context, config: profile.wireguardConfiguration!, program: "wireguard-go")
        session.start()
        return (context, session)
    }

    @Test func providerExitEndsTheTunnelAndUndoesIt() throws {
        let f = ContextFixture()
        let (context, session) = try running(f)
        #expect(context.status == .connecting)
        #expect(context.record.interface == "utun0")
        session.childExited(999, .exited(0))
        #expect(context.exitCode == nil, "another child is not the provider")
        f.system.calls = []
        session.childExited(4242, .signalled(9))
        #expect(context.exitCode == 1)
        #expect(context.record.lastDisconnectError?.message == "wireguard-go (pid 4242) was killed by signal 9")
        #expect(f.system.calls.filter { $0.hasPrefix("delete") || $0.hasPrefix("stop") || $0.hasPrefix("remove") }.last == "deleteLink utun0")
    }

    @Test(arguments: [false, true]) func noHandshakeTimesOutAndNamesThePeer(uapiFails: Bool) throws {
        let f = ContextFixture()
        let (context, session) = try running(f)
        if uapiFails { f.system.failAt = "uapi get=1" }  // a UAPI that never answers times out too
        withExtendedLifetime(session) { f.loop.run() }
        #expect(context.record.lastDisconnectError?.name == "serverNotResponding")
        #expect(context.record.lastDisconnectError?.message.contains("no handshake within 2 s from peer") == true)
        #expect(f.system.calls.last == "deleteLink utun0")
    }

    /// Issue 36, item 3: a persistent tunnel outlives its start timeout,
    /// says what it waits for, and connects when the server answers.
    @Test func aPersistentTunnelWaitsForItsServerAndConnectsWhenItAnswers() throws {
        let f = ContextFixture()
        let profile = sampleProfile("wg")
        try f.store.secrets.set(profile.id, name: "private-key", value: Array(key.utf8))
        let context = try f.context(profile, startTimeoutMs: 200)
        context.persistent = true
        let session = WireGuardGoSession(context: context, config: profile.wireguardConfiguration!, program: "wireguard-go")
        session.start()
        func turn(until done: () -> Bool) {
            let deadline = Date().addingTimeInterval(5)
            while !done() && Date() < deadline { f.loop.turn() }
        }
        turn { context.record.retrying != nil || context.exitCode != nil }
        #expect(context.exitCode == nil, "a persistent tunnel is not ended by its timeout")
        #expect(context.status == .connecting)
        #expect(context.record.retrying?.hasPrefix("no handshake within 0 s from peer") == true, "\(context.record.retrying ?? "nil")")
        #expect(f.lines.contains { $0.contains("persistent: trying again until the server answers") })
        f.system.getReply = handshakeReply()
        turn { context.status == .connected }
        #expect(context.status == .connected)
        #expect(context.record.retrying == nil)
        session.stop(reason: .userInitiated)
        #expect(context.exitCode == 0)
    }

    @Test func aStopIsCleanAndADeletedInterfaceIsAFailure() throws {
        let f = ContextFixture()
        let (context, session) = try running(f)
        session.stop(reason: .userInitiated)
        #expect(context.exitCode == 0)
        #expect(context.record.stopReason == .userInitiated)
        let g = ContextFixture()
        let (other, session2) = try running(g)
        g.system.deletedLinks = ["utun0"]
        session2.networkChanged()
        #expect(other.exitCode == nil, "a moment for wireguard-go's exit, which would name the cause")
        withExtendedLifetime(session2) { g.loop.run() }
        #expect(other.exitCode == 1)
        #expect(other.record.lastDisconnectError?.message == "interface utun0 was deleted (wireguard-go still runs)")
        // Issue 36 item 4: wireguard-go killed takes its tun with it; the exit names the cause.
        let h = ContextFixture()
        let (third, session3) = try running(h)
        h.system.deletedLinks = ["utun0"]
        session3.networkChanged()
        session3.childExited(try #require(session3.tunnel).providerPid, .signalled(9))
        #expect(third.exitCode == 1)
        #expect(third.record.lastDisconnectError?.message.hasSuffix("was killed by signal 9") == true, "\(third.record.lastDisconnectError?.message ?? "")")
        // The interface deleted by someone: wireguard-go then exits by itself, and the deletion is named.
        let k = ContextFixture()
        let (fourth, session4) = try running(k)
        k.system.deletedLinks = ["utun0"]
        session4.networkChanged()
        session4.childExited(try #require(session4.tunnel).providerPid, .exited(0))
        #expect(fourth.record.lastDisconnectError?.message == "interface utun0 was deleted (wireguard-go then exited with status 0)")
    }

    @Test func aDownLinkToTheEndpointIsNamed() throws {
        let f = ContextFixture()
        let (_, session) = try running(f)
        f.system.downLinks = [2]
        #expect(WireGuardGoSession.pathProblem(session.tunnel!, f.system) == "link eth2 to the endpoint 198.18.0.1:51820 is down")
    }
}

@Suite struct SettingsApplierTests {
    @Test func aRouteTheKernelHoldsOnThisLinkIsNotAnError() throws {
        let system = FakeTunnelSystem()
        system.routesExist = true
        let undo = UndoStack(log: { _ in })
        let applier = SettingsApplier(interface: "utun0", ifindex: 2, system: system, undo: undo, log: { _ in })
        var s = TunnelNetworkSettings()
        s.routes = ["198.19.9.0/24"]
        try applier.apply(s)
        #expect(applier.applied.routes == ["198.19.9.0/24"])
        undo.unwind()
        #expect(!system.calls.contains("deleteRoute 198.19.9.0/24"), "not ours, so not deleted")
        // On another link it is the error it is.
        let other = SettingsApplier(interface: "utun1", ifindex: 3, system: system, undo: undo, log: { _ in })
        #expect(throws: NetlinkError.self) { try other.apply(s) }
    }

    /// A call is all or nothing (issue 29, item 10): what it did is undone
    /// at its failure, newest first, and nothing of it is left to undo.
    @Test func aFailureHalfWayUndoesWhatTheCallDid() throws {
        let system = FakeTunnelSystem()
        system.failAt = "setUp"
        let undo = UndoStack(log: { _ in })
        let applier = SettingsApplier(interface: "utun0", ifindex: 7, system: system, undo: undo, log: { _ in })
        var s = TunnelNetworkSettings()
        s.addresses = ["198.19.8.2/24", "fd19::2/64"]
        s.mtu = 1400
        #expect(throws: FakeTunnelSystem.Injected.self) { try applier.apply(s) }
        #expect(Array(system.calls.drop { $0 != "setUp utun0" }.dropFirst()) == ["deleteAddress fd19::2/64", "deleteAddress 198.19.8.2/24"])
        #expect(undo.steps.isEmpty && applier.applied.addresses.isEmpty)
    }
}

extension Profile {
    var openvpnConfiguration: OpenVPNConfiguration? {
        if case .openvpn(let c) = self.protocol { return c }
        return nil
    }
    var wireguardConfiguration: WireGuardConfiguration? {
        if case .wireguard(let c) = self.protocol { return c }
        return nil
    }
}
