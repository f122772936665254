import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// The charon tunnel against a fake charon: the test listens on the vici
/// socket in the run's private directory, reads what the tunnel sends and
/// answers as charon would; the system is the recording fake.
@Suite struct CharonTunnelTests {
    final class FakeCharon {
        let listener: Int32
        var fd: Int32 = -1
        var framer = VICI.Framer()
        init(path: String) throws { listener = try UnixSocket.listen(at: path) }
        deinit { if fd >= 0 { close(fd) }; close(listener) }

        func accept() { fd = Glibc.accept(listener, nil, nil) }

        /// The next `n` packets the tunnel sent.
        func read(_ n: Int) -> [VICI.Packet] {
            var out: [VICI.Packet] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while out.count < n {
                while let body = try? framer.next(), let p = try? VICI.Packet.decode(body) {
                    out.append(p)
                    if out.count == n { return out }
                }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 2000) == 1 else { return out }
                let k = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                guard k > 0 else { return out }
                framer.feed(Array(buf[0..<k]))
            }
            return out
        }

        func send(_ packets: VICI.Packet...) {
            for p in packets {
                let bytes = try! p.encoded()
                _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            }
        }

        static let ok = VICI.Packet(.cmdResponse, message: VICI.Message([("success", .text("yes"))]))
        static func log(_ msg: String) -> VICI.Packet { VICI.Packet(.event, name: "log", message: VICI.Message([("msg", .text(msg))])) }
    }

    struct Running {
        let context: TunnelContext
        let tunnel: CharonTunnel
        let charon: FakeCharon
        let directory: String
    }

    /// Started, connected to the fake charon, its first requests read and answered.
    func running(_ f: ContextFixture, secret: String = "correct horse") throws -> (Running, [VICI.Packet]) {
        let c = IKEv2Configuration(serverAddress: "198.18.0.1", remoteIdentifier: "vpn.lab.test", localIdentifier: "alice@lab.test",
                                   authenticationMethod: .sharedSecret, sharedSecretSecret: "shared-secret")
        let profile = Profile(name: "road", protocol: .ikev2(c))
        try f.store.secrets.set(profile.id, name: "shared-secret", value: Array(secret.utf8))
        let context = try f.context(profile)
        let tunnel = CharonTunnel(context: context, config: c, program: "/usr/lib/ipsec/charon")
        tunnel.findTun = { $0 == 4242 ? "ipsec0" : nil }
        tunnel.start()
        let dir = CharonLaunch.privateDirectory(f.runtime, profile.id)
        let charon = try FakeCharon(path: dir + "/charon.vici")
        tunnel.connectVICI()
        charon.accept()
        let sent = charon.read(7)
        charon.send(.init(.eventConfirm), .init(.eventConfirm), .init(.eventConfirm), .init(.eventConfirm), FakeCharon.ok, FakeCharon.ok)
        tunnel.readVICI()
        return (Running(context: context, tunnel: tunnel, charon: charon, directory: dir), sent)
    }

    static let childUp = VICI.Packet(.event, name: "child-updown", message: VICI.Message([
        ("up", .text("yes")),
        ("vpnctl", .section(VICI.Message([
            ("local-vips", .texts(["198.19.20.1"])),
            ("child-sas", .section(VICI.Message([("vpnctl-1", .section(VICI.Message([("remote-ts", .texts(["198.19.21.0/24"]))])))]))),
        ]))),
    ]))

    @Test func bringUpLoadsOverVICIConnectsAndStopUndoesInOrder() throws {
        let f = ContextFixture()
        let (r, sent) = try running(f)
        #expect(sent.map { "\($0.type) \($0.name ?? "")" } == [
            "eventRegister log", "eventRegister ike-updown", "eventRegister child-updown", "eventRegister ike-rekey",
            "cmdRequest load-shared", "cmdRequest load-conn", "cmdRequest initiate",
        ])
        #expect(sent[4].message?["data"]?.text == "correct horse")
        // The secret went over the socket only: not on argv, not in the private directory.
        let spawn = try #require(f.system.calls.first { $0.hasPrefix("spawn") })
        #expect(spawn.contains("unshare --mount --propagation private -- /bin/sh -c") && !spawn.contains("correct horse"))
        let conf = try #require(try FileSystem.readFileIfPresent(r.directory + "/strongswan.conf"))
        #expect(!String(decoding: conf, as: UTF8.self).contains("correct horse"))
        #expect(r.context.record.interface == "ipsec0" && r.context.status == .connecting)

        r.charon.send(Self.childUp, FakeCharon.ok)
        r.tunnel.readVICI()
        #expect(r.context.status == .connected)
        #expect(r.context.record.settings?.addresses == ["198.19.20.1/32"] && r.context.record.settings?.routes == ["198.19.21.0/24"])

        f.system.calls = []
        r.tunnel.stop(reason: .userInitiated)
        #expect(r.charon.read(1).first?.name == "terminate")
        r.charon.send(FakeCharon.ok)
        r.tunnel.readVICI()
        #expect(r.context.status == .disconnected && r.context.record.stopReason == .userInitiated)
        #expect(f.system.calls.filter { !$0.hasPrefix("close") } == ["deleteRoute 198.19.21.0/24", "deleteAddress 198.19.20.1/32", "stopProvider 4242"])
        #expect(!FileSystem.exists(r.directory))
    }

    /// A full tunnel (issue 30): the server's 0.0.0.0/0 and ::/0 are routed as
    /// halves beside the machine's default route, the server kept on its route.
    @Test func aFullTunnelIsRoutedAsHalvesWithTheServerKeptOutside() throws {
        let f = ContextFixture()
        let (r, _) = try running(f)
        let up = VICI.Packet(.event, name: "child-updown", message: VICI.Message([
            ("up", .text("yes")),
            ("vpnctl", .section(VICI.Message([
                ("remote-host", .text("198.18.0.1")),
                ("local-vips", .texts(["198.19.22.1", "2001:2:22::1"])),
                ("child-sas", .section(VICI.Message([("vpnctl-1", .section(VICI.Message([("remote-ts", .texts(["0.0.0.0/0", "::/0"]))])))]))),
            ]))),
        ]))
        r.charon.send(up, FakeCharon.ok)
        r.tunnel.readVICI()
        #expect(r.context.status == .connected)
        let s = r.context.record.settings
        #expect(s?.addresses == ["198.19.22.1/32", "2001:2:22::1/128"])
        #expect(s?.routes == ["0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1"])
        #expect(s?.excludedRoutes == ["198.18.0.1/32"])
        let excluded = f.system.calls.firstIndex(of: "addRoute 198.18.0.1/32 dev 2 via 198.18.0.254")
        let half = f.system.calls.firstIndex { $0.hasPrefix("addRoute 0.0.0.0/1") }
        #expect(excluded != nil && half != nil && excluded! < half!)
    }

    /// charon's log lines arrive as events of their own, here after the
    /// updown event they explain: the failure still names them.
    @Test func aReasonThatComesAfterTheDownEventIsNamed() throws {
        let f = ContextFixture()
        let (r, _) = try running(f)
        r.charon.send(VICI.Packet(.event, name: "ike-updown", message: VICI.Message([("vpnctl", .section(VICI.Message()))])),
                      FakeCharon.log("received AUTHENTICATION_FAILED notify error"))
        r.tunnel.readVICI()
        f.loop.run()
        #expect(r.context.record.lastDisconnectError?.name == "authenticationFailed")
        #expect(r.context.record.lastDisconnectError?.message.contains("charon: received AUTHENTICATION_FAILED notify error") == true)
        #expect(r.context.record.stopReason == .connectionFailed)
        #expect(f.system.calls.last == "stopProvider 4242")
    }

    @Test func retransmitsWhileConnectedAreReasserting() throws {
        let f = ContextFixture()
        let (r, _) = try running(f)
        r.charon.send(Self.childUp, FakeCharon.ok, FakeCharon.log("retransmit 1 of request with message ID 7"))
        r.tunnel.readVICI()
        #expect(r.context.status == .reasserting)
        let since = r.context.record.connectedSince
        r.charon.send(FakeCharon.log("parsed INFORMATIONAL response 7 [ ]"))
        r.tunnel.readVICI()
        // The peer answered: the same SAs, the same session (not a reconnect).
        #expect(r.context.status == .connected && r.context.record.reconnects == nil)
        #expect(since != nil && r.context.record.connectedSince == since)
        // A CHILD_SA up again after reasserting is a new session.
        r.charon.send(FakeCharon.log("retransmit 1 of request with message ID 8"))
        r.tunnel.readVICI()
        #expect(r.context.status == .reasserting)
        r.charon.send(Self.childUp)
        r.tunnel.readVICI()
        #expect(r.context.status == .connected && r.context.record.reconnects == 1)
    }

    @Test func charonKilledIsProviderFailedAndEverythingIsUndone() throws {
        let f = ContextFixture()
        let (r, _) = try running(f)
        r.charon.send(Self.childUp, FakeCharon.ok)
        r.tunnel.readVICI()
        r.tunnel.childExited(4242, .signalled(9))
        #expect(r.context.record.stopReason == .providerFailed && r.context.record.lastDisconnectError?.name == "pluginFailed")
        #expect(!FileSystem.exists(r.directory))
    }
}
