import Foundation
import Testing
@testable import VPNCore
import VPNSystem

@Suite struct StoreTests {
    @Test func roundTripKeepsEveryField() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        var p = sampleProfile("office")
        p.onDemand = OnDemand(enabled: true, rules: [OnDemandRule(action: .connect, interfaceType: .wifi, probeURL: "https://intranet.example/")])
        p.policy = Policy(users: ["alice"], groups: ["vpn"])
        let saved = try store.save(p)
        #expect(saved.revision == 1)
        let loaded = try store.load()
        #expect(loaded == [saved])
        let info = try #require(try FileSystem.info(store.path))
        #expect(info.mode == 0o600)
        #expect(try FileSystem.info(dir.path + "/etc")?.mode == 0o700)
    }

    @Test func revisionIncrementsAndStaleSaveFails() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        let v1 = try store.save(sampleProfile("office"))
        var a = v1, b = v1
        a.enabled = false
        let v2 = try store.save(a)
        #expect(v2.revision == 2)
        b.name = "renamed"
        let error = #expect(throws: VPNError.self) { try store.save(b) }
        #expect(error?.code == .configurationStale)
        #expect(try store.load() == [v2])
    }

    @Test func managerIsInvalidUntilLoadedAndRefusesUnloadedSave() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        let saved = try store.save(sampleProfile("office"))
        let m = ProfileManager(store: store)
        #expect(m.status(of: saved.id) == .invalid)
        #expect(throws: VPNError.self) { try m.save(saved) }
        try m.load()
        #expect(m.status(of: saved.id) == .disconnected)
        #expect(try m.profile(named: "office").id == saved.id)
        #expect(try m.profile(named: saved.id.uuidString.lowercased()).name == "office")
        let e = #expect(throws: VPNError.self) { try m.profile(named: "ofice") }
        #expect(e?.code == .configurationUnknown)
        #expect(e?.hint?.contains("'office'") == true)
    }

    @Test func duplicateNamesAreRefused() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        try store.save(sampleProfile("office"))
        let e = #expect(throws: VPNError.self) { try store.save(sampleProfile("office")) }
        #expect(e?.code == .configurationInvalid)
    }

    @Test(arguments: [
        ("{\n  \"schemaVersion\": 1,\n  \"profiles\": [\n    {,}\n  ]\n}\n", "4:6"),
        ("{\"schemaVersion\": 1, \"profiles\": [", "1:35"),
        ("{\"schemaVersion\": 1 \"profiles\": []}", "1:21"),
        ("\n\n   nul", "3:4"),
    ])
    func malformedFileIsReportedWithLineAndColumnAndLeftUnchanged(text: String, position: String) throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        try Data(text.utf8).write(to: URL(fileURLWithPath: store.path))
        let e = #expect(throws: VPNError.self) { try store.load() }
        #expect(e?.code == .configurationReadWriteFailed)
        #expect(e?.message.hasPrefix("\(store.path):\(position):") == true, "\(e?.message ?? "")")
        #expect(throws: VPNError.self) { try store.save(sampleProfile("x")) }
        #expect(try String(contentsOfFile: store.path, encoding: .utf8) == text)
    }

    @Test func wrongTypeIsReportedByPath() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        let text = """
        {"schemaVersion": 1, "profiles": [{"id": "6e8f7c52-6a43-4c7e-9d0e-3b0f7f6c1a11", "name": "x", "enabled": "yes",
          "protocol": {"type": "wireguard"}}]}
        """
        try Data(text.utf8).write(to: URL(fileURLWithPath: store.path))
        let e = #expect(throws: VPNError.self) { try store.load() }
        #expect(e?.message.contains("profiles[0].enabled") == true, "\(e?.message ?? "")")
    }

    @Test func newerSchemaIsRefused() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        try Data("{\"schemaVersion\": 9, \"profiles\": []}".utf8).write(to: URL(fileURLWithPath: store.path))
        let e = #expect(throws: VPNError.self) { try store.load() }
        #expect(e?.message.contains("newer") == true)
    }

    @Test func failureBeforeRenameLeavesOldFileAndNoTemp() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        try store.save(sampleProfile("office"))
        let before = try Data(contentsOf: URL(fileURLWithPath: store.path))
        struct Injected: Error {}
        store.beforeReplace = { throw Injected() }
        #expect(throws: VPNError.self) { try store.save(sampleProfile("second")) }
        store.beforeReplace = nil
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
        #expect(try store.load().map(\.name) == ["office"])
    }

    @Test func symlinkedConfigDirectoryIsRefused() throws {
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.path + "/real", withIntermediateDirectories: false)
        chmod(dir.path + "/real", 0o700)
        symlink(dir.path + "/real", dir.path + "/link")
        let store = PreferencesStore(directory: dir.path + "/link")
        let e = #expect(throws: VPNError.self) { try store.save(sampleProfile("x")) }
        #expect(e?.code == .permissionDenied)
        #expect(e?.message.contains("symlink") == true)
    }

    @Test func groupWritableConfigDirectoryIsRefused() throws {
        let dir = TempDir()
        chmod(dir.path, 0o770)
        let e = #expect(throws: VPNError.self) { try PreferencesStore(directory: dir.path).save(sampleProfile("x")) }
        #expect(e?.code == .permissionDenied)
    }

    @Test func removeDeletesSecrets() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        let p = try store.save(sampleProfile("office"))
        try store.secrets.set(p.id, name: "private-key", value: Array("k".utf8))
        #expect(store.secrets.exists(p.id, name: "private-key"))
        try store.remove(id: p.id)
        #expect(try store.load().isEmpty)
        #expect(!store.secrets.exists(p.id, name: "private-key"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/secrets/" + p.id.uuidString.lowercased()))
    }

    @Test func secretFilesArePrivateAndRefusedWhenReadableByOthers() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        let p = try store.save(sampleProfile("office"))
        try store.secrets.set(p.id, name: "password", value: Array("hunter2".utf8))
        let path = store.secrets.path(p.id, "password")
        #expect(try FileSystem.info(path)?.mode == 0o600)
        #expect(try store.secrets.read(p.id, name: "password") == Array("hunter2".utf8))
        chmod(path, 0o644)
        let e = #expect(throws: VPNError.self) { try store.secrets.read(p.id, name: "password") }
        #expect(e?.code == .permissionDenied)
    }
}
