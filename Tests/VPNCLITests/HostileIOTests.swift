import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

/// Issue 10: files, streams and stored values that try to hang, exhaust or
/// crash vpnctl, or to reach the terminal raw.
@Suite struct HostileIOTests {
    func withOffice() -> Harness {
        let h = Harness()
        let r = h.run("import", h.fixture("wg/office.conf"))
        #expect(r.code == 0, "\(r.stderr)")
        return h
    }

    func editPreferences(_ h: Harness, _ change: (String) -> String) throws {
        let path = h.configDir + "/preferences.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try change(text).write(toFile: path, atomically: false, encoding: .utf8)
    }

    // MARK: unbounded reads and special files

    @Test func importOfADeviceIsRefusedByName() {
        let h = Harness()
        let r = h.run("import", "/dev/zero")
        #expect(r.code == 1)
        #expect(r.stderr.contains("/dev/zero is a character device, not a regular file"))
    }

    @Test func importOfAFIFOIsRefusedWithoutBlocking() {
        let h = Harness()
        let fifo = h.root + "/office.conf"
        #expect(mkfifo(fifo, 0o600) == 0)
        let r = h.run("import", fifo)
        #expect(r.code == 1)
        #expect(r.stderr.contains("\(fifo) is a FIFO, not a regular file"))
    }

    @Test func importFromAPipeNamedByDescriptorWorks() throws {
        let h = Harness()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let text = try String(contentsOfFile: h.fixture("wg/office.conf"), encoding: .utf8)
        _ = text.withCString { write(fds[1], $0, strlen($0)) }
        close(fds[1])
        defer { close(fds[0]) }
        let r = h.run("import", "/dev/fd/\(fds[0])", "--name", "piped")
        #expect(r.code == 0, "\(r.stderr)")
    }

    @Test func importFromStdinStopsAtTheLimit() {
        let h = Harness()
        h.stdin = [UInt8](repeating: 0x79, count: ImportFormat.maximumSize + 1)
        let r = h.run("import", "-")
        #expect(r.code == 5)
        #expect(r.stderr.contains("standard input is larger than 1 MiB"))
    }

    @Test func secretFromStdinStopsAtTheLimit() {
        let h = withOffice()
        h.stdin = [UInt8](repeating: 0, count: SecretStore.maximumSize + 1)
        let r = h.run("secret", "set", "office", "password", "--force")
        #expect(r.code == 2)
        #expect(r.stderr.contains("larger than 64 KiB, the limit for a secret"))
    }

    @Test func secretsWithNULOrLineBreaksAreRefused() {
        let h = withOffice()
        for value in ["pass\nword\n", "pass\0word", "a\r\nb"] {
            h.stdin = Array(value.utf8)
            let r = h.run("secret", "set", "office", "password", "--force")
            #expect(r.code == 5, "\(value.debugDescription)")
            #expect(r.stderr.contains("contains a"))
        }
        h.stdin = Array("one line\r\n".utf8)
        #expect(h.run("secret", "set", "office", "password", "--force").code == 0)
    }

    @Test func aFIFOInPlaceOfThePreferencesIsRefused() throws {
        let h = Harness()
        try FileManager.default.createDirectory(atPath: h.configDir, withIntermediateDirectories: true)
        chmod(h.configDir, 0o700)
        #expect(mkfifo(h.configDir + "/preferences.json", 0o600) == 0)
        let r = h.run("list")
        #expect(r.code == 11)
        #expect(r.stderr.contains("preferences.json is not a regular file"))
    }

    @Test func aFIFOAsTheEditorsResultIsRefused() {
        let h = withOffice()
        h.editor = { path in
            unlink(path)
            mkfifo(path, 0o600)
        }
        let r = h.run("edit", "office")
        #expect(r.code == 1)
        #expect(r.stderr.contains("is a FIFO, not a regular file"))
    }

