import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// A controller over a private config and run directory.
final class ControllerFixture {
    let dir = TempDir()
    let controller: TunnelController
    let profile = sampleProfile("office")
    var children: [pid_t] = []

    init() throws {
        controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
    }

    deinit { children.forEach { Processes.terminate($0, signal: SIGKILL) } }

    /// A live process whose command line is this profile's supervisor's.
    func liveSupervisor() throws -> (pid: pid_t, startTime: UInt64?) {
        let id = profile.id.uuidString.lowercased()
        let pid = try Processes.spawn("/usr/bin/python3", ["python3", "-c", "import time; time.sleep(30)", "__supervise", id],
                                      environment: [:])
        children.append(pid)
        // Until the exec is done, /proc shows the parent's command line.
        for _ in 0..<400 where Processes.commandLine(of: pid)?.last != id { usleep(5000) }
        return (pid, Processes.startTime(of: pid))
    }

    func record(_ status: VPNStatus, supervisor: (pid: pid_t, startTime: UInt64?)? = nil) -> RuntimeRecord {
        var r = RuntimeRecord(id: profile.id, name: profile.name, status: status)
        r.supervisorPid = supervisor?.pid ?? 999_999
        r.supervisorStartTime = supervisor?.startTime ?? 1
        return r
    }
}

@Suite struct TunnelControllerDeriveTests {
    /// The interface is looked up read-only: `lo` always exists.
    @Test func aConnectedTunnelWhoseInterfaceWasReplacedReadsDisconnecting() throws {
        let f = try ControllerFixture()
        let loIndex = try #require(try NetlinkRouteSocket().linkIndex(named: "lo"))
        var r = f.record(.connected, supervisor: try f.liveSupervisor())
        r.interface = "lo"
        r.ifindex = loIndex
        r.connectedSince = Date(timeIntervalSince1970: 1_764_430_000)
        try f.controller.runtime.write(r)
        var d = try f.controller.derive(f.profile)
        #expect(d.status == .connected)
        #expect(d.supervisorAlive)
        #expect(d.interface == "lo")
        #expect(d.connectedSince == r.connectedSince)
        r.ifindex = loIndex + 100_000
        try f.controller.runtime.write(r)
        d = try f.controller.derive(f.profile)
        #expect(d.status == .disconnecting)
        r.status = .reasserting
        r.interface = "utun-missing"
        try f.controller.runtime.write(r)
        #expect(try f.controller.derive(f.profile).status == .disconnecting)
    }

    @Test func aDisconnectedRecordShowsNoInterfaceButKeepsItsError() throws {
        let f = try ControllerFixture()
        var r = f.record(.disconnected)
        r.interface = "utun0"
        r.connectedSince = Date()
        r.lastDisconnectError = ConnectionError(.serverNotResponding, "no handshake")
        r.stopReason = .connectionFailed
        try f.controller.runtime.write(r)
        let d = try f.controller.derive(f.profile)
        #expect(d.status == .disconnected)
        #expect(d.interface == nil && d.connectedSince == nil)
        #expect(d.lastDisconnectError == r.lastDisconnectError)
        #expect(d.stopReason == .connectionFailed)
        #expect(!d.isActive && d.dns.isEmpty)
    }
}

