import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// `edit`: unknown keys, `--from`, the editor fallback and a second try.
@Suite struct EditTests {
    func importedOffice() -> Harness {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        return h
    }

    /// An editor that replaces text in the file.
    func replacing(_ pairs: [(String, String)]) -> (String) throws -> Void {
        { path in
            var text = try String(contentsOfFile: path, encoding: .utf8)
            for (a, b) in pairs { text = text.replacingOccurrences(of: a, with: b) }
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    func removeKept(_ r: Harness.Result) {
        guard let range = r.stderr.range(of: #"/tmp/vpnctl-edit-[A-Za-z0-9]+"#, options: .regularExpression) else { return }
        try? FileManager.default.removeItem(atPath: String(r.stderr[range]))
    }

    @Test func misspeltKeysAreProblemsWithSuggestions() {
        let h = importedOffice()
        h.editor = replacing([("\"persistentKeepalive\"", "\"persistentKeepAlive\""), ("\"mtu\"", "\"MTU\"")])
        let r = h.run("edit", "office")
        defer { removeKept(r) }
        #expect(r.code == 5)
        #expect(r.stderr.contains("the edited profile is not valid (2 problems)"))
        #expect(r.stderr.contains("unknown key 'MTU' in protocol (did you mean 'mtu'?)"))
        #expect(r.stderr.contains("unknown key 'persistentKeepAlive' in protocol.peers[0] (did you mean 'persistentKeepalive'?)"))
        #expect(r.stderr.range(of: #"  - line \d+: unknown key 'MTU'"#, options: .regularExpression) != nil)
        #expect(r.stderr.contains("--from /tmp/vpnctl-edit-"))
        #expect(h.run("show", "office").stdout.contains("1380"))
    }

    @Test func anUnknownKeyInThePreferencesFileIsRefusedOnLoad() throws {
        let h = importedOffice()
        let path = h.configDir + "/preferences.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "\"dns\"", with: "\"DNS\"").write(toFile: path, atomically: false, encoding: .utf8)
        let line = text.components(separatedBy: "\n").firstIndex { $0.contains("\"dns\"") }.map { $0 + 1 } ?? 0
        let r = h.run("list")
        #expect(r.code == 8)
        #expect(r.stderr.contains("\(path):\(line): unknown key 'DNS' in profiles[0].protocol (did you mean 'dns'?)"))
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("\"DNS\""), "the file is never rewritten")
    }

    @Test func fromAppliesAKeptEditAndChecksItsRevision() throws {
        let h = importedOffice()
        h.editor = replacing([("\"mtu\" : 1380", "\"mtu\" : 5")])
        let failed = h.run("edit", "office")
        defer { removeKept(failed) }
        #expect(failed.code == 5)
        let kept = try #require(failed.stderr.range(of: #"/tmp/vpnctl-edit-[A-Za-z0-9]+/office\.json"#, options: .regularExpression)
            .map { String(failed.stderr[$0]) })
        try replacing([("\"mtu\" : 5", "\"mtu\" : 1400")])(kept)
        let applied = h.run("edit", "office", "--from", kept)
        #expect(applied.code == 0, "\(applied.stderr)")
        #expect(applied.stdout == "saved 'office' (revision 2)\n")
        #expect(h.run("show", "office").stdout.contains("1400"))
        // The same file again: its revision (1) is no longer the stored one.
        try replacing([("\"mtu\" : 1400", "\"mtu\" : 1420")])(kept)
        let stale = h.run("edit", "office", "--from", kept)
        #expect(stale.code == 7)
        #expect(!h.run("show", "office").stdout.contains("1420"))
        let missing = h.run("edit", "office", "--from", h.root + "/nope.json")
        #expect(missing.code == 1)
        #expect(missing.stderr.contains("cannot read \(h.root)/nope.json: no such file"))
    }

    @Test func onATerminalAFailedEditCanBeReopened() {
        let h = importedOffice()
        h.terminal = true
        h.answers = ["", "y"]
        var round = 0
        h.editor = { path in
            round += 1
            let mtu = round < 3 ? "5" : "1400"
            var text = try String(contentsOfFile: path, encoding: .utf8)
            text = text.replacingOccurrences(of: #""mtu" : \d+"#, with: "\"mtu\" : \(mtu)", options: .regularExpression)
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(round == 3)
        #expect(h.prompts == ["Edit again? [Y/n] ", "Edit again? [Y/n] "])
        #expect(r.stderr.contains("protocol.mtu: 5 is out of range"))
        #expect(h.run("show", "office").stdout.contains("1400"))

        h.answers = ["n"]
        round = 0
        let declined = h.run("edit", "office")
        defer { removeKept(declined) }
        #expect(declined.code == 5)
        #expect(declined.stderr.contains("your edit is kept in"))
    }

    @Test func withoutVisualOrEditorAFallbackIsNamed() throws {
        let h = importedOffice()
        let bin = h.root + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: bin + "/vi", contents: Data("#!/bin/sh\n".utf8), attributes: [.posixPermissions: 0o755])
        h.environment = ["EDITOR": "", "VISUAL": "", "PATH": bin]
        h.editor = { _ in }
        let r = h.run("edit", "office")
        #expect(r.code == 0)
        #expect(r.stderr.contains("VISUAL and EDITOR are not set; using \(bin)/vi"))

        h.environment["PATH"] = h.root + "/empty"
        let none = h.run("edit", "office")
        #expect(none.code == 2)
        #expect(none.stderr.contains("neither 'editor' nor 'vi' is on PATH"))
    }

    @Test func helpHelpAndExamples() {
        let h = Harness()
        let help = h.run("help", "help")
        #expect(help.code == 0)
        #expect(help.stdout.contains("USAGE: vpnctl help [<command> ...]"))
        let start = h.run("help", "start")
        #expect(start.stdout.contains("EXAMPLES:\n  vpnctl start office --wait"))
        #expect(!start.stdout.contains("GLOBAL OPTIONS"))
        #expect(start.stdout.contains("Global options (--json, "))
    }
}

/// One name per concept, and --json everywhere.
@Suite struct JSONNamingTests {
    @Test func helpJSON() throws {
        let h = Harness()
        let d = jsonObject(h.run("help", "up", "--json").stdout)
        #expect(d["command"] as? String == "vpnctl start")
        #expect(d["aliases"] as? [String] == ["up", "connect"])
        #expect((d["examples"] as? [String])?.first == "vpnctl start office --wait")
        #expect(jsonObject(h.run("help", "--json").stdout)["subcommands"] as? [String] == VPNCLI.commands.map(\.name))
    }

    @Test func isConnectedJSON() {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        let r = h.run("is-connected", "office", "--json")
        #expect(r.code == 12)
        let d = jsonObject(r.stdout)
        #expect(d["connected"] as? Bool == false)
        #expect(d["status"] as? String == "disconnected")
        #expect(h.run("is-connected", "office").stdout.isEmpty)
    }

    /// `show --json` and `secret list --json` name the referring field the same way.
    @Test func secretRowsShareTheirKeys() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        let shown = try #require((jsonObject(h.run("show", "office", "--json").stdout)["secrets"] as? [[String: Any]])?.first)
        let listed = try #require((jsonObject(h.run("secret", "list", "office", "--json").stdout)["secrets"] as? [[String: Any]])?.first)
        #expect(Set(listed.keys) == Set(shown.keys))
        #expect(listed["field"] as? String == "privateKeySecret")
    }
}
