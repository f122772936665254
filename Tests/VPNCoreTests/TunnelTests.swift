import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Records every call, and fails the Nth one on request.
final class FakeTunnelSystem: TunnelSystem {
    var calls: [String] = []
    var failAt: String? = nil
    var existing: Set<String> = []
    var liveSockets: Set<String> = []
    var uapiReplies: [String] = []

    struct Injected: Error {}

    func record(_ call: String) throws {
        calls.append(call)
        if let failAt, call.hasPrefix(failAt) { throw Injected() }
    }

    func interfaceExists(_ name: String) -> Bool { existing.contains(name) }
    func uapiSocketIsLive(_ name: String) -> Bool { liveSockets.contains(name) }
    func createTun(_ name: String) throws -> Int32 { try record("createTun \(name)"); return 10 }
    func markLink(_ name: String, _ mark: String) throws { try record("markLink \(name) \(mark.prefix(7))") }
    func closeFD(_ fd: Int32) { calls.append("close \(fd)") }
    func listenUAPI(_ name: String) throws -> Int32 {
        try record("listenUAPI \(name)")
        socketFiles[name] = UAPISocketFile(device: 1, inode: UInt64(socketFiles.count + 100))
        return 11
    }
    /// The socket files at each name's path: listenUAPI makes one.
    var socketFiles: [String: UAPISocketFile] = [:]
    func uapiSocketFile(_ name: String) -> UAPISocketFile? { socketFiles[name] }
    func removeUAPI(_ name: String, ifStill file: UAPISocketFile?) {
        guard let file, socketFiles[name] == file else { return calls.append("removeUAPI \(name) (not ours: left)") }
        socketFiles[name] = nil
        calls.append("removeUAPI \(name)")
    }
    func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32) throws -> pid_t {
        try record("spawn \(argv.joined(separator: " ")) fds=\(passFDs)")
        return 4242
    }
    func stopProvider(_ pid: pid_t) { calls.append("stopProvider \(pid)") }
    func spawnProvider(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32], logFD: Int32,
                       as user: UserIdentity) throws -> pid_t {
        try record("spawn \(argv.joined(separator: " ")) as \(user.name) fds=\(passFDs)")
        return 4242
    }
    /// Real sockets; the test keeps `pairs` to play the other side.
    var pairs: [(Int32, Int32)] = []
    func socketPair() throws -> (Int32, Int32) {
        try record("socketPair")
        let p = try UnixSocket.pair()
        pairs.append(p)
        return p
    }
    var deletedLinks: Set<String> = []
    func ifindex(_ name: String) throws -> Int32 {
        try record("ifindex \(name)")
        if deletedLinks.contains(name) { throw Injected() }
        return 7
    }
    func addAddress(_ cidr: String, ifindex: Int32) throws { try record("addAddress \(cidr)") }
    func deleteAddress(_ cidr: String, ifindex: Int32) throws { calls.append("deleteAddress \(cidr)") }
    func setMTU(_ name: String, _ mtu: Int) throws { try record("setMTU \(mtu)") }
    func setUp(_ name: String) throws { try record("setUp \(name)") }
    /// Every route to add is already there ("object exists").
    var routesExist = false
    func addRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws {
        if routesExist { calls.append("addRoute \(prefix) exists"); throw NetlinkError.exists("add route") }
        try record("addRoute \(prefix) dev \(ifindex)\(gateway.map { " via \($0)" } ?? "")")
    }
    func deleteRoute(_ prefix: String, ifindex: Int32, gateway: String?, table: UInt32) throws { calls.append("deleteRoute \(prefix)") }
    func deleteLink(_ name: String) throws { calls.append("deleteLink \(name)") }
    func changeRule(to prefix: String, table: UInt32, priority: UInt32, add: Bool) throws {
        try record("rule \(add ? "add" : "del") to \(prefix) table \(table) pref \(priority)")
    }
    func uapi(_ name: String, _ request: String) throws -> String {
        let first = request.split(separator: "\n").first.map(String.init) ?? ""
        try record("uapi \(first)\(request.contains("persistent_keepalive_interval=") && !request.contains("private_key") ? " keepalive" : "")")
        onUAPI(first)
        return first == "get=1" ? getReply : "errno=0\n\n"
    }
    /// What `get=1` answers (no peers unless a test says so), and a hook run
    /// on every UAPI request after it is recorded.
    var getReply = "errno=0\n\n"
    var onUAPI: (String) -> Void = { _ in }
    /// The kernel's route to every endpoint (nil: no route).
    var endpointRoute: RouteDecision? = RouteDecision(outputInterfaceIndex: 2, gateway: IPAddress("198.18.0.254")!.bytes)
    func route(to address: IPAddress) -> RouteDecision? {
        calls.append("route \(address)")
        return endpointRoute
    }
    func createPersistentTun(_ name: String) throws { try record("createPersistentTun \(name)") }
    var downLinks: Set<Int32> = []
    func linkState(index: Int32) -> (name: String, usable: Bool)? { ("eth\(index)", !downLinks.contains(index)) }
    func counters(_ name: String) -> InterfaceCounters? { nil }
    var missingPrograms: Set<String> = []
    func which(_ program: String, path: String?) -> String? { missingPrograms.contains(program) ? nil : "/usr/sbin/\(program)" }
    /// A real listening socket (the tests connect to it as openvpn would).
    func listenUnix(_ path: String) throws -> Int32 {
        try record("listenUnix \(path.split(separator: "/").last ?? "")")
        unlink(path)
        return try UnixSocket.listen(at: path)
    }
    func terminate(_ pid: pid_t, signal: Int32, timeoutMs: Int) { calls.append("terminate \(pid)") }
    func startTime(of pid: pid_t) -> UInt64? { 1 }
}

