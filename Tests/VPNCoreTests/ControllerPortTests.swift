#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import VPNCore
import VPNSystem
import VPNTestSupport

/// Start, stop and the clean-up after a dead supervisor, with the run
/// directory in `MemoryFiles` and the processes and links in
/// `FakeSupervisorHost`: no root, no process spawned, no netlink. Only the
/// preferences (and the provider program `preflight` looks for) are on disk.
@Suite struct ControllerPortTests {
    let dir = TempDir()
    let host = FakeSupervisorHost()
    let files = MemoryFiles(effectiveUser: geteuid(), directories: [])
    let profile = sampleProfile("office")
    static let run = "/run/vpnctl"

    init() throws {
        files.addDirectory("/run", owner: 0)
        let store = PreferencesStore(directory: dir.path + "/etc")
        try store.save(profile)
        try store.secrets.set(profile.id, name: "private-key", value: Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        // What preflight looks for on PATH; it is never run.
        mkdir(dir.path + "/bin", 0o755)
        let program = dir.path + "/bin/wireguard-go"
        _ = FileManager.default.createFile(atPath: program, contents: Data("#!/bin/false\n".utf8), attributes: [.posixPermissions: 0o755])
    }

    var controller: TunnelController {
        TunnelController(configDirectory: dir.path + "/etc", runDirectory: Self.run, host: host, files: files)
    }

    var useCases: TunnelUseCases {
        var u = TunnelUseCases(store: PreferencesStore(directory: dir.path + "/etc"), controller: controller, path: dir.path + "/bin")
        u.canAdministerNetwork = { true }
        return u
    }

    var id: String { profile.id.lowercasedString }
    var recordPath: String { "\(Self.run)/\(id).json" }

    /// What a supervisor writes first: its pid, so that the start is accepted.
    func playSupervisor() {
        host.onSpawn = { [controller, profile] pid, _ in
            var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connecting)
            r.supervisorPid = pid
            r.supervisorStartTime = 1
            try controller.runtime.write(r)
        }
    }

