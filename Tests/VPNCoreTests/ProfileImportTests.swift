import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// The import use case without root: a store in a temp dir, plans of each
/// kind, commits, and a failed commit that leaves everything as it was.
@Suite struct ProfileImportTests {
    static let privateKey = Array("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=".utf8)
    static let presharedKey = Array("FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE=".utf8)

    struct Failure: Error {}

    func fixture() -> (TempDir, ProfileImport) {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path + "/etc")
        return (dir, ProfileImport(store: store, runtime: RuntimeStore(directory: dir.path + "/run")))
    }

    /// A wg-quick file; `psk` adds a preshared key (a second secret).
    func wg(_ name: String, endpoint: String = "198.18.0.1:51820", psk: Bool = false) throws -> ImportResult {
        let text = """
        [Interface]
        PrivateKey = \(String(decoding: Self.privateKey, as: UTF8.self))
        Address = 10.0.0.2/32
        [Peer]
        PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
        \(psk ? "PresharedKey = \(String(decoding: Self.presharedKey, as: UTF8.self))" : "")
        AllowedIPs = 0.0.0.0/0
        Endpoint = \(endpoint)

        """
        return try ImportFormat.importChecked(Array(text.utf8), name: name, source: "\(name).conf")
    }

    func desired(_ payload: String, _ result: ImportResult) -> DesiredProfile {
        DesiredProfile(origin: ProfileOrigin(profileIdentifier: "com.example.vpn", payloadIdentifier: payload), result: result, source: "x.mobileconfig")
    }

    func endpoint(_ p: Profile) -> String? {
        guard case .wireguard(let w) = p.protocol else { return nil }
        return w.peers.first?.endpoint
    }

    @Test func importOfANewFilePlansACreateAndCommitsProfileAndSecrets() throws {
        let (_, u) = fixture()
        let plan = try u.planImport(try wg("office", psk: true), name: "office", source: "office.conf", replace: false, keepID: false)
        #expect(plan.changes.map(\.change) == [.created] && plan.changed)
        #expect(try u.store.load().isEmpty)
        let outcome = try u.commit(plan)
        let p = outcome.plan.changes[0].profile
        #expect(p.revision == 1 && outcome.leftovers.isEmpty)
        #expect(try u.store.load().map(\.id) == [p.id])
        #expect(try u.store.secrets.read(p.id, name: "private-key") == Self.privateKey)
        #expect(try u.store.secrets.names(p.id).sorted() == ["peer1-preshared-key", "private-key"])
    }

    @Test func importOfATakenNameNeedsReplaceAndReplaceUpdatesInPlace() throws {
        let (_, u) = fixture()
        let first = try u.commit(try u.planImport(try wg("office", psk: true), name: "office", source: "a", replace: false, keepID: false))
        let old = first.plan.changes[0].profile
        let e = #expect(throws: VPNError.self) {
            try u.planImport(try wg("office"), name: "office", source: "b", replace: false, keepID: false)
        }
        #expect(e?.code == .configurationInvalid && e?.message == "a profile named 'office' already exists")
        let plan = try u.planImport(try wg("office", endpoint: "198.18.0.9:51820"), name: "office", source: "b", replace: true, keepID: false)
        let c = plan.changes[0]
        #expect(c.change == .updated && c.previous?.id == old.id && c.profile.id == old.id)
        #expect(c.secretsToRemove == ["peer1-preshared-key"])
        let done = try u.commit(plan).plan.changes[0].profile
        #expect(done.revision == 2 && endpoint(done) == "198.18.0.9:51820")
        #expect(try u.store.secrets.names(old.id) == ["private-key"])
    }

    @Test func replaceKeepsTheSecretsTheFileLeavesOut() throws {
        let (_, u) = fixture()
        let old = try u.commit(try u.planImport(try wg("office"), name: "office", source: "a", replace: false, keepID: false)).plan.changes[0].profile
        var bare = try wg("office", endpoint: "198.18.0.7:51820")
        bare.secrets = [:]
        let c = try u.planImport(bare, name: "office", source: "b", replace: true, keepID: false).changes[0]
        #expect(c.keptSecrets == ["private-key"] && c.secretsToRemove.isEmpty)
        #expect(c.notes.last == "the secrets the file leaves out keep the values set here: private-key")
        _ = try u.commit(try u.planImport(bare, name: "office", source: "b", replace: true, keepID: false))
        #expect(try u.store.secrets.read(old.id, name: "private-key") == Self.privateKey)
    }

    @Test func createRefusesATakenNameAndAnInvalidProfile() throws {
        let (_, u) = fixture()
        _ = try u.commit(try u.planCreate(try wg("home")))
        let taken = #expect(throws: VPNError.self) { try u.planCreate(try wg("home")) }
        #expect(taken?.hint == "choose another name, or remove the old one first")
        var noPeer = try wg("other")
        if case .wireguard(var w) = noPeer.profile.protocol { w.peers = []; noPeer.profile.protocol = .wireguard(w) }
        let invalid = #expect(throws: VPNError.self) { try u.planCreate(noPeer) }
        #expect(invalid?.code == .configurationInvalid && invalid?.message == "profile 'other' would be invalid (1 problem)")
        #expect(try u.store.load().map(\.name) == ["home"])
    }

    @Test func reconcilePlansCreatedUpdatedUnchangedAndRemoved() throws {
        let (_, u) = fixture()
        let scope = ImportScope.configurationProfile(identifier: "com.example.vpn", source: "x.mobileconfig")
        let first = [desired("a", try wg("a")), desired("b", try wg("b")), desired("c", try wg("c"))]
        let made = try u.commit(try u.planReconcile(first, scope: scope))
        #expect(made.plan.changes.map(\.change) == [.created, .created, .created])
        let ids = made.plan.changes.map(\.profile.id)

        let second = [desired("a", try wg("a")), desired("b", try wg("b", endpoint: "198.18.0.2:51820")), desired("d", try wg("d"))]
        let plan = try u.planReconcile(second, scope: scope)
        #expect(plan.changes.map(\.change) == [.unchanged, .updated, .created, .removed])
        #expect(plan.changes.map(\.profile.name) == ["a", "b", "d", "c"])
        #expect(plan.changes[0].profile.id == ids[0] && plan.changes[1].profile.id == ids[1] && plan.removed.map(\.id) == [ids[2]])
        #expect(try u.store.load().count == 3)  // a plan changes nothing

        let done = try u.commit(plan)
        #expect(done.plan.changes.map(\.profile.revision) == [1, 2, 1, 1])
        #expect(try u.store.load().map(\.name).sorted() == ["a", "b", "d"])
        #expect(try u.store.secrets.names(ids[2]).isEmpty)
        #expect(try !u.planReconcile(second, scope: scope).changed)
    }

    @Test func reconcileNeverTakesTheNameOfAProfileMadeByHand() throws {
        let (_, u) = fixture()
        _ = try u.commit(try u.planCreate(try wg("a")))
        let e = #expect(throws: VPNError.self) {
            try u.planReconcile([desired("a", try wg("a"))], scope: .configurationProfile(identifier: "com.example.vpn", source: "x.mobileconfig"))
        }
        #expect(e?.message == "x.mobileconfig: a profile named 'a' already exists (made by hand); nothing was imported")
        let managed = #expect(throws: VPNError.self) {
            try u.planReconcile([DesiredProfile.file("/fleet/a.conf", try wg("a"))], scope: .managed)
        }
        #expect(managed?.message.hasPrefix("apply changed nothing: /fleet/a.conf makes a profile named 'a'") == true)
    }

    @Test func aFailedCommitOfANewProfileLeavesNothingBehind() throws {
        let (dir, u) = fixture()
        u.store.beforeReplace = { throw Failure() }
        let plan = try u.planImport(try wg("office", psk: true), name: "office", source: "a", replace: false, keepID: false)
        #expect(throws: (any Error).self) { try u.commit(plan) }
        u.store.beforeReplace = nil
        #expect(try u.store.load().isEmpty)
        #expect(try FileSystem.list(dir.path + "/etc/secrets").isEmpty)
    }

    @Test func aFailedReplacePutsTheStoreAndEverySecretBack() throws {
        let (_, u) = fixture()
        let old = try u.commit(try u.planImport(try wg("office", psk: true), name: "office", source: "a", replace: false, keepID: false))
            .plan.changes[0].profile
        try u.store.secrets.set(old.id, name: "private-key", value: Array("old-value".utf8))
        var next = try wg("office", endpoint: "198.18.0.9:51820")
        next.secrets["extra"] = Array("new".utf8)
        let plan = try u.planImport(next, name: "office", source: "b", replace: true, keepID: false)
        u.store.beforeReplace = { throw Failure() }
        #expect(throws: (any Error).self) { try u.commit(plan) }
        u.store.beforeReplace = nil
        #expect(try u.store.load() == [old])
        #expect(try u.store.secrets.names(old.id).sorted() == ["peer1-preshared-key", "private-key"])
        #expect(try u.store.secrets.read(old.id, name: "private-key") == Array("old-value".utf8))
    }

    @Test func aFailedReconcileKeepsTheProfilesItWouldRemove() throws {
        let (_, u) = fixture()
        let scope = ImportScope.configurationProfile(identifier: "com.example.vpn", source: "x.mobileconfig")
        _ = try u.commit(try u.planReconcile([desired("a", try wg("a")), desired("b", try wg("b"))], scope: scope))
        let before = try u.store.load()
        let plan = try u.planReconcile([desired("a", try wg("a", endpoint: "198.18.0.3:51820"))], scope: scope)
        #expect(plan.changes.map(\.change) == [.updated, .removed])
        u.store.beforeReplace = { throw Failure() }
        #expect(throws: (any Error).self) { try u.commit(plan) }
        u.store.beforeReplace = nil
        #expect(try u.store.load() == before)
        #expect(try before.allSatisfy { try u.store.secrets.read($0.id, name: "private-key") == Self.privateKey })
    }
}
