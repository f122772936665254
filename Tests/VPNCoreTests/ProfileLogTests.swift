import Foundation
import Testing
@testable import VPNCore

/// Issue 36 item 8: `vpnctl logs --since` and `--follow`.
@Suite struct ProfileLogTests {
    let now = Timestamp.parse("2026-12-02T12:00:00.000Z")!

    @Test func item8_sinceTakesATimeAgo() {
        let cases: [(String, Double)] = [("30s", 30), ("10m", 600), ("10min", 600), ("2h", 7200), ("1d", 86400), ("1h30m", 5400),
                                         ("10m ago", 600), (" 45sec ", 45)]
        for (text, seconds) in cases {
            #expect(ProfileLog.since(text, now: now) == now.addingTimeInterval(-seconds), "\(text)")
        }
        for bad in ["", "10", "m", "10x", "-5m", "1h-30m", "10 m", "yesterday", "99999999999d", "2026-13-01", "2026-12-02T25:00Z",
                    "2026-12-02T03:04:05Q", "2026-12-02T03:04+1"] {
            #expect(ProfileLog.since(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test func item8_sinceTakesAnISOTime() {
        #expect(ProfileLog.since("2026-12-02T03:04:05Z", now: now) == Timestamp.parse("2026-12-02T03:04:05.000Z"))
        #expect(ProfileLog.since("2026-12-02T03:04:05.250Z", now: now) == Timestamp.parse("2026-12-02T03:04:05.250Z"))
        #expect(ProfileLog.since("2026-12-02T04:04:05+01:00", now: now) == Timestamp.parse("2026-12-02T03:04:05.000Z"))
        #expect(ProfileLog.since("2026-12-01T22:04-0500", now: now) == Timestamp.parse("2026-12-02T03:04:00.000Z"))
        // Without a zone: local time, as date(1) reads it.
        func local(_ h: Int32, _ m: Int32) -> Date {
            var t = tm()
            t.tm_year = 126; t.tm_mon = 11; t.tm_mday = 2; t.tm_hour = h; t.tm_min = m; t.tm_isdst = -1
            return Date(timeIntervalSince1970: Double(mktime(&t)))
        }
        #expect(ProfileLog.since("2026-12-02 03:04", now: now) == local(3, 4))
        #expect(ProfileLog.since("2026-12-02T03:04:00", now: now) == local(3, 4))
        #expect(ProfileLog.since("2026-12-02", now: now) == local(0, 0))
    }

    @Test func item8_linesAreFilteredByTheirTimes() {
        let log = """
        2026-12-02T10:00:00.000Z [#] ip link set utun0 up
        a stray line without a time
        2026-12-02T11:30:00.000Z [*] handshake
        a stray line after it
        2026-12-02T11:59:59.999Z [*] last
        """
        let lines = log.split(separator: "\n")
        #expect(ProfileLog.lines(lines, since: nil).count == 5)
        #expect(ProfileLog.lines(lines, since: ProfileLog.since("1h", now: now)) == [lines[2], lines[3], lines[4]])
        #expect(ProfileLog.lines(lines, since: ProfileLog.since("2026-12-02T10:00:00Z", now: now)).count == 5)
        #expect(ProfileLog.lines(lines, since: now).isEmpty)
        #expect(ProfileLog.time(of: lines[1]) == nil)
        #expect(ProfileLog.time(of: lines[0]) == Timestamp.parse("2026-12-02T10:00:00.000Z"))
    }

    @Test func item8_tailFollowsARotationAndATruncation() throws {
        let dir = TempDir()
        let path = dir.path + "/x.log"
        let tail = LogTail(path: path)
        #expect(try tail.read() == [], "no file yet")
        func append(_ text: String, to file: String = path) throws {
            let h = FileHandle(forWritingAtPath: file) ?? {
                FileManager.default.createFile(atPath: file, contents: nil)
                return FileHandle(forWritingAtPath: file)!
            }()
            h.seekToEndOfFile()
            h.write(Data(text.utf8))
            try h.close()
        }
        try append("one\ntw")
        #expect(try tail.read() == ["one"])
        try append("o\n")
        #expect(try tail.read() == ["two"])
        // BoundedLog's rotation: the old file renamed away, a new one at the path.
        try append("three\n")
        #expect(rename(path, path + ".1") == 0)
        try append("four\n", to: path + ".1")
        try append("five\n")
        #expect(try tail.read() == ["three", "four", "five"])
        // Its fallback: truncated in place.
        let h = FileHandle(forWritingAtPath: path)!
        h.truncateFile(atOffset: 0)
        try h.close()
        try append("six\n")
        #expect(try tail.read() == ["six"])
        let late = LogTail(path: path, fromEnd: true)
        try append("seven\n")
        #expect(try late.read() == ["seven"])
    }

    @Test func item8_removeForgetsTheLogAndTheEvents() throws {
        let dir = TempDir()
        let runtime = RuntimeStore(directory: dir.path + "/run")
        try runtime.prepare()
        let id = UUID()
        for p in [runtime.logPath(id), runtime.logPath(id) + ".1", runtime.eventsPath(id), runtime.eventsPath(id) + ".1"] {
            #expect(FileManager.default.createFile(atPath: p, contents: Data("x\n".utf8)))
        }
        try runtime.remove(id)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path + "/run") + FileManager.default.contentsOfDirectory(atPath: runtime.logDirectory)
        #expect(left.filter { $0 != "logs" } == [])
        try runtime.remove(id)  // absent: nothing to say
    }
}
