import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// start's checks, in the order a user meets them, without spawning anything.
@Suite struct UseCaseTests {
    func fixture() throws -> (TempDir, TunnelUseCases, Profile) {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        let p = try store.save(sampleProfile("office"))
        try store.secrets.set(p.id, name: "private-key", value: Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8))
        let bin = dir.path + "/bin"
        mkdir(bin, 0o755)
        FileManager.default.createFile(atPath: bin + "/wireguard-go", contents: Data("#!/bin/sh\n".utf8),
                                       attributes: [.posixPermissions: 0o755])
        var u = TunnelUseCases(store: store, controller: TunnelController(configDirectory: store.directory, runDirectory: dir.path + "/run"),
                               path: bin)
        u.canAdministerNetwork = { true }
        return (dir, u, p)
    }

    func code(_ body: () throws -> Void) -> ExitCode? {
        do { try body(); return .ok } catch let e as VPNError { return e.code } catch { return nil }
    }

    @Test func preflightNamesEachProblemWithItsExitCode() throws {
        let (dir, u, p) = try fixture()
        #expect(code { try u.preflight(p) } == .ok)
        var disabled = p
        disabled.enabled = false
        #expect(code { try u.preflight(disabled) } == .configurationDisabled)
        var noPeer = p
        if case .wireguard(var w) = noPeer.protocol { w.peers = []; noPeer.protocol = .wireguard(w) }
        #expect(code { try u.preflight(noPeer) } == .configurationInvalid)
        var noProgram = u
        noProgram = TunnelUseCases(store: u.store, controller: u.controller, path: dir.path + "/empty")
        noProgram.canAdministerNetwork = { true }
        let e = #expect(throws: VPNError.self) { try noProgram.preflight(p) }
        #expect(e?.code == .providerUnavailable && e?.hint == "install it: apt-get install --no-install-recommends wireguard-go")
        var unprivileged = u
        unprivileged.canAdministerNetwork = { false }
        #expect(code { try unprivileged.preflight(p) } == .permissionDenied)
        let plugin = Profile(name: "i", protocol: .provider(ProviderConfiguration(providerIdentifier: "com.example.vpn")))
        #expect(code { try u.preflight(plugin) } == .providerUnavailable)
    }

    @Test func stopOfAProfileThatNeverRanIsNotRunning() throws {
        let (_, u, p) = try fixture()
        guard case .notRunning(let d, let cleaned) = try u.stop(p, wait: true, timeout: 1) else {
            Issue.record("expected notRunning"); return
        }
        #expect(d.status == .disconnected && cleaned.isEmpty)
    }
}