@Suite struct TunnelControllerCleanUpTests {
    @Test func aDeadSupervisorsProviderIsKilledAndTheRecordSaysWhy() throws {
        let f = try ControllerFixture()
        let provider = try Processes.spawn("/bin/sleep", ["sleep", "30"], environment: [:])
        var r = f.record(.connected)
        r.providerPid = provider
        r.providerStartTime = Processes.startTime(of: provider)
        try f.controller.runtime.write(r)
        let derived = try f.controller.derive(f.profile)
        let done = f.controller.cleanUpAfterDeadSupervisor(derived)
        #expect(done == ["killed provider pid \(provider)"])
        var status: Int32 = 0
        #expect(waitpid(provider, &status, 0) == provider)
        #expect(VPNSystem.ExitStatus(waitStatus: status) == .signalled(SIGKILL))
        let after = try #require(try f.controller.runtime.read(f.profile.id))
        #expect(after.status == .disconnected)
        #expect(after.stopReason == .providerFailed)
        #expect(after.lastDisconnectError == ConnectionError(.pluginFailed,
            "the tunnel supervisor (pid 999999) is gone; it was connected"))
        let events = try String(contentsOfFile: f.controller.runtime.eventsPath(f.profile.id), encoding: .utf8)
        #expect(events.split(separator: "\n").count == 1)
        #expect(events.contains("\"previous\":\"connected\"") && events.contains("\"status\":\"disconnected\""))
        // Done once: a second clean-up finds a disconnected record.
        #expect(f.controller.cleanUpAfterDeadSupervisor(try f.controller.derive(f.profile)) == [])
    }

    /// `lo` has the recorded ifindex but no vpnctl mark: it is not deleted.
    @Test func anInterfaceWithoutTheMarkIsLeftAlone() throws {
        let f = try ControllerFixture()
        var r = f.record(.connecting)
        r.interface = "lo"
        r.ifindex = try #require(try NetlinkRouteSocket().linkIndex(named: "lo"))
        try f.controller.runtime.write(r)
        let done = f.controller.cleanUpAfterDeadSupervisor(try f.controller.derive(f.profile))
        #expect(done == ["left interface lo alone (vpnctl did not create it: no mark)"])
        #expect(try NetlinkRouteSocket().linkIndex(named: "lo") == r.ifindex)
        // Another ifindex under that name is another interface: not even looked at.
        var other = f.record(.connecting)
        other.interface = "lo"
        other.ifindex = r.ifindex! + 100_000
        try f.controller.runtime.write(other)
        #expect(f.controller.cleanUpAfterDeadSupervisor(try f.controller.derive(f.profile)) == [])
    }

    @Test func aLiveSupervisorOrADisconnectedRecordIsNeverCleanedUp() throws {
        let f = try ControllerFixture()
        try f.controller.runtime.write(f.record(.connected, supervisor: try f.liveSupervisor()))
        let live = try f.controller.derive(f.profile)
        #expect(live.supervisorAlive)
        #expect(f.controller.cleanUpAfterDeadSupervisor(live) == [])
        #expect(try f.controller.runtime.read(f.profile.id)?.status == .connected)
    }
}

@Suite struct TunnelControllerSpawnTests {
    /// A stand-in for vpnctl that writes its argv and environment, and rings fd 3.
    func standIn(_ dir: String) throws -> String {
        let path = dir + "/vpnctl"
        let script = """
        #!/bin/sh
        printf '%s\\n' "$@" > "$0.args"
        echo "PATH=$PATH LANG=$LANG"
        printf x >&3

        """
        try AtomicFile.write(Array(script.utf8), to: path, mode: 0o755, durable: false)
        return path
    }

    /// Another test's spawn can hold the new script's write fd for an instant
    /// (fork before close-on-exec): exec then fails with ETXTBSY. Try again.
    func spawn(_ f: ControllerFixture, _ exe: String) throws -> (pid: pid_t, doorbell: Int32) {
        for _ in 0..<100 {
            do { return try f.controller.spawnSupervisor(f.profile, timeout: 7, path: "/opt/test/bin:/bin", executable: exe) }
            catch let e as VPNError where e.message.hasSuffix("text file busy") { usleep(10_000) }
        }
        return try f.controller.spawnSupervisor(f.profile, timeout: 7, path: "/opt/test/bin:/bin", executable: exe)
    }