@Suite struct WireGuardTunnelTests {
    let key = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="

    func config(allowed: [String] = ["198.19.0.0/24"]) -> WireGuardConfiguration {
        WireGuardConfiguration(privateKeySecret: "private-key", addresses: ["198.19.0.2/32", "fd19::2/64"], mtu: 1380,
                               peers: [WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                                                     allowedIPs: allowed, endpoint: "198.18.0.1:51820")])
    }

    func start(_ system: FakeTunnelSystem, _ config: WireGuardConfiguration) throws -> WireGuardTunnel {
        let t = WireGuardTunnel(profileID: UUID(), config: config, system: system, log: { _ in })
        try t.start(wireguardGo: "/usr/bin/wireguard-go", logFD: 2,
                    privateKey: key, presharedKeys: [:])
        return t
    }

    @Test func bringUpOrder() throws {
        let system = FakeTunnelSystem()
        system.existing = ["utun0"]
        system.liveSockets = ["utun1"]
        let t = try start(system, config())
        #expect(t.interface == "utun2")
        let changes = system.calls.filter { !$0.hasPrefix("route ") && !$0.hasPrefix("close") }
        #expect(Array(changes.prefix(11)) == [
            "createTun utun2", "markLink utun2 vpnctl:", "listenUAPI utun2",
            "spawn /usr/bin/wireguard-go -f utun2 fds=[10, 11]",
            "uapi get=1", "ifindex utun2", "addAddress 198.19.0.2/32", "addAddress fd19::2/64",
            "setMTU 1380", "setUp utun2", "uapi set=1",
        ])
        #expect(changes.contains("addRoute 198.19.0.0/24 dev 7"))
        #expect(t.settings.routes == ["198.19.0.0/24"])
        #expect(t.settings.mtu == 1380)
    }

    @Test(arguments: ["markLink", "listenUAPI", "spawn", "ifindex", "addAddress fd19", "setMTU", "setUp", "uapi set=1", "addRoute"])
    func failureAtAnyStepUnwindsEverythingDoneNewestFirst(step: String) {
        let system = FakeTunnelSystem()
        system.failAt = step
        let f = #expect(throws: WireGuardTunnel.Failure.self) { _ = try start(system, config()) }
        // The injected failure itself, not some other error on the way.
        #expect(f?.error.name == "configurationFailed" && f?.error.message.contains("Injected") == true, "\(String(describing: f))")
        let failed = system.calls.firstIndex { $0.hasPrefix(step) }!
        let undo = system.calls[(failed + 1)...].filter { !$0.hasPrefix("close") }
        var expected: [String] = []
        let done = system.calls[..<failed]
        if done.contains(where: { $0.hasPrefix("addAddress fd19::2/64") }) { expected.append("deleteAddress fd19::2/64") }
        if done.contains(where: { $0.hasPrefix("addAddress 198.19.0.2/32") }) { expected.append("deleteAddress 198.19.0.2/32") }
        if done.contains(where: { $0.hasPrefix("spawn") }) { expected.append("stopProvider 4242") }
        if done.contains(where: { $0.hasPrefix("listenUAPI") }) { expected.append("removeUAPI utun0") }
        expected.append("deleteLink utun0")
        #expect(Array(undo) == expected, "after failing at \(step): \(system.calls)")
    }

    @Test func stopUnwindsInReverse() throws {
        let system = FakeTunnelSystem()
        let t = try start(system, config())
        system.calls = []
        t.stop()
        #expect(system.calls == ["deleteRoute 198.19.0.0/24", "deleteAddress fd19::2/64", "deleteAddress 198.19.0.2/32",
                                 "stopProvider 4242", "removeUAPI utun0", "close 10", "deleteLink utun0"],
                "the supervisor's tun fd is closed only after wireguard-go has stopped")
    }

    /// Issue 36 item 1: the UAPI path is shared by every namespace. A socket
    /// removed or replaced by another program is named as the cause, is never
    /// talked to, and the other program's socket is never removed at stop.
    @Test func item1_aLostControlSocketIsNamedAndAnotherProgramsIsLeftAlone() throws {
        let system = FakeTunnelSystem()
        let t = try start(system, config())
        #expect(t.uapiSocketLoss == nil, "the socket made for it")
        system.socketFiles["utun0"] = nil
        #expect(t.uapiSocketLoss == "its control socket /var/run/wireguard/utun0.sock was removed by another program (wireguard-go ends its tunnel when that file goes)")
        system.socketFiles["utun0"] = UAPISocketFile(device: 1, inode: 999)
        #expect(t.uapiSocketLoss?.contains("was replaced by another program's") == true)
        #expect(throws: ProviderFailure.self, "another wireguard-go's socket answers for its own tunnel: not asked") { try t.uapi("get=1\n\n") }
        system.calls = []
        t.stop()
        #expect(system.calls.contains("removeUAPI utun0 (not ours: left)"), "\(system.calls)")
        #expect(system.socketFiles["utun0"] == UAPISocketFile(device: 1, inode: 999))
    }

    @Test func defaultRouteIsSplitAndTheEndpointExcluded() throws {
        let system = FakeTunnelSystem()
        let t = try start(system, config(allowed: ["0.0.0.0/0"]))
        #expect(system.calls.contains("addRoute 198.18.0.1/32 dev 2 via 198.18.0.254"))
        #expect(t.settings.routes == ["0.0.0.0/1", "128.0.0.0/1"])
        #expect(t.settings.excludedRoutes == ["198.18.0.1/32"])
        let excluded = system.calls.firstIndex(of: "addRoute 198.18.0.1/32 dev 2 via 198.18.0.254")!
        let tunnelRoute = system.calls.firstIndex(of: "addRoute 0.0.0.0/1 dev 7")!
        #expect(excluded < tunnelRoute)
    }

    @Test func unresolvableEndpointIsNamed() {
        let system = FakeTunnelSystem()
        var c = config()
        c.peers[0].endpoint = "no-such-host.invalid:51820"
        let f = #expect(throws: WireGuardTunnel.Failure.self) { _ = try start(system, c) }
        #expect(f?.error.name == "serverAddressResolutionFailed")
        #expect(system.calls.filter { $0.hasPrefix("createTun") }.isEmpty)
    }
}

