import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// A supervisor over a fake system in a private directory, logging to its
/// own file. Its children are the fake's, reported by `reaped`.
final class SupervisorFixture {
    let dir = TempDir()
    let system = FakeTunnelSystem()
    let store: PreferencesStore
    let runtime: RuntimeStore
    var systemFails = false
    /// The children the next reap returns (each is reaped once). A stray
    /// SIGCHLD from another test's child may run the reaper too.
    var reaped: [(pid: pid_t, status: VPNSystem.ExitStatus)] = []
    var logFDs: [Int32] = []

    init() throws {
        store = PreferencesStore(directory: dir.path + "/etc")
        runtime = RuntimeStore(directory: dir.path + "/run")
        try runtime.prepare()
    }

    deinit { logFDs.forEach { close($0) } }

    func supervisor(_ id: UUID, timeoutSeconds: Int64 = 20, notifyFD: Int32 = -1) -> Supervisor {
        let fd = open(runtime.logPath(id), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        logFDs.append(fd)
        let options = Supervisor.Options(configDirectory: store.directory, runDirectory: runtime.directory,
                                         startTimeout: timeoutSeconds, path: nil, notifyFD: notifyFD)
        return Supervisor(id: id, options: options, logFD: fd, system: { [unowned self] in
            if systemFails { throw FakeTunnelSystem.Injected() }
            return system
        }, reap: { [unowned self] in
            defer { reaped = [] }
            return reaped
        })
    }

    /// The log's messages, without their timestamps.
    func log(_ id: UUID) -> [String] {
        let text = (try? String(contentsOfFile: runtime.logPath(id), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { String($0.drop { $0 != " " }.dropFirst()) }
    }

    /// A WireGuard profile saved with its key.
    func wireguardProfile() throws -> Profile {
        let profile = try store.save(sampleProfile("wg"))
        try store.secrets.set(profile.id, name: "private-key", value: Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        return profile
    }
}

/// `run` blocks the supervisor's signals on the calling thread and reads them
/// from a signalfd. Afterwards this takes back whatever is still pending for
/// the thread and restores its mask, so the test runner's thread is as it was.
func withSupervisorSignals<T>(_ body: () throws -> T) rethrows -> T {
    var old = sigset_t()
    pthread_sigmask(SIG_SETMASK, nil, &old)
    defer {
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGCHLD] { sigaddset(&set, s) }
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        while sigtimedwait(&set, nil, &zero) > 0 {}
        pthread_sigmask(SIG_SETMASK, &old, nil)
    }
    return try body()
}

/// What `body` throws, as the product quotes it ("\(error)").
func errorText(_ body: () throws -> Void) -> String? {
    do { try body() } catch { return "\(error)" }
    return nil
}

/// A reply to `get=1` with one peer that completed a handshake just now.
func handshakeReply(rx: Int = 92, tx: Int = 148) -> String {
    let now = Int(Date().timeIntervalSince1970)
    return """
    public_key=c53201039adba14be71f886da1d8dbe9eebded08cb111b75340078999aa9f038
    endpoint=198.18.0.1:51820
    last_handshake_time_sec=\(now)
    last_handshake_time_nsec=0
    tx_bytes=\(tx)
    rx_bytes=\(rx)
    persistent_keepalive_interval=0
    allowed_ip=0.0.0.0/0
    errno=0


    """
}

@Suite struct SupervisorRefusalTests {
    @Test func aRemovedProfileIsRefusedAndTheStarterIsToldAndReleased() throws {
        let f = try SupervisorFixture()
        let id = UUID()
        let bell = try Doorbell.pair()
        defer { close(bell.listener) }
        let code = withSupervisorSignals { f.supervisor(id, notifyFD: bell.ringer).run() }
        #expect(code == 1)
        let r = try #require(try f.runtime.read(id))
        #expect(r.status == .disconnected)
        #expect(r.lastDisconnectError == ConnectionError(.configurationNotFound, "the profile was removed"))
        #expect(r.stopReason == .configurationRemoved)
        #expect(r.supervisorPid == getpid())
        #expect(f.log(id) == ["[*] disconnected: configurationNotFound: the profile was removed"])
        // One ring, then the ringer is closed: the starter stops waiting.
        var byte: UInt8 = 0
        #expect(recv(bell.listener, &byte, 1, Int32(MSG_DONTWAIT)) == 1)
        #expect(Doorbell.drain(bell.listener) == false)
        #expect(f.system.calls.isEmpty, "nothing was touched: \(f.system.calls)")
    }

    @Test func unreadablePreferencesAreAConfigurationFailure() throws {
        let f = try SupervisorFixture()
        let profile = try f.store.save(sampleProfile("office"))
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: f.store.path))
        let expected = try #require(errorText { _ = try f.store.load() })
        let code = withSupervisorSignals { f.supervisor(profile.id).run() }
        #expect(code == 1)
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.lastDisconnectError == ConnectionError(.configurationFailed, expected))
        #expect(r.stopReason == .configurationFailed)
        #expect(r.name == profile.id.uuidString.lowercased(), "the name is not known")
    }