    /// A record whose supervisor is `pid`, with `argv` as that pid's command line.
    func recordOfSupervisor(_ pid: pid_t, argv: [String]?) throws {
        try controller.runtime.prepare()
        var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connected)
        r.supervisorPid = pid
        r.supervisorStartTime = 1
        try controller.runtime.write(r)
        host.processes[pid] = argv
    }

    // MARK: start

    /// An OpenVPN profile whose password is not stored (its anchor, key and
    /// certificate are), saved, with openvpn on PATH.
    func profileAskingForPassword() throws -> Profile {
        let store = PreferencesStore(directory: dir.path + "/etc")
        let result = try ImportFormat.importChecked(try Fixtures.bytes("ovpn/one-ca.ovpn"), name: "asks", source: "one-ca.ovpn")
        for (fp, pem) in result.anchors { try TrustStore(configDirectory: store.directory).install(pem, fingerprint: fp) }
        for (name, value) in result.secrets { try store.secrets.set(result.profile.id, name: name, value: value) }
        guard case .openvpn(var o) = result.profile.protocol else { throw VPNError(.failure, "not openvpn") }
        o.username = "bob"
        o.passwordSecret = "password"
        var p = result.profile
        p.protocol = .openvpn(o)
        try store.save(p)
        _ = FileManager.default.createFile(atPath: dir.path + "/bin/openvpn", contents: Data("#!/bin/false\n".utf8),
                                           attributes: [.posixPermissions: 0o755])
        return p
    }

    @Test func aStartThatNeedsAnAnswerNobodyGivesStartsNothingAndStatusSaysSo() throws {
        let p = try profileAskingForPassword()
        var asked: [CredentialRequest] = []
        let e = #expect(throws: VPNError.self) {
            try useCases.start(p, wait: false, timeout: 9, observer: UseCaseObserver(ask: { asked.append($0); return nil }))
        }
        #expect(e?.code == .configurationInvalid)
        #expect(e?.message == "'asks' needs password, and nobody can be asked (no terminal)")
        #expect(e?.hint?.contains("--password-file") == true)
        #expect(asked.map { $0.fields.map(\.kind) } == [[.username, .password]])
        #expect(host.spawned.isEmpty, "nothing is started")
        #expect(try controller.derive(p).lastDisconnectError?.name == "authenticationRequired")
    }

    /// A kill switch left blocking (`vpnctl block`) stays named in the
    /// record, so that `stop` can still lift it.
    @Test func aDeclinedStartKeepsTheKillSwitchTheRecordNames() throws {
        let p = try profileAskingForPassword()
        try controller.runtime.prepare()
        var r = RuntimeRecord(id: p.id, name: p.name, status: .disconnected)
        r.killSwitch = KillSwitchRecord(table: "vpnctl_ks", netns: nil)
        try controller.runtime.write(r)
        #expect(throws: VPNError.self) { try useCases.start(p, wait: false, timeout: 9) }
        let after = try #require(try controller.runtime.read(p.id))
        #expect(after.killSwitch == KillSwitchRecord(table: "vpnctl_ks", netns: nil))
        #expect(after.lastDisconnectError?.name == "authenticationRequired")
        #expect(after.lastDisconnectError?.message == "needs password, and nobody could be asked")
    }

    @Test func theAnswersGoToTheSupervisorOnItsLineNeverOnItsCommandLine() throws {
        let p = try profileAskingForPassword()
        host.onSpawn = { [controller] pid, _ in
            var r = RuntimeRecord(id: p.id, name: p.name, status: .connecting)
            r.supervisorPid = pid
            r.supervisorStartTime = 1
            try controller.runtime.write(r)
        }
        _ = try useCases.start(p, wait: false, timeout: 9,
                               observer: UseCaseObserver(ask: { _ in CredentialAnswers([.password: "pw-typed"]) }))
        let spawned = try #require(host.spawned.first)
        #expect(spawned.argv.suffix(3) == ["--credentials-fd", "4", p.id.lowercasedString])
        #expect(!spawned.argv.contains { $0.contains("pw-typed") } && !spawned.environment.values.contains { $0.contains("pw-typed") })
    }

    @Test func startSpawnsTheSupervisorThroughTheHostUnderTheStartLock() throws {
        playSupervisor()
        let outcome = try useCases.start(profile, wait: false, timeout: 9)
        guard case .accepted(let d) = outcome else { Issue.record("start: \(outcome)"); return }
        let spawned = try #require(host.spawned.first)
        #expect(host.spawned.count == 1)
        #expect(Array(spawned.argv.dropFirst()) == ["__supervise", "--config-dir", dir.path + "/etc", "--run-dir", Self.run,
                                                    "--timeout", "9", "--notify-fd", "3", "--credentials-fd", "4", id])
        #expect(spawned.environment["PATH"] == dir.path + "/bin" && spawned.environment["LANG"] == "C")
        #expect(d.status == .connecting && d.supervisorAlive && d.record?.supervisorPid == spawned.pid)
        // The log opened before the spawn; the record written while the start lock was held.
        #expect(host.calls.prefix(2) == ["open log \(Self.run)/logs/\(id).log", "spawn \(spawned.argv.dropFirst().joined(separator: " "))"])
        let lock = "\(Self.run)/\(id).start.lock"
        let order = ["lock \(lock)", "write \(recordPath)", "unlock \(lock)"].map { files.calls.firstIndex(of: $0) }
        #expect(order.allSatisfy { $0 != nil } && order == order.sorted { ($0 ?? 0) < ($1 ?? 0) }, "\(files.calls)")
        #expect(files.held.isEmpty)
    }

    @Test func anOnDemandStartNamesItsRuleToTheSupervisor() throws {
        playSupervisor()
        _ = try useCases.start(profile, wait: false, timeout: 9, startedBy: StartOrigin(rule: 2, reason: "on ethernet"))
        let argv = try #require(host.spawned.first?.argv)
        #expect(Array(argv.suffix(7)) == ["--on-demand-rule", "2", "--on-demand-reason", "on ethernet", "--credentials-fd", "4", id])
    }

    @Test func aFailedSpawnLeavesNoRecordAndReleasesTheLock() throws {
        host.spawnError = Errno(EAGAIN)
        #expect {
            _ = try useCases.start(profile, wait: false, timeout: 9)
        } throws: { error in
            (error as? VPNError)?.message.hasPrefix("cannot start the tunnel supervisor: ") == true
        }
        #expect(host.spawned.isEmpty)
        #expect(files.contents(recordPath) == nil)
        #expect(!files.calls.contains { $0.hasPrefix("write ") }, "\(files.calls)")
        #expect(files.calls.last == "unlock \(Self.run)/\(id).start.lock" && files.held.isEmpty)
        #expect(try controller.derive(profile).status == .disconnected)
    }

    @Test func aConnectedTunnelIsNotStartedAgain() throws {
        try recordOfSupervisor(4242, argv: ["vpnctl", "__supervise", id])
        let outcome = try useCases.start(profile, wait: false, timeout: 9)
        guard case .alreadyConnected = outcome else { Issue.record("start: \(outcome)"); return }
        #expect(host.spawned.isEmpty)
    }

    /// Issue 36 item 1: a tunnel started in another network namespace has
    /// its link there. Here its name is no link (or another's): status
    /// takes its live supervisor's word, where a tunnel of this namespace
    /// whose link went reads disconnecting.
    @Test func item1_aTunnelInAnotherNamespaceIsNotJudgedByThisNamespacesLinks() throws {
        try recordOfSupervisor(4242, argv: ["vpnctl", "__supervise", id])
        var r = try #require(try controller.runtime.read(profile.id))
        r.interface = "utun5"
        r.ifindex = 9
        try controller.runtime.write(r)
        #expect(try controller.derive(profile).status == .disconnecting, "here, a connected tunnel without its link")
        host.inOtherNamespaces = [4242]
        #expect(try controller.derive(profile).status == .connected)
        host.links["utun5"] = (3, nil)
        #expect(try controller.derive(profile).status == .connected, "another link of the name, here")
    }

    // MARK: stop

    @Test func stopSignalsTheProvenSupervisorOnly() throws {
        try recordOfSupervisor(4242, argv: ["vpnctl", "__supervise", "--run-dir", Self.run, id])
        let outcome = try useCases.stop(profile, wait: false, timeout: 1)
        guard case .requested(let d) = outcome else { Issue.record("stop: \(outcome)"); return }
        #expect(d.status == .disconnecting)
        #expect(host.calls == ["signal 4242 \(SIGTERM)"])
    }

    /// A live pid that runs something else (a recycled pid), or another
    /// profile's supervisor (a forged record), is never signalled.
    @Test(arguments: [["sshd", "-D"], ["vpnctl", "__supervise", "00000000-0000-0000-0000-000000000001"], ["vpnctl", "status"]])
    func stopDoesNotSignalAPidThatIsNotThisProfilesSupervisor(_ argv: [String]) throws {
        try recordOfSupervisor(4242, argv: argv)
        let outcome = try useCases.stop(profile, wait: false, timeout: 1)
        guard case .notRunning(let d, _) = outcome else { Issue.record("stop: \(outcome)"); return }
        #expect(d.status == .disconnected)
        #expect(!host.calls.contains { $0.hasPrefix("signal 4242") }, "\(host.calls)")
        #expect(host.processes[4242] == argv)
    }

    /// A record the run dir's trust rules refuse makes nobody a target.
    @Test func aStrangersRecordIsRefusedAndSignalsNothing() throws {
        try recordOfSupervisor(4242, argv: ["vpnctl", "__supervise", id])
        files.plant(recordPath, .file(try #require(files.contents(recordPath))), owner: geteuid() + 1)
        #expect(throws: VPNError.self) { _ = try useCases.stop(profile, wait: false, timeout: 1) }
        #expect(host.calls.isEmpty)
    }

    // MARK: the clean-up after a dead supervisor

    @Test func aDeadSupervisorsLinkRoutesAndRulesGoAndTheRecordSaysSo() throws {
        var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connected)
        r.supervisorPid = 4242
        r.interface = "utun97"
        r.ifindex = 7
        var s = AppliedSettings()
        s.excludedRoutes = ["198.18.5.1/32"]
        s.enforcedTable = 51820
        s.enforcedRoutes = ["0.0.0.0/1", "128.0.0.0/1"]
        r.settings = s
        try controller.runtime.prepare()
        try controller.runtime.write(r)
        host.links["utun97"] = (7, InterfaceMark.of(profile.id))
        host.routes = ["198.18.5.1/32 table 254", "198.18.5.1/32 table 51820"]
        host.rules = ["0.0.0.0/1 table 51820", "128.0.0.0/1 table 51820"]

        let outcome = try useCases.stop(profile, wait: false, timeout: 1)
        guard case .notRunning(let d, let cleanedUp) = outcome else { Issue.record("stop: \(outcome)"); return }
        #expect(cleanedUp.prefix(4) == ["deleted interface utun97", "deleted route 198.18.5.1/32",
                                        "deleted rule to 0.0.0.0/1 table 51820", "deleted rule to 128.0.0.0/1 table 51820"])
        #expect(host.links.isEmpty && host.routes.isEmpty && host.rules.isEmpty, "\(host.calls)")
        #expect(d.status == .disconnected && d.stopReason == .providerFailed)
        let after = try #require(try controller.runtime.read(profile.id))
        #expect(after.status == .disconnected && after.resolver == nil && after.connectedSince == nil)
        let events = String(decoding: try #require(files.contents("\(Self.run)/\(id).events")), as: UTF8.self)
        #expect(events.contains(#""status":"disconnected""#) && events.contains(#""previous":"connected""#))
        // Nothing is left to clean up the second time.
        host.calls = []
        guard case .notRunning(_, let again) = try useCases.stop(profile, wait: false, timeout: 1) else { return }
        #expect(again.isEmpty && host.calls.isEmpty)
    }

    @Test func aCleanUpThatCannotWriteTheRecordStillRemovesTheLink() throws {
        try recordOfSupervisor(4242, argv: nil)
        var r = try #require(try controller.runtime.read(profile.id))
        r.interface = "utun97"
        r.ifindex = 7
        try controller.runtime.write(r)
        host.links["utun97"] = (7, InterfaceMark.of(profile.id))
        files.failures["write \(recordPath)"] = Errno(ENOSPC)
        let done = controller.cleanUpAfterDeadSupervisor(try controller.derive(profile))
        #expect(done.first == "deleted interface utun97" && host.links.isEmpty)
        #expect(try controller.runtime.read(profile.id)?.status == .connected, "the old record stays as it was")
    }
}