@Suite struct WireGuardHealthTests {
    @Test func connectsOnFirstHandshake() {
        var h = WireGuardHealth()
        #expect(h.observe(nowMs: 0, handshakeEpoch: 0, handshakeAgeMs: nil, rxBytes: 0, txBytes: 148, pathProblem: nil) == .connecting)
        #expect(h.observe(nowMs: 10, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 92, txBytes: 148, pathProblem: nil) == .connected)
    }

    @Test func sendingWithoutReplyFor15sReasserts() {
        var h = WireGuardHealth()
        _ = h.observe(nowMs: 0, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 100, txBytes: 100, pathProblem: nil)
        var tx: UInt64 = 100
        var v = WireGuardHealth.Verdict.connected
        for t in stride(from: Int64(1000), through: 14_000, by: 1000) {
            tx += 96
            v = h.observe(nowMs: t, handshakeEpoch: 5, handshakeAgeMs: t, rxBytes: 100, txBytes: tx, pathProblem: nil)
            #expect(v == .connected, "at \(t) ms")
        }
        v = h.observe(nowMs: 16_500, handshakeEpoch: 5, handshakeAgeMs: 16_500, rxBytes: 100, txBytes: tx + 96, pathProblem: nil)
        guard case .reasserting = v else { Issue.record("expected reasserting, got \(v)"); return }
        // Back only on evidence: a newer handshake.
        v = h.observe(nowMs: 17_000, handshakeEpoch: 5, handshakeAgeMs: 17_000, rxBytes: 100, txBytes: tx + 200, pathProblem: nil)
        guard case .reasserting = v else { Issue.record("recovered without evidence"); return }
        v = h.observe(nowMs: 21_000, handshakeEpoch: 21_000, handshakeAgeMs: 1, rxBytes: 192, txBytes: tx + 400, pathProblem: nil)
        #expect(v == .connected)
    }