    @Test func theSupervisorGetsItsArgumentsAnEnvironmentAndTheRinger() throws {
        let f = try ControllerFixture()
        let exe = try standIn(f.dir.path)
        let (pid, doorbell) = try spawn(f, exe)
        defer { close(doorbell) }
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid)
        #expect(VPNSystem.ExitStatus(waitStatus: status) == .exited(0))
        var byte: UInt8 = 0
        #expect(recv(doorbell, &byte, 1, 0) == 1 && byte == UInt8(ascii: "x"))
        #expect(Doorbell.drain(doorbell) == false, "no other process holds the ringer")
        let args = try String(contentsOfFile: exe + ".args", encoding: .utf8)
        #expect(args.split(separator: "\n").map(String.init) == [
            "__supervise", "--config-dir", f.dir.path + "/etc", "--run-dir", f.dir.path + "/run",
            "--timeout", "7", "--notify-fd", "3", f.profile.id.uuidString.lowercased()])
        let log = try String(contentsOfFile: f.controller.runtime.logPath(f.profile.id), encoding: .utf8)
        #expect(log == "PATH=/opt/test/bin:/bin LANG=C\n")
    }

    @Test func aSupervisorThatCannotStartIsNamed() throws {
        let f = try ControllerFixture()
        let missing = f.dir.path + "/no-such-vpnctl"
        let e = #expect(throws: VPNError.self) {
            _ = try f.controller.spawnSupervisor(f.profile, timeout: 7, path: nil, executable: missing)
        }
        #expect(e?.code == .failure)
        #expect(e?.message == "cannot start the tunnel supervisor: cannot run \(missing): no such file or directory")
    }

    @Test func anUnopenableLogIsNamed() throws {
        let f = try ControllerFixture()
        let log = f.controller.runtime.logPath(f.profile.id)
        mkdir(log, 0o700)
        let e = #expect(throws: VPNError.self) {
            _ = try f.controller.spawnSupervisor(f.profile, timeout: 7, path: nil, executable: "/bin/true")
        }
        #expect(e?.code == .configurationReadWriteFailed)
        #expect(e?.message == "cannot open \(log): is a directory")
    }
}

@Suite struct TunnelControllerWaitTests {
    @Test func aStatusThatIsDoneReturnsAtOnce() throws {
        let f = try ControllerFixture()
        var wakes = 0
        let d = try f.controller.wait(for: f.profile, timeoutMs: 5_000, supervisor: nil, onWake: { wakes += 1 }) { _ in true }
        #expect(d?.status == .disconnected)
        #expect(wakes == 0)
    }

    @Test func noTimeLeftIsNil() throws {
        let f = try ControllerFixture()
        #expect(try f.controller.wait(for: f.profile, timeoutMs: 0, supervisor: nil) { _ in false } == nil)
    }

    /// A ring wakes the wait, which derives the status afresh.
    @Test(arguments: [false, true]) func theDoorbellWakesIt(ringerCloses: Bool) throws {
        let f = try ControllerFixture()
        let bell = try Doorbell.pair()
        defer { close(bell.listener) }
        var looks = 0, wakes = 0
        let d = try f.controller.wait(for: f.profile, timeoutMs: 60_000, supervisor: nil, doorbell: bell.listener,
                                      onWake: { wakes += 1 }) { _ in
            looks += 1
            if looks == 1 { if ringerCloses { close(bell.ringer) } else { Doorbell.ring(bell.ringer) } }
            return looks == 2
        }
        if !ringerCloses { close(bell.ringer) }
        #expect(d?.status == .disconnected)
        #expect(wakes == 1)
    }

    /// Without a doorbell, a record replaced in the run directory wakes it.
    @Test func aReplacedRecordWakesIt() throws {
        let f = try ControllerFixture()
        var wakes = 0
        let d = try f.controller.wait(for: f.profile, timeoutMs: 60_000, supervisor: nil, onWake: { wakes += 1 }) { d in
            if d.record == nil { try? f.controller.runtime.write(f.record(.connecting)) }
            return d.record != nil
        }
        #expect(d?.record?.status == .connecting)
        #expect(d?.status == .disconnected, "its supervisor is dead")
        #expect(wakes == 1)
    }

    /// A stop is done when the supervisor is gone, whatever the record says.
    @Test func theSupervisorsExitEndsTheWait() throws {
        let f = try ControllerFixture()
        let pid = try Processes.spawn("/bin/true", ["true"], environment: [:])
        defer { Processes.terminate(pid) }
        var looks = 0
        let d = try f.controller.wait(for: f.profile, timeoutMs: 60_000, supervisor: pid, watchRecords: false) { _ in
            looks += 1
            return false
        }
        #expect(d?.status == .disconnected)
        #expect(looks >= 2)
    }
}
