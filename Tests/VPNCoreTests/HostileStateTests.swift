import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Root acts on files and records: each must prove it can be trusted before
/// vpnctl reads it, signals a process for it or deletes an interface for it.
@Suite(.enabled(if: geteuid() == 0, "changing owners needs root"))
struct HostileStateTests {
    let nobody: uid_t = 65534

    func expectPermissionDenied(_ what: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("\(what): accepted")
        } catch let e as VPNError {
            #expect(e.code == .permissionDenied, "\(what): \(e.message)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test func configDirWritableByOthersIsRefusedOnRead() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        try store.save(sampleProfile("office"))
        chmod(store.directory, 0o777)
        expectPermissionDenied("0777 config dir") { _ = try store.load() }
        chmod(store.directory, 0o700)
        #expect(try store.load().count == 1)
    }

    @Test func preferencesOwnedBySomebodyElseAreRefused() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        try store.save(sampleProfile("office"))
        chown(store.path, nobody, nobody)
        expectPermissionDenied("preferences owned by nobody") { _ = try store.load() }
    }

    @Test func configDirUnderAnOpenDirectoryIsRefused() throws {
        let dir = TempDir()
        mkdir(dir.path + "/open", 0o777)
        chmod(dir.path + "/open", 0o777)  // not sticky: anybody could swap what is below
        let store = PreferencesStore(directory: dir.path + "/open/etc")
        mkdir(store.directory, 0o700)
        do {
            _ = try store.load()
            Issue.record("accepted")
        } catch let e as VPNError {
            #expect(e.code == .permissionDenied)
            #expect(e.message.contains("\(dir.path)/open"))
        }
    }

    @Test func symlinkedConfigDirIsRefusedHoweverSpelled() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/real")
        try store.save(sampleProfile("office"))
        symlink(dir.path + "/real", dir.path + "/link")
        for spelling in ["/link", "/link/.", "/link/./"] {
            expectPermissionDenied(spelling) { _ = try PreferencesStore(directory: dir.path + spelling).load() }
        }
    }

    @Test func secretOwnedBySomebodyElseIsRefusedBeforeUse() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        let p = try store.save(sampleProfile("office"))
        try store.secrets.set(p.id, name: "private-key", value: Array("k".utf8))
        try store.secrets.check(p.id, name: "private-key")
        chown(store.secrets.path(p.id, "private-key"), nobody, nobody)
        expectPermissionDenied("secret owned by nobody") { try store.secrets.check(p.id, name: "private-key") }
        expectPermissionDenied("secret owned by nobody") { _ = try store.secrets.read(p.id, name: "private-key") }
    }

    @Test func runDirOwnedBySomebodyElseIsRefused() throws {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let profile = sampleProfile("office")
        try controller.runtime.write(RuntimeRecord(id: profile.id, name: "office", status: .connected))
        chown(controller.runtime.directory, nobody, nobody)
        expectPermissionDenied("run dir owned by nobody") { _ = try controller.derive(profile) }
        chown(controller.runtime.directory, 0, 0)
        chown(controller.runtime.recordPath(profile.id), nobody, nobody)
        expectPermissionDenied("record owned by nobody") { _ = try controller.derive(profile) }
    }

    /// A dead supervisor's record names a live process with no start time:
    /// nothing may be signalled for it.
    @Test func cleanupSignalsNothingARecordCannotProve() throws {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let profile = sampleProfile("office")
        let victim = try Processes.spawn("/bin/sleep", ["sleep", "30"], environment: [:])
        defer { Processes.terminate(victim, signal: SIGKILL) }
        var r = RuntimeRecord(id: profile.id, name: "office", status: .connected)
        r.supervisorPid = 999_999
        r.supervisorStartTime = 1
        r.providerPid = victim
        try controller.runtime.write(r)
        let done = controller.cleanUpAfterDeadSupervisor(try controller.derive(profile))
        #expect(!done.contains { $0.hasPrefix("killed") }, "\(done)")
        #expect(Processes.reap(victim) == nil && kill(victim, 0) == 0)
    }
}

@Suite struct InterfaceOwnershipTests {
    func config(addresses: [String], allowed: [String], name: String? = nil) -> WireGuardConfiguration {
        WireGuardConfiguration(privateKeySecret: "k", addresses: addresses, interfaceName: name,
                               peers: [WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                                                     allowedIPs: allowed, endpoint: "198.18.0.1:51820")])
    }

    func start(_ system: FakeTunnelSystem, _ c: WireGuardConfiguration) throws -> WireGuardTunnel {
        let t = WireGuardTunnel(profileID: UUID(), config: c, system: system, log: { _ in })
        try t.start(wireguardGo: "/wg", logFD: 2, privateKey: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=", presharedKeys: [:])
        return t
    }

    @Test func anExistingInterfaceNameIsRefusedBeforeAnythingIsTouched() {
        let system = FakeTunnelSystem()
        system.existing = ["admin0"]
        let f = #expect(throws: WireGuardTunnel.Failure.self) {
            _ = try start(system, config(addresses: ["10.8.0.2/32"], allowed: ["10.8.0.0/24"], name: "admin0"))
        }
        #expect(f?.error.message.contains("admin0 already exists") == true)
        #expect(!system.calls.contains { $0.hasPrefix("createTun") || $0.hasPrefix("deleteLink") })
    }

    /// wg-quick's commonest shape: the address's subnet is the allowed IPs.
    /// The kernel's own prefix route is not added again (it exists already).
    @Test func theKernelsSubnetRouteIsNotAddedTwice() throws {
        let system = FakeTunnelSystem()
        let t = try start(system, config(addresses: ["10.8.0.2/24", "fd08::2/64"], allowed: ["10.8.0.0/24", "fd08::/64", "10.9.0.0/16"]))
        let routes = system.calls.filter { $0.hasPrefix("addRoute") }
        #expect(routes == ["addRoute 10.9.0.0/16 dev 7"])
        #expect(t.settings.routes == ["10.8.0.0/24", "fd08::/64", "10.9.0.0/16"])
        system.calls = []
        t.stop()
        #expect(system.calls.filter { $0.hasPrefix("deleteRoute") } == ["deleteRoute 10.9.0.0/16"])
    }

    @Test func aHostAddressStillGetsItsRoute() throws {
        let system = FakeTunnelSystem()
        _ = try start(system, config(addresses: ["10.8.0.2/32"], allowed: ["10.8.0.0/24"]))
        #expect(system.calls.contains("addRoute 10.8.0.0/24 dev 7"))
    }
}
