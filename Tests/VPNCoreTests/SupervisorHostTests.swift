import Foundation
import Testing
@testable import VPNCore
import VPNSystem
import VPNTestSupport

/// TunnelController against the fake: no root, no process or link of the machine.
@Suite struct SupervisorHostTests {
    let dir = TempDir()
    let host = FakeSupervisorHost()
    let profile = sampleProfile("office")
    var controller: TunnelController {
        TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run", host: host)
    }

    /// A record of a connected tunnel whose supervisor (pid 4242) is gone; its
    /// wireguard-go (4343) lives on, with utun7 (marked), an excluded route
    /// and an enforceRoutes rule.
    func deadSupervisorsRecord() throws -> RuntimeRecord {
        var r = RuntimeRecord(id: profile.id, name: profile.name, status: .connected)
        r.supervisorPid = 4242
        r.supervisorStartTime = 1
        r.providerPid = 4343
        r.interface = "utun7"
        r.ifindex = 7
        var s = AppliedSettings()
        s.excludedRoutes = ["198.18.5.1/32"]
        s.enforcedTable = 51820
        s.enforcedRoutes = ["0.0.0.0/1"]
        r.settings = s
        host.processes[4343] = ["wireguard-go", "-f", "utun7"]
        host.links["utun7"] = (7, InterfaceMark.of(profile.id))
        host.routes = ["198.18.5.1/32 table 254", "198.18.5.1/32 table 51820"]
        host.rules = ["0.0.0.0/1 table 51820"]
        try controller.runtime.prepare()
        try controller.runtime.write(r)
        return r
    }

    @Test func aDeadSupervisorIsCleanedUpThroughTheHost() throws {
        _ = try deadSupervisorsRecord()
        let derived = try controller.derive(profile)
        #expect(!derived.supervisorAlive && derived.status == .disconnected)
        let done = controller.cleanUpAfterDeadSupervisor(derived)
        #expect(done == ["killed provider pid 4343", "deleted interface utun7", "deleted route 198.18.5.1/32",
                         "deleted rule to 0.0.0.0/1 table 51820"])
        #expect(host.calls == ["signal 4343 \(SIGKILL)", "delete link utun7", "delete route 198.18.5.1/32 table 254",
                               "delete rule to 0.0.0.0/1 table 51820 priority \(SettingsApplier.enforcedRulePriority)",
                               "delete route 198.18.5.1/32 table 51820"])
        #expect(host.links.isEmpty && host.routes.isEmpty && host.rules.isEmpty && host.processes.isEmpty)
        let after = try #require(try controller.runtime.read(profile.id))
        #expect(after.status == .disconnected && after.stopReason == .providerFailed)
        // Once: the record now says disconnected.
        #expect(controller.cleanUpAfterDeadSupervisor(try controller.derive(profile)) == [])
    }

    /// A link of that name with another index, or without the mark, is not deleted.
    @Test func aLinkThatIsNotTheTunnelsIsLeftAlone() throws {
        _ = try deadSupervisorsRecord()
        host.links["utun7"] = (7, nil)
        var done = controller.cleanUpAfterDeadSupervisor(try controller.derive(profile))
        #expect(done.contains("left interface utun7 alone (vpnctl did not create it: no mark)"))
        #expect(!host.calls.contains("delete link utun7"))
        _ = try deadSupervisorsRecord()
        host.links["utun7"] = (8, InterfaceMark.of(profile.id))
        done = controller.cleanUpAfterDeadSupervisor(try controller.derive(profile))
        #expect(!done.contains { $0.contains("utun7") })
        #expect(host.links["utun7"] != nil)
    }

    /// stop: a supervisor the record proves (pid, start time, command line)
    /// is signalled through the host, and nothing is cleaned up under it; a
    /// dead one's leftovers are cleaned up instead. The pid is a child of
    /// this test (`sleep`), so that nothing else could be meant by it.
    @Test func stopSignalsAProvenSupervisorAndCleansUpAfterADeadOne() throws {
        let child = try Processes.spawn("/bin/sleep", ["sleep", "30"], environment: [:])
        defer { kill(child, SIGKILL); waitpid(child, nil, 0) }
        var r = try deadSupervisorsRecord()
        r.supervisorPid = child
        try controller.runtime.write(r)
        host.processes[child] = ["vpnctl", "__supervise", profile.id.lowercasedString]
        let use = TunnelUseCases(store: PreferencesStore(directory: dir.path + "/etc"), controller: controller, path: nil)

        let requested = try use.stop(profile, wait: false, timeout: 1)
        guard case .requested(let d) = requested else { Issue.record("stop: \(requested)"); return }
        #expect(d.status == .disconnecting)
        // SIGTERM to the supervisor, through the host; nothing cleaned up under a live supervisor.
        #expect(host.calls == ["signal \(child) \(SIGTERM)"])

        // The fake took the signalled supervisor away; its provider is left.
        let after = try use.stop(profile, wait: false, timeout: 1)
        guard case .notRunning(let gone, let cleanedUp) = after else { Issue.record("stop: \(after)"); return }
        #expect(gone.status == .disconnected)
        #expect(cleanedUp.prefix(2) == ["killed provider pid 4343", "deleted interface utun7"])
    }

    @Test func aLogThatCannotBeOpenedStopsTheSpawn() throws {
        try controller.runtime.prepare()
        host.logError = Errno(EACCES)
        #expect {
            _ = try controller.spawnSupervisor(profile, timeout: 5, path: nil, executable: "/bin/true")
        } throws: { error in
            (error as? VPNError)?.message == "cannot open \(controller.runtime.logPath(profile.id)): permission denied"
        }
        #expect(host.spawned.isEmpty)
    }
}
