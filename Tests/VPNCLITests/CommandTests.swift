import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

@Suite struct CommandTests {
    /// The table a command line is dispatched through names each spec by its
    /// own name, and a command named first parses as it does against all.
    @Test func theCommandTableNamesEachSpecByItsOwnName() throws {
        #expect(VPNCLI.table.map(\.name) == VPNCLI.commands.map(\.name))
        #expect(VPNCLI.root(for: ["status", "--json"]).subcommands.map(\.name) == ["status"])
        #expect(VPNCLI.root(for: ["stauts"]).subcommands.count == VPNCLI.table.count)
        #expect(VPNCLI.root(for: ["--version"]).subcommands.count == VPNCLI.table.count)
        for words in [["status", "--json"], ["stats", "--all", "--json"], ["ondemand", "test", "x"], ["secret", "set", "p", "k"]] {
            let narrow = try ArgumentParser(root: VPNCLI.root(for: words)).parse(words)
            let wide = try ArgumentParser(root: VPNCLI.root).parse(words)
            #expect(summary(narrow) == summary(wide) && summary(narrow).hasPrefix("run"), "\(words)")
        }
    }

    func summary(_ outcome: ParseOutcome) -> String {
        guard case .run(let spec, let a) = outcome else { return "\(outcome)" }
        return "run \(spec.name) \(a.command) \(a.values.sorted { $0.key < $1.key }.map { "\($0)" }) \(a.flags.sorted()) \(a.positionals)"
    }

    let privateKey = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
    let presharedKey = "FpCyhws9cxwWoV4xELtfJvjJN+zQVRPISllRWgeopVE="