    @Test func idleTunnelStaysConnected() {
        var h = WireGuardHealth()
        _ = h.observe(nowMs: 0, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 100, txBytes: 100, pathProblem: nil)
        #expect(h.observe(nowMs: 600_000, handshakeEpoch: 5, handshakeAgeMs: 600_000, rxBytes: 100, txBytes: 100, pathProblem: nil) == .connected)
    }

    @Test func brokenPathReassertsAtOnceAndRecoversOnTraffic() {
        var h = WireGuardHealth()
        _ = h.observe(nowMs: 0, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 100, txBytes: 100, pathProblem: nil)
        #expect(h.observe(nowMs: 100, handshakeEpoch: 5, handshakeAgeMs: 100, rxBytes: 100, txBytes: 100,
                          pathProblem: "no route to the endpoint") == .reasserting("no route to the endpoint"))
        guard case .reasserting = h.observe(nowMs: 200, handshakeEpoch: 5, handshakeAgeMs: 200, rxBytes: 100, txBytes: 196, pathProblem: nil)
        else { Issue.record("recovered without evidence"); return }
        #expect(h.observe(nowMs: 300, handshakeEpoch: 5, handshakeAgeMs: 300, rxBytes: 196, txBytes: 292, pathProblem: nil) == .connected)
    }

    @Test func dataReceivedDespiteAPathProblemDisprovesIt() {
        // No route to the endpoint, yet wireguard-go still reaches it from
        // the source it remembers: received data is the stronger fact.
        var h = WireGuardHealth()
        _ = h.observe(nowMs: 0, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 100, txBytes: 100, pathProblem: nil)
        #expect(h.observe(nowMs: 100, handshakeEpoch: 5, handshakeAgeMs: 100, rxBytes: 100, txBytes: 196,
                          pathProblem: "no route to the endpoint") == .reasserting("no route to the endpoint"))
        #expect(h.observe(nowMs: 200, handshakeEpoch: 5, handshakeAgeMs: 200, rxBytes: 196, txBytes: 292,
                          pathProblem: "no route to the endpoint") == .connected)
        #expect(h.observe(nowMs: 1200, handshakeEpoch: 5, handshakeAgeMs: 1200, rxBytes: 196, txBytes: 292,
                          pathProblem: "no route to the endpoint") == .connected, "still disproven while it stands")
        // The same problem coming back after it cleared counts again.
        _ = h.observe(nowMs: 2200, handshakeEpoch: 5, handshakeAgeMs: 2200, rxBytes: 196, txBytes: 292, pathProblem: nil)
        #expect(h.observe(nowMs: 3200, handshakeEpoch: 5, handshakeAgeMs: 3200, rxBytes: 196, txBytes: 292,
                          pathProblem: "no route to the endpoint") == .reasserting("no route to the endpoint"))
    }

    @Test func staleHandshakeWhileSendingReasserts() {
        var h = WireGuardHealth()
        _ = h.observe(nowMs: 0, handshakeEpoch: 5, handshakeAgeMs: 1, rxBytes: 100, txBytes: 100, pathProblem: nil)
        let v = h.observe(nowMs: 1000, handshakeEpoch: 5, handshakeAgeMs: 181_000, rxBytes: 196, txBytes: 196, pathProblem: nil)
        #expect(v == .reasserting("last handshake 181 s ago"))
    }
}