    @Test func aSymlinkedPreferencesFileIsNamedAsSuch() throws {
        let h = withOffice()
        let prefs = h.configDir + "/preferences.json"
        #expect(rename(prefs, h.root + "/elsewhere.json") == 0)
        #expect(symlink(h.root + "/elsewhere.json", prefs) == 0)
        let r = h.run("list")
        #expect(r.code == 11)
        #expect(r.stderr.contains("preferences.json is a symlink (vpnctl refuses symlinks"))
        #expect(!r.stderr.contains("too many levels"))
    }

    @Test func aSymlinkedConfigDirectoryIsRefusedEvenWithATrailingDot() throws {
        let h = withOffice()
        #expect(symlink(h.configDir, h.root + "/cfglink") == 0)
        for dir in ["cfglink/.", "cfglink/./", "cfglink//.", "cfglink"] {
            let r = h.run("disable", "office", "--config-dir", h.root + "/" + dir)
            #expect(r.code == 11, "\(dir): \(r.stderr)")
            #expect(r.stderr.contains("symlink"))
        }
        #expect(GlobalOptions.normalize("/a/./b/.//") == "/a/b")
        #expect(GlobalOptions.normalize("./") == ".")
    }

    // MARK: arithmetic on stored values

    @Test func aHugeRevisionIsRefusedOnLoadNotATrap() throws {
        let h = withOffice()
        try editPreferences(h) { $0.replacingOccurrences(of: "\"revision\" : 1", with: "\"revision\" : 9223372036854775807") }
        let r = h.run("disable", "office")
        #expect(r.code == 8)
        #expect(r.stderr.contains("profile 'office' is at the highest revision (9223372036854775807)"))
        try editPreferences(h) { $0.replacingOccurrences(of: "9223372036854775807", with: "99999999999999999999999") }
        let bigger = h.run("list")
        #expect(bigger.code == 8)
        #expect(bigger.stderr.contains("99999999999999999999999 is out of range"))
    }

    // MARK: write errors

    func run(_ args: [String], _ h: Harness, stdout: TextSink) -> (code: Int32, stderr: String) {
        let err = BufferSink()
        let context = Context(environment: ["VPNCTL_CONFIG_DIR": h.configDir, "VPNCTL_RUN_DIR": h.runDir],
                              stdout: stdout, stderr: err)
        return (VPNCLI.run(["vpnctl"] + args, context: context), err.text)
    }