/// The run directory's trust rules, held against `MemoryFiles`: the same
/// checks (`Files`' extension) the system's files get.
@Suite struct RunDirectoryTrustTests {
    let files = MemoryFiles(effectiveUser: 1000, directories: [])
    let id = UUID()
    var store: RuntimeStore { RuntimeStore(directory: "/run/vpnctl", files: files) }

    init() throws {
        files.addDirectory("/run", owner: 0)
        try RuntimeStore(directory: "/run/vpnctl", files: files).prepare()
        try RuntimeStore(directory: "/run/vpnctl", files: files).write(RuntimeRecord(id: id, name: "x", status: .connected))
    }

    func refusal(_ store: RuntimeStore) -> String? {
        do { _ = try store.read(id); return nil } catch { return (error as? VPNError)?.message ?? "\(error)" }
    }

    @Test func prepareMakesAPrivateDirectoryAndItsLogs() throws {
        #expect(files.calls.prefix(2) == ["mkdir /run/vpnctl", "mkdir /run/vpnctl/logs"])
        #expect(files.entries["/run/vpnctl"] == MemoryFiles.Entry(.directory, owner: 1000, mode: 0o700))
        #expect(try store.read(id)?.status == .connected)
    }

    @Test func aSymlinkedRecordIsRefused() {
        files.plant("/run/vpnctl/\(id.lowercasedString).json", .symlink(to: "/tmp/forged.json"))
        #expect(refusal(store)?.contains("is a symlink") == true)
    }