@Suite struct UAPITests {
    @Test func parsesGetReply() throws {
        let reply = """
        private_key=e84b5a6d2717c1003a13b431570353dbaca9146cf150c5f8575680feba52027a
        listen_port=51820
        public_key=b85996fecc9c7f1fc6d2572a76eda11d59bcd20be8e543b15ce4bd85a8e75a33
        endpoint=198.18.0.1:51820
        last_handshake_time_sec=1764430000
        last_handshake_time_nsec=500000000
        tx_bytes=148
        rx_bytes=92
        persistent_keepalive_interval=0
        allowed_ip=198.19.0.0/24
        protocol_version=1
        errno=0


        """
        let peers = try WireGuardUAPI.parseGet(reply)
        #expect(peers.count == 1)
        #expect(peers[0].lastHandshakeSec == 1_764_430_000)
        #expect(peers[0].lastHandshakeNsec == 500_000_000)
        #expect(peers[0].rxBytes == 92 && peers[0].txBytes == 148)
        #expect(peers[0].endpoint == "198.18.0.1:51820")
    }

    @Test func errnoAndGarbageAreErrors() {
        #expect(throws: WireGuardUAPI.ReplyError.errno(1)) { try WireGuardUAPI.parseGet("errno=1\n\n") }
        #expect(throws: WireGuardUAPI.ReplyError.self) { try WireGuardUAPI.parseGet("hello\n\n") }
        #expect(throws: WireGuardUAPI.ReplyError.self) { try WireGuardUAPI.parseGet("") }
    }

    @Test func setRequestUsesHexKeysAndEndsWithABlankLine() {
        let r = WireGuardUAPI.setRequest(privateKeyHex: "aa", listenPort: nil, fwmark: nil, peers: [
            .init(publicKeyHex: "bb", presharedKeyHex: nil, endpoint: "198.18.0.1:51820", keepalive: 25, allowedIPs: ["10.0.0.0/8"])])
        #expect(r == "set=1\nprivate_key=aa\nreplace_peers=true\npublic_key=bb\nendpoint=198.18.0.1:51820\npersistent_keepalive_interval=25\nreplace_allowed_ips=true\nallowed_ip=10.0.0.0/8\n\n")
        #expect(WireGuardKey.hex("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=")?.count == 64)
    }

    @Test func networksAndTimestamps() {
        #expect(CIDR("10.9.0.2/24")!.network.description == "10.9.0.0/24")
        #expect(CIDR("fd00:9::2/64")!.network.description == "fd00:9::/64")
        #expect(CIDR("198.19.0.0/24")!.contains(IPAddress("198.19.0.7")!))
        #expect(!CIDR("198.19.0.0/24")!.contains(IPAddress("198.18.0.7")!))
        let d = Date(timeIntervalSince1970: 1_764_430_000.123)
        #expect(Timestamp.iso8601(d) == "2025-11-29T15:26:40.123Z")
        #expect(abs(Timestamp.parse(Timestamp.iso8601(d))!.timeIntervalSince1970 - d.timeIntervalSince1970) < 0.001)
    }
}