    @Test func aFullDiskIsAWriteError() {
        let h = withOffice()
        let fd = open("/dev/full", O_WRONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        let r = run(["list"], h, stdout: FileDescriptorSink(fd: fd))
        #expect(r.code == 1)
        #expect(r.stderr == "vpnctl: write error: No space left on device\n")
    }

    @Test func aClosedStdoutIsAWriteError() {
        let h = withOffice()
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let r = run(["show", "office"], h, stdout: FileDescriptorSink(fd: fd))
        #expect(r.code == 1)
        #expect(r.stderr.hasPrefix("vpnctl: write error: Bad file descriptor"))
        let watch = run(["status", "--watch"], h, stdout: FileDescriptorSink(fd: fd))
        #expect(watch.code == 1)
    }

    @Test func aReaderThatWentAwayEndsTheWatchQuietly() {
        let h = withOffice()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        let r = run(["status", "--watch"], h, stdout: FileDescriptorSink(fd: fds[1]))
        #expect(r.code == 1)
        #expect(!r.stderr.contains("write error"))
    }

    // MARK: names and what reaches the terminal

    @Test func bidiAndZeroWidthNamesAreRefused() {
        let h = Harness()
        for name in ["office\u{202E}fdp", "off\u{200B}ice", "a\u{2066}b", "x\u{FEFF}", "a\u{061C}b"] {
            let r = h.run("import", h.fixture("wg/office.conf"), "--name", name)
            #expect(r.code == 2, "\(name.unicodeScalars.map(\.value))")
            #expect(r.stderr.contains("invisible formatting character"))
            #expect(!r.stderr.unicodeScalars.contains { $0.properties.generalCategory == .format })
        }
    }

    @Test func aStoredNameWithAnEscapeIsRefusedOnLoadAndNeverPrintedRaw() throws {
        let h = withOffice()
        try editPreferences(h) { $0.replacingOccurrences(of: "\"name\" : \"office\"", with: "\"name\" : \"off\\u001b[2Jice\"") }
        let r = h.run("list")
        #expect(r.code == 8)
        #expect(r.stderr.contains("invalid name 'off\\u{1B}[2Jice'"))
        #expect(!r.stderr.contains("\u{1B}"))
    }

    @Test func otherStoredStringsAreEscapedOnOutput() throws {
        let h = withOffice()
        try editPreferences(h) { $0.replacingOccurrences(of: "\"198.18.0.1:51820\"", with: "\"198.18.0.1:51820\\u001b]0;owned\\u0007\\u202e\\u009b\"") }
        let show = h.run("show", "office")
        #expect(show.code == 0, "\(show.stderr)")
        #expect(show.stdout.contains("\\u{1B}]0;owned\\u{7}\\u{202E}\\u{9B}"))
        #expect(!show.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E || $0.value == 0x9B })
        let json = h.run("show", "office", "--json")
        #expect(json.stdout.contains("\\u001b]0;owned\\u0007\\u202e\\u009b"))
        #expect(!json.stdout.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E || $0.value == 0x9B })
    }

    @Test func paintedTextKeepsItsColoursButStoredEscapesDoNot() {
        let out = Output(context: Context(environment: [:], stdout: BufferSink(), stderr: BufferSink()), json: false, color: true)
        let forged = "\u{E000}" + "x:31" + "\u{E001}"
        let text = out.terminalText(out.paint("ok", "32") + " name\u{1B}[2J" + forged, color: true)
        #expect(text == "\u{1B}[32mok\u{1B}[0m name\\u{1B}[2J" + forged)
        #expect(out.terminalText(out.paint("ok", "32"), color: false) == "ok")
        #expect(out.terminalText(out.paint("\u{301}x", "1") + "\u{E000}", color: true) == "\u{1B}[1m\u{301}x\u{1B}[0m\u{E000}")
    }

    @Test func prometheusLabelsCarryNoRawControls() {
        #expect(StatsCommand.label("a\u{1B}b\"\n") == #"a\\u{1B}b\"\\u{A}"#)
    }

    @Test func longValuesAreCutInMessages() {
        let h = withOffice()
        let huge = String(repeating: "x", count: 1 << 20)
        for args in [["show", huge], [huge], ["list", "--" + huge], ["list", huge], ["status", "--watch", "--count", huge]] {
            let r = h.run(args)
            #expect(r.code != 0)
            #expect(r.stderr.count < 600, "\(args.map { $0.prefix(10) }): \(r.stderr.count) characters")
            #expect(r.stderr.contains("characters)"))
        }
    }

    @Test func jsonAfterDoubleDashIsAnArgumentNotTheFormat() {
        let h = Harness()
        let r = h.run("list", "--", "--json")
        #expect(r.code == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("vpnctl: Unexpected argument '--json'"))
    }

    @Test func unreadableRuntimeRecordsAreDescribedNotDumped() throws {
        let h = withOffice()
        let id = try #require((jsonObject(h.run("list", "--json").stdout)["profiles"] as? [[String: Any]])?.first?["id"] as? String)
        try FileManager.default.createDirectory(atPath: h.runDir, withIntermediateDirectories: true)
        chmod(h.runDir, 0o700)
        FileManager.default.createFile(atPath: "\(h.runDir)/\(id).json", contents: Data("{\"id\": ".utf8))
        let r = h.run("status", "office")
        #expect(r.code == 8)
        #expect(r.stderr.contains("(line 1, column 8: "))
        #expect(!r.stderr.contains("Problem("))
        let forged = "{\"id\":\"\(id)\",\"status\":\"connected\",\"supervisorPid\":4294967297,\"updatedAt\":\"2026-01-01T00:00:00.000Z\"}"
        FileManager.default.createFile(atPath: "\(h.runDir)/\(id).json", contents: Data(forged.utf8))
        let pid = h.run("status", "office")
        #expect(pid.code == 8)
        #expect(pid.stderr.contains("supervisorPid: 4294967297 is out of range"))
    }
}