    @Test func aSystemThatCannotBeOpenedIsAConfigurationFailure() throws {
        let f = try SupervisorFixture()
        let profile = try f.wireguardProfile()
        f.systemFails = true
        let code = withSupervisorSignals { f.supervisor(profile.id).run() }
        #expect(code == 1)
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.lastDisconnectError == ConnectionError(.configurationFailed, "Injected()"))
        #expect(r.stopReason == .configurationFailed)
    }

    @Test func aSecondSupervisorForTheSameProfileLeavesEverythingToTheFirst() throws {
        let f = try SupervisorFixture()
        let profile = try f.wireguardProfile()
        let held = try #require(try FileLock.tryLock(path: "\(f.runtime.directory)/\(profile.id.uuidString.lowercased()).lock"))
        let code = withSupervisorSignals { f.supervisor(profile.id).run() }
        withExtendedLifetime(held) {}
        #expect(code == 1)
        #expect(f.log(profile.id) == ["[!] another supervisor runs this profile"])
        #expect(try f.runtime.read(profile.id) == nil, "the first supervisor's record is not touched")
        #expect(f.system.calls.isEmpty)
    }

    /// Every protocol has a built-in provider now; a provider profile whose
    /// plugin is not installed is the case where nothing can run it.
    @Test func aProfileNoProviderRunsIsNamed() throws {
        let f = try SupervisorFixture()
        let profile = try f.store.save(Profile(name: "ext", protocol: .provider(ProviderConfiguration(providerIdentifier: "com.example.not-installed"))))
        let code = withSupervisorSignals { f.supervisor(profile.id).run() }
        #expect(code == 1)
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.name == "ext")
        #expect(r.status == .disconnected)
        #expect(r.lastDisconnectError?.message.contains("com.example.not-installed") == true, "\(String(describing: r.lastDisconnectError))")
        #expect(f.log(profile.id).first == "[*] disconnected -> connecting")
        #expect(f.log(profile.id).last?.hasPrefix("[*] connecting -> disconnected: ") == true, "\(f.log(profile.id))")
    }
}

@Suite struct SupervisorLoopTests {
    /// SIGINT and SIGTERM together stop the tunnel once; the stop undoes
    /// everything and the record ends disconnected with no error.
    @Test func stopSignalsStopTheTunnelOnceAndEverythingIsUndone() throws {
        let f = try SupervisorFixture()
        let profile = try f.wireguardProfile()
        f.system.getReply = handshakeReply()
        var raised = false
        f.system.onUAPI = { request in
            // Pending until the loop's first wait, after the first look at the peers.
            guard request == "get=1", !raised else { return }
            raised = true
            pthread_kill(pthread_self(), SIGTERM)
            pthread_kill(pthread_self(), SIGINT)
        }
        let bell = try Doorbell.pair()
        defer { close(bell.listener) }
        let code = withSupervisorSignals { f.supervisor(profile.id, notifyFD: bell.ringer).run() }
        #expect(code == 0)
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.status == .disconnected)
        #expect(r.stopReason == .userInitiated)
        #expect(r.lastDisconnectError == nil)
        #expect(r.providerPid == 4242)
        let log = f.log(profile.id).filter { $0.hasPrefix("[*]") }
        #expect(log == ["[*] disconnected -> connecting", "[*] connecting -> connected", "[*] signal 2: stopping",
                        "[*] connected -> disconnecting", "[*] disconnecting -> disconnected"])
        #expect(f.system.calls.last == "deleteLink utun0")
        // The starter's doorbell was closed once connected.
        #expect(Doorbell.drain(bell.listener) == false)
    }

    @Test func aReapedProviderEndsTheTunnelAndOtherChildrenDoNot() throws {
        let f = try SupervisorFixture()
        let profile = try f.wireguardProfile()
        f.reaped = [(pid: 999, status: .exited(0)), (pid: 4242, status: .signalled(9))]
        var raised = false
        f.system.onUAPI = { request in
            guard request == "get=1", !raised else { return }
            raised = true
            pthread_kill(pthread_self(), SIGCHLD)
        }
        let code = withSupervisorSignals { f.supervisor(profile.id).run() }
        #expect(code == 1)
        #expect(f.reaped.isEmpty, "reaped")
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.lastDisconnectError == ConnectionError(.pluginFailed, "wireguard-go (pid 4242) was killed by signal 9"))
        #expect(r.stopReason == .providerFailed)
        #expect(f.log(profile.id).contains("[!] wireguard-go was killed by signal 9"))
        #expect(f.system.calls.last == "deleteLink utun0")
    }

    /// No handshake and no signal: the start timeout ends the loop.
    @Test func aStartThatNeverConnectsEndsAtTheTimeout() throws {
        let f = try SupervisorFixture()
        let profile = try f.wireguardProfile()
        let code = withSupervisorSignals { f.supervisor(profile.id, timeoutSeconds: 0).run() }
        #expect(code == 1)
        let r = try #require(try f.runtime.read(profile.id))
        #expect(r.lastDisconnectError == ConnectionError(.serverNotResponding,
            "no handshake within 0 s from peer xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg= at 198.18.0.1:51820"))
        #expect(r.stopReason == .connectionFailed)
        #expect(f.system.calls.last == "deleteLink utun0")
    }
}
