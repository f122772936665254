import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// The store's paths that a second writer, a stale view or a held lock reach.
@Suite struct StoreEdgeTests {
    @Test func saveOfAProfileRemovedMeanwhileIsStale() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        var loaded = try store.save(sampleProfile("office"))
        try PreferencesStore(directory: store.directory).remove(id: loaded.id)  // another process
        loaded.enabled = false
        let e = #expect(throws: VPNError.self) { try store.save(loaded) }
        #expect(e?.code == .configurationStale)
        #expect(e?.message.contains("was removed since it was loaded") == true)
        #expect(try store.load().isEmpty)
    }

    @Test func renamingOntoAnExistingNameIsRefusedAndChangesNothing() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        let a = try store.save(sampleProfile("office"))
        let b = try store.save(sampleProfile("home"))
        let before = try FileSystem.readFileIfPresent(store.path)
        var renamed = b
        renamed.name = "office"
        let e = #expect(throws: VPNError.self) { try store.save(renamed) }
        #expect(e?.code == .configurationInvalid)
        #expect(e?.message == "a profile named 'office' already exists")
        #expect(try FileSystem.readFileIfPresent(store.path) == before)
        #expect(try store.load().map(\.name) == [a.name, b.name])
    }

    @Test func removingFromAStaleViewIsRefused() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        let v1 = try store.save(sampleProfile("office"))
        var v2 = v1
        v2.enabled = false
        v2 = try store.save(v2)
        let e = #expect(throws: VPNError.self) { try store.remove(id: v1.id, revision: v1.revision) }
        #expect(e?.code == .configurationStale)
        #expect(try store.load() == [v2])
        let unknown = #expect(throws: VPNError.self) { try store.remove(id: UUID()) }
        #expect(unknown?.code == .configurationUnknown)
    }

    /// A writer waits for the lock instead of failing, and its save lands after
    /// the holder's: nothing is lost.
    @Test func aWriterWaitsForTheLockAndLosesNothing() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        let first = try store.save(sampleProfile("office"))
        let lock = try FileLock(path: store.lockPath)
        let done = DispatchSemaphore(value: 0)
        let other = PreferencesStore(directory: store.directory)
        nonisolated(unsafe) var result: Result<Profile, Error>? = nil
        Thread.detachNewThread {
            result = Result { try other.save(sampleProfile("home")) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 0.3) == .timedOut, "the save did not wait for the lock")
        var changed = first
        changed.enabled = false
        try withExtendedLifetime(lock) {
            // The holder's own write (as the store does under the lock).
            try AtomicFile.write(try PreferencesCodec.encode(Preferences(profiles: [{ var c = changed; c.revision = 2; return c }()])),
                                 to: store.path)
        }
        _ = consume lock
        #expect(done.wait(timeout: .now() + 10) == .success)
        let saved = try #require(try result?.get())
        #expect(saved.revision == 1)
        let names = try store.load().map { "\($0.name)@\($0.revision)" }
        #expect(names == ["office@2", "home@1"])
    }
}
