import Foundation
import Glibc
import Testing
@testable import VPNCore

@Suite struct OpenVPNSessionTests {
    typealias A = OpenVPNSession.Action

    static func state(_ name: String) -> ManagementMessage { .state(name: name, detail: "") }

    /// Each row: a message, and the actions it must produce, fed in order to one session.
    @Test func holdsAndStatesOverAReconnect() {
        let rows: [(ManagementMessage, [A])] = [
            (.hold("Waiting for hold release:0"), [.releaseHold(afterSeconds: 0)]),
            (Self.state("WAIT"), []),
            (Self.state("AUTH"), []),
            (Self.state("RECONNECTING"), []),  // before the first connect: still connecting
            (.hold("Waiting for hold release:1"), [.releaseHold(afterSeconds: 1)]),
            (Self.state("CONNECTED"), [.connected(session: 1)]),
            (Self.state("CONNECTED"), []),
            (Self.state("RECONNECTING"), [.reasserting]),
            (Self.state("RECONNECTING"), []),
            (.hold("Waiting for hold release:5"), [.releaseHold(afterSeconds: 5)]),
            (Self.state("WAIT"), []),
            (Self.state("GET_CONFIG"), []),
            (Self.state("CONNECTED"), [.connected(session: 2)]),
            (.hold("Waiting for hold release:garbage"), [.releaseHold(afterSeconds: 0)]),
            (.hold("Waiting for hold release:99999"), [.releaseHold(afterSeconds: 300)]),
            (.log(flags: "I", message: "Initialization Sequence Completed"), []),
        ]
        var s = OpenVPNSession()
        for (i, (m, want)) in rows.enumerated() {
            #expect(s.observe(m) == want, "row \(i): \(m)")
        }
        #expect(s.sessions == 2)
    }

    @Test func nothingIsReleasedWhileStopping() {
        var s = OpenVPNSession()
        _ = s.observe(Self.state("CONNECTED"))
        s.stop()
        #expect(s.observe(.hold("Waiting for hold release:0")) == [])
        #expect(s.observe(Self.state("RECONNECTING")) == [])
        #expect(s.observe(Self.state("CONNECTED")) == [])
    }
}

@Suite struct BoundedLogTests {
    func make(_ dir: TempDir, cap: Int) -> (BoundedLog, String) {
        let path = dir.path + "/x.log"
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        var ms: Int64 = 0
        let log = BoundedLog(path: path, fd: fd, cap: cap, now: { Date(timeIntervalSince1970: 0) },
                             monotonic: { ms += 1; return ms })
        return (log, path)
    }

    func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map {
            String($0.split(separator: " ", maxSplits: 1).last ?? "")
        }
    }

    @Test func repeatsAreCounted() throws {
        let dir = try TempDir()
        let (log, path) = make(dir, cap: 1 << 20)
        for _ in 0..<1000 { log.write("read from TUN/TAP: File descriptor in bad state (fd=-1,code=77)") }
        log.write("something else")
        log.write("once")
        log.write("twice")
        log.write("twice")
        log.flushRepeats()
        #expect(lines(path) == ["read from TUN/TAP: File descriptor in bad state (fd=-1,code=77)",
                                "[*] last line repeated 999 times", "something else", "once", "twice",
                                "[*] last line repeated 1 time"])
        close(log.fd)
    }

    @Test func aLongRunOfRepeatsIsSummarisedAsItGoes() throws {
        let dir = try TempDir()
        let (log, path) = make(dir, cap: 1 << 20)
        for _ in 0..<25_000 { log.write("same") }  // the fake clock moves 1 ms a call
        #expect(lines(path).filter { $0.hasPrefix("[*] last line repeated") }.count >= 2)
        close(log.fd)
    }

    @Test func theCapRotatesOnceAndKeepsTheFd() throws {
        let dir = try TempDir()
        let cap = 16384
        let (log, path) = make(dir, cap: cap)
        for i in 0..<5000 { log.write("line \(i) " + String(repeating: "x", count: 40)) }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let old = try #require(try FileManager.default.attributesOfItem(atPath: path + ".1")[.size] as? Int)
        #expect(size <= cap && old <= cap)
        #expect(log.rotations > 1)
        #expect(!FileManager.default.fileExists(atPath: path + ".2"))
        #expect(lines(path).first?.hasPrefix("[*] log reached \(cap) bytes") == true)
        #expect(lines(path).last?.hasPrefix("line 4999 ") == true)
        close(log.fd)
    }

    @Test func aHugeLineIsCut() throws {
        let dir = try TempDir()
        let (log, path) = make(dir, cap: 1 << 20)
        log.write(String(repeating: "y", count: 100_000))
        let l = lines(path)
        #expect(l.count == 1 && l[0].hasSuffix("(\(100_000 - BoundedLog.maxLine) bytes cut)"))
        close(log.fd)
    }

    @Test func providerOutputIsDrainedLineByLine() throws {
        let dir = try TempDir()
        let (log, path) = make(dir, cap: 1 << 20)
        let out = try ProviderOutput(log: log)
        let text = "a\nb\nb\nb\npartial"
        _ = text.withCString { write(out.writeFD, $0, strlen($0)) }
        out.drain()
        #expect(lines(path) == ["a", "b"])
        out.closeWriteEnd()
        out.drain()
        log.flushRepeats()
        #expect(out.closed)
        #expect(lines(path) == ["a", "b", "[*] last line repeated 2 times", "partial"])
        close(log.fd)
    }
}