@Suite struct StatusDerivationTests {
    @Test func connectedRecordWithDeadSupervisorReadsDisconnected() throws {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let profile = sampleProfile("office")
        #expect(try controller.derive(profile).status == .disconnected)
        var r = RuntimeRecord(id: profile.id, name: "office", status: .connected)
        r.supervisorPid = 999_999
        r.supervisorStartTime = 1
        r.interface = "utun0"
        r.ifindex = 9
        r.connectedSince = Date()
        try controller.runtime.write(r)
        let d = try controller.derive(profile)
        #expect(d.status == .disconnected)
        #expect(d.stopReason == .providerFailed)
        #expect(d.lastDisconnectError?.name == "pluginFailed")
        #expect(d.connectedSince == nil)
    }

    @Test func recycledPidIsNotOurs() throws {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let profile = sampleProfile("office")
        var r = RuntimeRecord(id: profile.id, name: "office", status: .connecting)
        r.supervisorPid = getpid()  // alive, but started at another time
        r.supervisorStartTime = (Processes.startTime(of: getpid()) ?? 0) + 1
        try controller.runtime.write(r)
        #expect(try controller.derive(profile).status == .disconnected)
        // Alive and started then, but not a supervisor of this profile.
        r.supervisorStartTime = Processes.startTime(of: getpid())
        try controller.runtime.write(r)
        #expect(try controller.derive(profile).status == .disconnected)
    }

    /// A record counts only when its pid, start time and command line
    /// (`__supervise <id>`) all match a live process.
    @Test func onlyAProvenSupervisorIsAlive() throws {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let profile = sampleProfile("office")
        let id = profile.id.uuidString.lowercased()
        let pid = try Processes.spawn("/usr/bin/python3", ["python3", "-c", "import time; time.sleep(30)", "__supervise", id],
                                      environment: [:])
        defer { Processes.terminate(pid) }
        // Until the exec is done, /proc shows the parent's command line.
        for _ in 0..<400 where Processes.commandLine(of: pid)?.last != id { usleep(5000) }
        let start = Processes.startTime(of: pid)
        var r = RuntimeRecord(id: profile.id, name: "office", status: .connecting)
        r.supervisorPid = pid
        r.supervisorStartTime = nil  // a record without a start time proves nothing
        try controller.runtime.write(r)
        #expect(try controller.derive(profile).status == .disconnected)
        r.supervisorStartTime = start
        try controller.runtime.write(r)
        #expect(try controller.derive(profile).status == .connecting)
        // The same process named by another profile's record is not its supervisor.
        let other = sampleProfile("other")
        var forged = r
        forged.id = other.id
        try controller.runtime.write(forged)
        #expect(try controller.derive(other).status == .disconnected)
    }
}

@Suite struct ExcludedRouteTests {
    @Test func excludedPrefixKeepsItsRouteAndIsUndone() throws {
        let system = FakeTunnelSystem()
        var c = WireGuardConfiguration(privateKeySecret: "k", addresses: ["198.19.0.2/32"],
                                       peers: [WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                                                             allowedIPs: ["0.0.0.0/0"], endpoint: "198.18.0.1:51820")])
        c.excludedRoutes = ["198.51.100.7/24"]
        let t = WireGuardTunnel(profileID: UUID(), config: c, system: system, log: { _ in })
        try t.start(wireguardGo: "/wg", logFD: 2, privateKey: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=", presharedKeys: [:])
        #expect(system.calls.contains("addRoute 198.51.100.0/24 dev 2 via 198.18.0.254"))
        #expect(t.settings.excludedRoutes == ["198.18.0.1/32", "198.51.100.0/24"])
        #expect(t.settings.mtu == 1420)
        system.calls = []
        t.stop()
        #expect(system.calls.contains("deleteRoute 198.51.100.0/24"))
    }
}