    @Test func aRecordOfAnotherOwnerIsRefused() {
        files.plant("/run/vpnctl/\(id.lowercasedString).json", .file(Array("{}".utf8)), owner: 2000)
        #expect(refusal(store)?.contains("is owned by uid 2000, not by uid 1000 or root") == true)
    }

    @Test func aRootOwnedRecordIsTrusted() throws {
        let path = "/run/vpnctl/\(id.lowercasedString).json"
        files.plant(path, .file(try #require(files.contents(path))), owner: 0)
        #expect(refusal(store) == nil)
    }

    @Test func aSymlinkedOrSharedRunDirectoryIsRefused() {
        files.plant("/run/vpnctl", .symlink(to: "/tmp/elsewhere"))
        #expect(refusal(store)?.contains("is a symlink") == true)
        files.addDirectory("/run/vpnctl", mode: 0o777)
        #expect(refusal(RuntimeStore(directory: "/run/vpnctl", files: files))?.contains("writable by group or others") == true)
    }

    @Test func anAncestorOthersMayWriteIsRefusedUnlessSticky() {
        files.addDirectory("/run", owner: 0, mode: 0o777)
        #expect(refusal(store)?.contains("lies under /run, which others can write") == true)
        files.addDirectory("/run", owner: 0, mode: 0o1777)
        #expect(refusal(RuntimeStore(directory: "/run/vpnctl", files: files)) == nil)
        files.addDirectory("/run", owner: 2000)
        #expect(refusal(RuntimeStore(directory: "/run/vpnctl", files: files))?.contains("is owned by uid 2000") == true)
    }

    @Test func eventsRotateByRenameAndAFIFOIsRefused() throws {
        var s = store
        s.eventsCap = 200
        let event = TransitionEvent(time: Date(timeIntervalSince1970: 0), id: id.lowercasedString, name: "x",
                                    status: "connected", previous: "connecting", interface: nil, error: nil)
        for _ in 0..<3 { try s.appendEvent(event, id: id) }
        let path = s.eventsPath(id)
        #expect(files.calls.contains("rename \(path) \(path).1"))
        #expect(files.contents(path + ".1") != nil && files.contents(path) != nil)
        files.plant(path, .fifo)
        #expect(throws: VPNError.self) { try s.appendEvent(event, id: id) }
    }
}