    @Test func importListShowRemove() throws {
        let h = Harness()
        let imported = h.run("import", h.fixture("wg/office.conf"))
        #expect(imported.code == 0, "\(imported.stderr)")
        #expect(imported.stdout.hasPrefix("imported 'office' (wireguard, id "))
        #expect(imported.stdout.hasSuffix("""
            public key: HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw= (give this to the server as this peer's key)
            next: vpnctl start office

            """))

        let list = h.run("list", "--json")
        let profiles = jsonObject(list.stdout)["profiles"] as? [[String: Any]] ?? []
        #expect(profiles.count == 1)
        #expect(profiles.first?["name"] as? String == "office")
        #expect(profiles.first?["protocol"] as? String == "wireguard")
        #expect(profiles.first?["enabled"] as? Bool == true)
        let id = try #require(profiles.first?["id"] as? String)
        #expect(id == id.lowercased())

        let show = h.run("show", "office")
        #expect(show.code == 0)
        #expect(show.stdout.contains("private key: secret 'private-key' (set)\npublic key:  HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw= (give this to the server)\n"))
        #expect(jsonObject(h.run("show", "office", "--json").stdout)["publicKey"] as? String == "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=")
        #expect(show.stdout.contains("endpoint:      198.18.0.1:51820"))
        let byID = h.run("show", id.uppercased())
        #expect(byID.stdout == show.stdout)

        let removed = h.run("remove", "office")
        #expect(removed.code == 0)
        #expect(removed.stdout == "removed 'office'\n")
        #expect(h.run("show", "office").code == 9)
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/secrets/" + id))
    }

    @Test func importWithNameAndDuplicateName() {
        let h = Harness()
        #expect(h.run("import", h.fixture("wg/office.conf"), "--name", "work").code == 0)
        let again = h.run("import", h.fixture("wg/office.conf"), "--name", "work")
        #expect(again.code == 5)
        #expect(again.stderr.hasPrefix("vpnctl: a profile named 'work' already exists\nhint: update it in place with --replace, choose another name"))
        #expect(h.run("list", "--json").stdout.components(separatedBy: "\"name\"").count == 2)
    }

    /// Issue 30: re-importing a changed file updates the profile in place
    /// (same id, revision bumped, what was set here kept), and an export
    /// imports with its own id under --keep-id.
    @Test func importReplaceAndKeepID() throws {
        let h = Harness()
        #expect(h.run("import", h.fixture("wg/office.conf"), "--name", "work").code == 0)
        let first = jsonObject(h.run("show", "work", "--json").stdout)["profile"] as? [String: Any] ?? [:]
        let id = try #require(first["id"] as? String)
        #expect(h.run("disable", "work").code == 0)
        let changed = h.write("office2.conf", try String(contentsOfFile: h.fixture("wg/office.conf"), encoding: .utf8)
            .replacingOccurrences(of: "198.18.0.1:51820", with: "198.18.0.9:51820"))
        let r = h.run("import", changed, "--name", "work", "--replace", "--json")
        #expect(r.code == 0, "\(r.stderr)")
        let out = jsonObject(r.stdout)
        #expect(out["id"] as? String == id)
        #expect((out["revision"] as? Int ?? 0) > (first["revision"] as? Int ?? 0))
        #expect((out["summary"] as? [String: Any])?["tunnel"] as? String != nil)
        #expect(h.run("show", "work").stdout.contains("198.18.0.9:51820"))
        #expect(h.run("list", "--json").stdout.components(separatedBy: "\"name\"").count == 2, "updated, not added")
        #expect((jsonObject(h.run("show", "work", "--json").stdout)["profile"] as? [String: Any])?["enabled"] as? Bool == false,
                "what was set here stays")

        // An export without secrets, imported again over it: the secrets set here stay.
        let export = h.run("export", "work")
        #expect(export.stdout.contains("# vpnctl profile id: \(id)\n"))
        let file = h.write("export.conf", export.stdout)
        let again = h.run("import", file, "--name", "work", "--replace")
        #expect(again.code == 0, "\(again.stderr)")
        #expect(again.stderr.contains("the secrets the file leaves out keep the values set here: private-key"))
        #expect(!again.stderr.contains("unset until"), "no contradicting note: \(again.stderr)")
        #expect(again.stdout.contains("next: vpnctl start work\n"))
        #expect(h.run("secret", "list", "work").stdout.contains("private-key          yes"))

        // --keep-id: the export's id, refused where it would clash.
        #expect(h.run("remove", "work").code == 0)
        let kept = h.run("import", file, "--name", "work", "--keep-id", "--json")
        #expect(kept.code == 0, "\(kept.stderr)")
        #expect(jsonObject(kept.stdout)["id"] as? String == id)
        let clash = h.run("import", file, "--name", "other", "--keep-id")
        #expect(clash.code == 5 && clash.stderr.contains("is the profile 'work''s"))
        let noID = h.run("import", h.fixture("wg/office.conf"), "--name", "third", "--keep-id")
        #expect(noID.code == 2 && noID.stderr.contains("names no profile id"))
    }

    @Test func failedImportLeavesNothingBehind() throws {
        let h = Harness()
        let r = h.run("import", h.fixture("wg/postup.conf"))
        #expect(r.code == 5)
        #expect(r.stderr.contains("  - line 4: PostUp runs a shell command"))
        #expect(r.stderr.contains("hint: fix the file and import it again"))
        #expect(!FileManager.default.fileExists(atPath: h.configDir + "/preferences.json"))
        let secrets = (try? FileManager.default.contentsOfDirectory(atPath: h.configDir + "/secrets")) ?? []
        #expect(secrets.isEmpty)
    }

    @Test func importOfMissingFileAndUnknownFormat() {
        let h = Harness()
        let missing = h.run("import", h.root + "/nope.conf")
        #expect(missing.code == 1)
        #expect(missing.stderr.hasPrefix("vpnctl: cannot read \(h.root)/nope.conf: no such file"))
        let txt = h.run("import", h.write("notes.txt", "just text\n"))
        #expect(txt.code == 5)
        #expect(txt.stderr.contains("hint: vpnctl imports wg-quick .conf files"))
    }

    @Test func enableDisableBumpRevision() {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        #expect(h.run("disable", "office").stdout == "disabled 'office'\n")
        #expect(h.run("disable", "office").stdout == "'office' is already disabled\n")
        let r = jsonObject(h.run("enable", "office", "--json").stdout)
        #expect(r["enabled"] as? Bool == true)
        #expect(r["revision"] as? Int == 3)
    }

    @Test func secretSetReadsStdinAndListShowsNamesOnly() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.stdin = Array("hunter2-very-secret\n".utf8)
        let refused = h.run("secret", "set", "office", "privat-key")
        #expect(refused.code == 2)
        #expect(refused.stderr == "vpnctl: 'office' does not refer to a secret named 'privat-key' (did you mean 'private-key'?)\n"
                + "hint: it refers to: private-key, peer1-preshared-key; --force stores another name anyway\n")
        let set = h.run("secret", "set", "office", "extra", "--force")
        #expect(set.code == 0)
        #expect(set.stderr.contains("does not refer to a secret named 'extra'"))
        let list = h.run("secret", "list", "office")
        #expect(list.stdout == """
            NAME                 SET  USED BY
            private-key          yes  privateKeySecret
            peer1-preshared-key  yes  peers[0].presharedKeySecret
            extra                yes  -

            """)
        let id = try #require((jsonObject(h.run("list", "--json").stdout)["profiles"] as? [[String: Any]])?.first?["id"] as? String)
        let stored = try String(contentsOfFile: "\(h.configDir)/secrets/\(id)/extra", encoding: .utf8)
        #expect(stored == "hunter2-very-secret")
        h.stdin = Array("not a key".utf8)
        let bad = h.run("secret", "set", "office", "private-key")
        #expect(bad.code == 5)
        #expect(!bad.stderr.contains("not a key"))
        h.stdin = []
        #expect(h.run("secret", "set", "office", "x", "--force").code == 2)
        h.stdin = Array("v".utf8)
        #expect(h.run("secret", "set", "office", "../escape").code == 2)

        let removed = h.run("secret", "remove", "office", "extra")
        #expect(removed.code == 0)
        #expect(removed.stdout == "removed secret 'extra' of 'office'\n")
        #expect(!FileManager.default.fileExists(atPath: "\(h.configDir)/secrets/\(id)/extra"))
        let again = h.run("secret", "rm", "office", "extra")
        #expect(again.code == 2)
        #expect(again.stderr.hasPrefix("vpnctl: 'office' has no secret named 'extra'\nhint: its secrets: peer1-preshared-key, private-key\n"))
        let used = h.run("secret", "remove", "office", "peer1-preshared-key", "--json")
        #expect(jsonObject(used.stdout)["referenced"] as? Bool == true)
        #expect(used.stderr.isEmpty)
    }

    @Test func secretsNeverLeakIntoOutputOrFiles() {
        let h = Harness()
        var outputs: [String] = []
        func run(_ args: String...) { runArray(args) }
        // A leak test over commands that failed would prove nothing: each must succeed.
        func runArray(_ args: [String]) {
            let r = h.run(args)
            #expect(r.code == 0, "vpnctl \(args.joined(separator: " ")): exit \(r.code): \(r.stderr)")
            outputs += [r.stdout, r.stderr]
        }
        run("import", h.fixture("wg/office.conf"))
        h.stdin = Array("hunter2-very-secret".utf8)
        run("secret", "set", "office", "password", "--force")
        for json in [[], ["--json"]] {
            runArray(["list"] + json)
            runArray(["show", "office"] + json)
            runArray(["secret", "list", "office"] + json)
            runArray(["show", "office", "--verbose"] + json)
        }
        h.editor = { _ in }
        run("edit", "office")
        for secret in [privateKey, presharedKey, "hunter2-very-secret"] {
            for o in outputs { #expect(!o.contains(secret)) }
            for (path, text) in h.allFilesExceptSecrets() { #expect(!text.contains(secret), "secret in \(path)") }
        }
    }

    @Test func editSavesValidChange() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.editor = { path in
            var text = try String(contentsOfFile: path, encoding: .utf8)
            text = text.replacingOccurrences(of: "\"mtu\" : 1380", with: "\"mtu\" : 1400")
            text = text.replacingOccurrences(of: "\"revision\" : 1", with: "\"revision\" : 99")
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout == "saved 'office' (revision 2)\n")
        #expect(h.run("show", "office").stdout.contains("mtu:         1400"))
    }

    @Test func editWithoutChangesSavesNothing() {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.editor = { _ in }
        #expect(h.run("edit", "office").stdout == "no changes to 'office'\n")
        #expect((jsonObject(h.run("show", "office", "--json").stdout)["profile"] as? [String: Any])?["revision"] as? Int == 1)
    }

    @Test func editIsStaleWhenSomeoneSavedMeanwhile() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        var kept = ""
        h.editor = { path in
            kept = path
            // Another shell changes the profile while the editor is open.
            let other = Harness.runOther(configDir: h.configDir, "disable", "office")
            #expect(other == 0)
            let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "1380", with: "1400")
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 7)
        #expect(r.stderr.contains("changed since it was loaded"))
        #expect(r.stderr.contains("your edit is kept in \(kept)"))
        #expect(FileManager.default.fileExists(atPath: kept))
        try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent)
        #expect(!h.run("show", "office").stdout.contains("1400"))
    }

    @Test func invalidEditListsProblemsAndKeepsTheFile() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        var kept = ""
        h.editor = { path in
            kept = path
            let text = try String(contentsOfFile: path, encoding: .utf8)
                .replacingOccurrences(of: "198.18.0.1:51820", with: "198.18.0.1")
                .replacingOccurrences(of: "\"mtu\" : 1380", with: "\"mtu\" : 5")
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 5)
        #expect(r.stderr.contains("  - protocol.mtu: 5 is out of range (576–65535)"))
        #expect(r.stderr.contains("  - protocol.peers[0].endpoint: '198.18.0.1' has no port (host:port)"))
        #expect(FileManager.default.fileExists(atPath: kept))
        try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent)

        h.editor = { path in try "{ \"id\": ".write(toFile: path, atomically: false, encoding: .utf8) }
        let syntax = h.run("edit", "office")
        #expect(syntax.code == 5)
        #expect(syntax.stderr.contains(":1:9: malformed JSON"))
    }

    @Test func editEmptiedOrFailedSavesNothing() {
        struct EditorCrashed: Error, CustomStringConvertible { var description: String { "editor crashed" } }
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.editor = { path in try "".write(toFile: path, atomically: false, encoding: .utf8) }
        let emptied = h.run("edit", "office")
        #expect(emptied.code == 0)
        #expect(emptied.stdout == "empty file; nothing saved\n")
        h.editor = { _ in throw EditorCrashed() }
        let failed = h.run("edit", "office")
        #expect(failed.code == 1)
        #expect(failed.stderr.contains("editor crashed"))
        #expect(failed.stderr.contains("check VISUAL / EDITOR"))
        #expect((jsonObject(h.run("show", "office", "--json").stdout)["profile"] as? [String: Any])?["revision"] as? Int == 1)
    }

    @Test func editCannotChangeTheId() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        var kept = ""
        h.editor = { path in
            kept = path
            let text = try String(contentsOfFile: path, encoding: .utf8)
            guard let id = text.range(of: #""id" : "[0-9a-fA-F-]{36}""#, options: .regularExpression) else { return }
            try text.replacingCharacters(in: id, with: #""id" : "00000000-0000-4000-8000-000000000000""#)
                .write(toFile: path, atomically: false, encoding: .utf8)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 5)
        #expect(r.stderr.contains("the profile's id cannot change (it was "))
        #expect(r.stderr.contains("your edit is kept in \(kept)"))
        try? FileManager.default.removeItem(atPath: (kept as NSString).deletingLastPathComponent)
    }

    @Test func editJSONReportsWhetherItChanged() {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.editor = { _ in }
        let same = jsonObject(h.run("edit", "office", "--json").stdout)
        #expect(same["changed"] as? Bool == false)
        #expect(same["revision"] as? Int == 1)
        h.editor = { path in
            let text = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(of: "\"mtu\" : 1380", with: "\"mtu\" : 1400")
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
        let saved = jsonObject(h.run("edit", "office", "--json").stdout)
        #expect(saved["changed"] as? Bool == true)
        #expect(saved["revision"] as? Int == 2)
        #expect(saved["name"] as? String == "office")
    }

    @Test func malformedPreferencesGiveExit8AndStayUnchanged() throws {
        let h = Harness()
        try FileManager.default.createDirectory(atPath: h.configDir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let text = "{\n  \"schemaVersion\": 1,\n  \"profiles\": [\n    }\n"
        try text.write(toFile: h.configDir + "/preferences.json", atomically: false, encoding: .utf8)
        for args in [["list"], ["import", h.fixture("wg/office.conf")], ["show", "x"]] {
            let r = h.run(args)
            #expect(r.code == 8)
            #expect(r.stderr.hasPrefix("vpnctl: \(h.configDir)/preferences.json:4:5: malformed JSON"))
        }
        #expect(try String(contentsOfFile: h.configDir + "/preferences.json", encoding: .utf8) == text)
    }
}

extension Harness {
    /// Runs a second, independent vpnctl on the same config dir.
    static func runOther(configDir: String, _ args: String...) -> Int32 {
        let context = Context(environment: ["VPNCTL_CONFIG_DIR": configDir], stdout: BufferSink(), stderr: BufferSink())
        return VPNCLI.run(["vpnctl"] + args, context: context)
    }
}

/// The OpenVPN trust rules through the command line.
@Suite struct OpenVPNTrustCommandTests {
    let ca1 = "63bd5318ac8671a64551617edcfaba65fcd4304490402302b41e812786764b48"

    @Test func startRefusesAnAnchorThatIsNotItsName() throws {
        let h = Harness()
        #expect(h.run("import", h.fixture("ovpn/one-ca.ovpn"), "--name", "office").code == 0)
        let two = try String(contentsOfFile: h.fixture("ovpn/two-ca.ovpn"), encoding: .utf8)
        let block = two.components(separatedBy: "<ca>\n")[1].components(separatedBy: "</ca>")[0]
        let anchor = h.configDir + "/trust/\(ca1).pem"
        try Data(block.utf8).write(to: URL(fileURLWithPath: anchor))
        // No PATH: had the check been missing, no openvpn could start.
        let r = h.run("start", "office", "--no-wait")
        #expect(r.code == 5, "\(r.stderr)")
        #expect(r.stderr.contains("trust anchor \(anchor) holds 2 certificates"))
        #expect(r.stderr.contains("hint: import the profile again"))
    }

    @Test func usernameForAProfileWithoutAuthUserPassIsAUsageError() {
        let h = Harness()
        let r = h.run("import", h.fixture("ovpn/one-ca.ovpn"), "--username", "alice")
        #expect(r.code == 2, "\(r.stderr)")
        #expect(r.stderr.contains("--username is for a profile with auth-user-pass"))
        #expect(h.run("show", "one-ca").code == 9)
    }
}

@Suite struct HintTests {
    @Test func remediesAreWordedAsCommandsByTheCommandLine() {
        #expect(Hints.text(for: VPNError(.configurationDisabled, "x", remedy: .enable(profile: "office"))) == "enable it with: vpnctl enable office")
        #expect(Hints.text(for: VPNError(.configurationInvalid, "x", remedy: .edit(profile: "office", secrets: true)))
                == "fix it with: vpnctl edit office (secrets: vpnctl secret set)")
        #expect(Hints.text(for: VPNError(.configurationInvalid, "x", hint: "or leave one certificate", remedy: .reimport))
                == "import the profile again (vpnctl remove, then vpnctl import: each CA certificate is stored on its own), or leave one certificate")
        #expect(Hints.text(for: VPNError(.failure, "x")) == nil)
    }

    @Test func permissionFromAnyLayerIsExit11() {
        let sys = VPNError.from(SystemError("open", path: "/x", errno: Errno(EACCES)))
        #expect(sys.code == ExitCode.permissionDenied)
        #expect(sys.cause == VPNError.Cause.system(EACCES))
        let nl = VPNError.from(NetlinkError("add route", code: -28))  // NLE_PERM
        #expect(nl.code == ExitCode.permissionDenied)
        #expect(Hints.text(for: nl) == "run as root (changing interfaces and routes needs CAP_NET_ADMIN)")
        let other = VPNError.from(SystemError("open", path: "/x", errno: Errno(ENOENT)))
        #expect(other.code == ExitCode.failure)
        #expect(other.cause == VPNError.Cause.system(ENOENT))
    }
}

@Suite struct SpinnerTests {
    @Test func showsOnlyAfter300msAndClearsItsLine() {
        let sink = BufferSink()
        let spinner = Spinner(enabled: true, sink: sink, now: 1_000)
        spinner.tick("connecting office", now: 1_100)
        #expect(sink.text.isEmpty, "a quick wait shows nothing")
        spinner.clear()
        #expect(sink.text.isEmpty)
        spinner.tick("connecting office", now: 1_300)
        #expect(sink.text == "\r\u{1B}[K⠋ connecting office…")
        spinner.clear()
        #expect(sink.text.hasSuffix("…\r\u{1B}[K"))
    }

    /// verify's probe blocks: the spinner turns on its own timer meanwhile,
    /// and its line is cleared before the result is printed.
    @Test func turnsDuringABlockingWaitAndClears() {
        let sink = BufferSink()
        let spinner = Spinner(enabled: true, sink: sink)
        let result = spinner.during("verifying office") { () -> Int in
            usleep(600_000)
            return 7
        }
        #expect(result == 7)
        #expect(sink.text.contains("verifying office…"))
        #expect(sink.text.hasSuffix("\r\u{1B}[K"))
        let quick = BufferSink()
        _ = Spinner(enabled: true, sink: quick).during("verifying office") { 1 }
        #expect(quick.text.isEmpty, "a quick wait shows nothing")
    }

    @Test func neverWhenDisabled() {
        let sink = BufferSink()
        let spinner = Spinner(enabled: false, sink: sink, now: 0)
        spinner.tick("x", now: 10_000)
        spinner.clear()
        #expect(sink.text.isEmpty)
    }
}
