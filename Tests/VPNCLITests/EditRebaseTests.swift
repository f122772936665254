import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// Issue 36 item 5: the stale-edit loop ends with `--from FILE --rebase`,
/// and kept edits older than a day are removed.
@Suite struct EditRebaseTests {
    /// A harness whose kept edits go to a directory of its own.
    func importedOffice() throws -> (Harness, String) {
        let h = Harness()
        let tmp = h.root + "/tmp"
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        h.environment["TMPDIR"] = tmp
        h.run("import", h.fixture("wg/office.conf"))
        return (h, tmp)
    }

    func replace(_ a: String, _ b: String, in path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(a), "\(path) has \(a)")
        try text.replacingOccurrences(of: a, with: b).write(toFile: path, atomically: false, encoding: .utf8)
    }

    /// The profile's JSON as `edit` shows it to the editor.
    func currentJSON(_ h: Harness) -> String {
        var text = ""
        h.editor = { path in text = try String(contentsOfFile: path, encoding: .utf8) }
        h.run("edit", "office")
        h.editor = nil
        return text
    }

    /// An edit of the MTU during which someone else saves the profile
    /// (`meanwhile`): the edit fails stale and is kept.
    func staleEdit(_ h: Harness, mtu: Int, meanwhile: @escaping (Harness) throws -> Void) throws -> (Harness.Result, String) {
        h.editor = { path in
            try self.replace("\"mtu\" : 1380", "\"mtu\" : \(mtu)", in: path)
            let mine = h.editor
            try meanwhile(h)
            h.editor = mine
        }
        let r = h.run("edit", "office")
        h.editor = nil
        let kept = try #require(r.stderr.range(of: #"/[^ ;]*/vpnctl-edit-[A-Za-z0-9]+/office\.json"#, options: .regularExpression)
            .map { String(r.stderr[$0]) }, "\(r.stderr)")
        return (r, kept)
    }

    @Test func item5_theStaleEditLoopEndsWithRebase() throws {
        let (h, _) = try importedOffice()
        let (failed, kept) = try staleEdit(h, mtu: 1400) { h in
            let other = h.run("disable", "office")
            #expect(other.code == 0, "\(other.stderr)")
        }
        #expect(failed.code == 7)
        #expect(failed.stderr.contains("hint: your edit is kept in \(kept); apply it on the current revision with: vpnctl edit office --from \(kept) --rebase"))
        #expect(FileManager.default.fileExists(atPath: kept + ".base"), "the revision the edit was made from is kept beside it")

        // The loop: --from alone fails again, and now says how to get out.
        let again = h.run("edit", "office", "--from", kept)
        #expect(again.code == 7)
        #expect(again.stderr.contains("--from \(kept) --rebase"))

        let rebased = h.run("edit", "office", "--from", kept, "--rebase")
        #expect(rebased.code == 0, "\(rebased.stderr)")
        #expect(rebased.stderr.contains("rebased on revision 2 (the edit was made on revision 1): the edit changes protocol.mtu"))
        #expect(rebased.stdout == "saved 'office' (revision 3)\n")
        let shown = h.run("show", "office", "--json").stdout
        #expect(shown.contains("1400"), "the kept change")
        #expect((jsonObject(shown)["profile"] as? [String: Any])?["enabled"] as? Bool == false, "and the one saved meanwhile")
    }

    @Test func item5_rebaseRefusesOnlyAFieldChangedOnBothSides() throws {
        let (h, _) = try importedOffice()
        let (failed, kept) = try staleEdit(h, mtu: 1400) { h in
            // Meanwhile another edit sets the MTU to 1420.
            h.editor = { path in try self.replace("\"mtu\" : 1380", "\"mtu\" : 1420", in: path) }
            let other = h.run("edit", "office")
            #expect(other.code == 0, "\(other.stderr)")
        }
        #expect(failed.code == 7)
        let refused = h.run("edit", "office", "--from", kept, "--rebase")
        #expect(refused.code == 7)
        #expect(refused.stderr.contains("1 field was changed both there and meanwhile"))
        #expect(refused.stderr.contains("protocol.mtu: the edit sets 1400, the stored profile now has 1420 (was 1380)"))
        #expect(refused.stderr.contains("hint: redo the change to protocol.mtu with: vpnctl edit office"))
        #expect(h.run("show", "office", "--json").stdout.contains("1420"), "nothing was saved")
    }

    @Test func item5_rebaseNeedsFromAndTheBase() throws {
        let (h, _) = try importedOffice()
        let usage = h.run("edit", "office", "--rebase")
        #expect(usage.code == 2)
        #expect(usage.stderr.contains("'--rebase' needs '--from <file>'"))

        let file = h.write("mine.json", currentJSON(h))
        let noBase = h.run("edit", "office", "--from", file, "--rebase")
        #expect(noBase.code == 1)
        #expect(noBase.stderr.contains("cannot read \(file).base: no such file"))
        #expect(noBase.stderr.contains("redo the change with: vpnctl edit office"))
    }

    @Test func item5_keptEditsOlderThanADayAreRemovedOnTheNextEdit() throws {
        let (h, tmp) = try importedOffice()
        let fm = FileManager.default
        func keptDirectory(_ name: String, age: TimeInterval, owner: Int? = nil, content: String = "{}") throws -> String {
            let dir = "\(tmp)/vpnctl-edit-\(name)"
            try fm.createDirectory(atPath: dir, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            for file in ["office.json", "office.json.base"] {
                #expect(fm.createFile(atPath: "\(dir)/\(file)", contents: Data(content.utf8), attributes: [.posixPermissions: 0o600]))
                try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: "\(dir)/\(file)")
            }
            try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -age)], ofItemAtPath: dir)
            if let owner { try fm.setAttributes([.ownerAccountID: owner], ofItemAtPath: dir) }
            return dir
        }
        let old = try keptDirectory("Old123", age: 2 * 86400)
        let fresh = try keptDirectory("New123", age: 3600)
        let notOurs = getuid() == 0 ? try keptDirectory("Not123", age: 2 * 86400, owner: 65534) : nil
        let unrelated = "\(tmp)/vpnctl-edit-notes"
        try fm.createDirectory(atPath: unrelated, withIntermediateDirectories: false)
        // A symlink with a kept edit's name, to an old directory elsewhere: neither is touched.
        let elsewhere = h.root + "/elsewhere"
        try fm.createDirectory(atPath: elsewhere, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        #expect(fm.createFile(atPath: elsewhere + "/office.json", contents: Data("{}".utf8)))
        try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3 * 86400)], ofItemAtPath: elsewhere + "/office.json")
        try fm.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3 * 86400)], ofItemAtPath: elsewhere)
        try fm.createSymbolicLink(atPath: "\(tmp)/vpnctl-edit-Sym123", withDestinationPath: elsewhere)

        h.editor = { _ in }
        let r = h.run("edit", "office")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stderr.contains("removed 1 kept edit older than a day (\(old))"))
        #expect(!fm.fileExists(atPath: old))
        #expect(fm.fileExists(atPath: fresh + "/office.json"))
        if let notOurs { #expect(fm.fileExists(atPath: notOurs + "/office.json"), "another user's directory is left alone") }
        #expect(fm.fileExists(atPath: unrelated))
        #expect(fm.fileExists(atPath: elsewhere + "/office.json"), "a symlink is never followed")
        #expect(try fm.contentsOfDirectory(atPath: tmp).filter { $0.hasPrefix("vpnctl-edit-") }.count == (notOurs == nil ? 3 : 4),
                "the unchanged edit left nothing behind")

        // The directory of a file being applied stays, however old.
        let applying = try keptDirectory("Apply1", age: 2 * 86400, content: currentJSON(h))
        let applied = h.run("edit", "office", "--from", applying + "/office.json")
        #expect(applied.code == 0, "\(applied.stderr)")
        #expect(fm.fileExists(atPath: applying + "/office.json"))
        #expect(!applied.stderr.contains("removed"))
    }
}
