#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import VPNCore
@testable import VPNService
import VPNSystem
import VPNTestSupport

/// On-demand's decision → action step (`OnDemandRunner.act`) against a fake
/// host and run directory: which decision starts or stops a tunnel, through
/// the same use cases as `vpnctl start` and `stop`. (The decisions themselves
/// are OnDemandEvaluatorTests'; the backoff's steps OnDemandBackoffTests'.)
@Suite struct OnDemandActTests {
    let scratch = TempDir()
    var dir: String { scratch.path }
    let host = FakeSupervisorHost()
    /// What the host was asked to do, but the opening of logs.
    var acts: [String] { host.calls.filter { !$0.hasPrefix("open log ") } }
    let files = MemoryFiles(effectiveUser: geteuid(), directories: [])
    let runner: OnDemandRunner
    let profile = Profile(name: "office", protocol: .wireguard(WireGuardConfiguration(
        privateKeySecret: "private-key", addresses: ["10.0.0.2/32"],
        peers: [WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=", allowedIPs: ["0.0.0.0/0"],
                              endpoint: "198.18.0.1:51820")])))
    let ethernet = NetworkSnapshot(primary: .init(name: "eth0", ifindex: 2, type: .ethernet))
    let wifi = NetworkSnapshot(primary: .init(name: "wlan0", ifindex: 3, type: .wifi, ssid: "cafe"))
    final class Lines { var all: [String] = [] }
    let log = Lines()

    init() throws {
        let dir = scratch.path
        let store = PreferencesStore(directory: dir + "/etc")
        try store.save(profile)
        try store.secrets.set(profile.id, name: "private-key", value: Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        // What preflight looks for on PATH; never run.
        mkdir(dir + "/bin", 0o755)
        _ = FileManager.default.createFile(atPath: dir + "/bin/wireguard-go", contents: Data("#!/bin/false\n".utf8),
                                       attributes: [.posixPermissions: 0o755])
        files.addDirectory("/run", owner: 0)
        runner = OnDemandRunner(settings: AgentSettings(configDirectory: dir + "/etc", runDirectory: "/run/vpnctl", adminGroup: "vpnctl"),
                                loop: EventLoop(), path: dir + "/bin") { [log] in log.all.append($0) }
        runner.host = host
        runner.files = files
        runner.canAdministerNetwork = { true }
        let controller = runner.controller
        host.onSpawn = { [profile] pid, _ in
            var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connecting)
            r.supervisorPid = pid
            r.startedBy = StartOrigin(rule: 2, reason: "on ethernet")
            try controller.runtime.write(r)
        }
    }

    var id: String { profile.id.lowercasedString }

    func act(_ action: OnDemandRule.Action, _ st: inout OnDemandRunner.ProfileState, on snapshot: NetworkSnapshot, now: Int64 = 0) throws {
        var wake = Int64.max
        let status = try runner.controller.derive(profile)
        runner.act(action, rule: 2, reason: "on ethernet", profile, &st, status: status, on: snapshot, now: now, wake: &wake)
    }

    /// A tunnel its supervisor (`pid`) runs, started by hand or by a rule.
    func running(_ pid: pid_t, startedBy: StartOrigin?) throws {
        try runner.controller.runtime.prepare()
        var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connected)
        r.supervisorPid = pid
        r.startedBy = startedBy
        try runner.controller.runtime.write(r)
        host.processes[pid] = ["vpnctl", "__supervise", id]
    }

    @Test func aConnectDecisionStartsOnceAndNamesItsRule() throws {
        var st = OnDemandRunner.ProfileState()
        try act(.connect, &st, on: ethernet)
        #expect(acts == ["spawn __supervise --config-dir \(dir)/etc --run-dir /run/vpnctl --timeout 20 --notify-fd 3 "
                               + "--on-demand-rule 2 --on-demand-reason on ethernet --credentials-fd 4 \(id)"])
        #expect(st.startPending)
        #expect(try runner.controller.derive(profile).record?.supervisorPid == 5000)
        // The tunnel on its way up is not started again, nor tried.
        try act(.connect, &st, on: ethernet)
        #expect(acts.count == 1)
        #expect(log.all.filter { $0.hasPrefix("on-demand: starting 'office'") }.count == 1, "\(log.all)")
    }

    @Test func aFailedStartBacksOffAndIsNotRetriedBeforeTheDelay() throws {
        host.spawnError = Errno(EAGAIN)
        var st = OnDemandRunner.ProfileState()
        try act(.connect, &st, on: ethernet)
        #expect(acts.count == 1 && !st.startPending && st.backoff.failures == 1)
        #expect(log.all.contains { $0.hasPrefix("on-demand: cannot start 'office': cannot start the tunnel supervisor") }, "\(log.all)")
        try act(.connect, &st, on: ethernet, now: 1)
        #expect(acts.count == 1, "no second try within the backoff")
        let due = st.backoff.notBeforeMs
        try act(.connect, &st, on: ethernet, now: due)
        #expect(acts.count == 2)
    }

    /// A profile whose start needs an answer (a password not stored): the
    /// agent has nobody to ask, so nothing starts, status says
    /// authenticationRequired, and the agent's log says why.
    @Test func anOnDemandStartThatNeedsAnAnswerStartsNothingAndSaysSo() throws {
        let store = PreferencesStore(directory: dir + "/etc")
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("fixtures/ovpn/one-ca.ovpn")
        let imported = try ImportFormat.importChecked(Array(try Data(contentsOf: fixture)), name: "asks", source: "one-ca.ovpn")
        for (fp, pem) in imported.anchors { try TrustStore(configDirectory: store.directory).install(pem, fingerprint: fp) }
        for (name, value) in imported.secrets { try store.secrets.set(imported.profile.id, name: name, value: value) }
        guard case .openvpn(var o) = imported.profile.protocol else { Issue.record("not openvpn"); return }
        o.username = "bob"
        o.passwordSecret = "password"
        var p = imported.profile
        p.protocol = .openvpn(o)
        try store.save(p)
        _ = FileManager.default.createFile(atPath: dir + "/bin/openvpn", contents: Data("#!/bin/false\n".utf8),
                                           attributes: [.posixPermissions: 0o755])
        var st = OnDemandRunner.ProfileState()
        var wake = Int64.max
        runner.act(.connect, rule: 2, reason: "on ethernet", p, &st, status: try runner.controller.derive(p), on: ethernet, now: 0, wake: &wake)
        #expect(acts.isEmpty, "nothing is spawned: \(acts)")
        #expect(!st.startPending && st.backoff.failures == 1)
        #expect(log.all.contains { $0.hasPrefix("on-demand: cannot start 'asks': 'asks' needs password, and an on-demand start has nobody to ask") },
                "\(log.all)")
        #expect(try runner.controller.derive(p).lastDisconnectError?.name == "authenticationRequired")
    }

    @Test func aDisconnectDecisionSignalsTheSupervisorOnce() throws {
        try running(4242, startedBy: StartOrigin(rule: 2, reason: "on ethernet"))
        var st = OnDemandRunner.ProfileState()
        try act(.disconnect, &st, on: ethernet)
        #expect(acts == ["signal 4242 \(SIGTERM)"])
        #expect(st.stoppedOn == ethernet && !st.startPending)
    }

    /// A start by hand after a disconnect rule stopped the tunnel stays, on
    /// that network; on another one the rule applies again.
    @Test func aTunnelStartedByHandAfterAStopStaysOnThatNetwork() throws {
        var st = OnDemandRunner.ProfileState()
        st.stoppedOn = ethernet
        try running(4242, startedBy: nil)
        try act(.disconnect, &st, on: ethernet)
        #expect(acts.isEmpty)
        try act(.disconnect, &st, on: wifi)
        #expect(acts == ["signal 4242 \(SIGTERM)"])
    }

    @Test func ignoreAndEvaluateConnectionLeaveTheTunnelAlone() throws {
        try running(4242, startedBy: nil)
        var st = OnDemandRunner.ProfileState()
        try act(.ignore, &st, on: ethernet)
        try act(.evaluateConnection, &st, on: ethernet)
        #expect(acts.isEmpty)
        #expect(log.all.last?.contains("the tunnel is left as it is") == true)
    }
}
