import Foundation
import Testing
import VPNSystem

@Suite struct ProcessTests {
    func exitStatus(_ pid: pid_t) -> Int32? {
        for _ in 0..<500 {
            if let s = Processes.reap(pid) { return s }
            usleep(10_000)
        }
        return nil
    }

    @Test func tiedSpawnPassesFDsAndOutput() throws {
        var out: [Int32] = [-1, -1], passed: [Int32] = [-1, -1]
        // Close-on-exec: tests run side by side, and a child another test
        // spawns meanwhile must not hold these pipes open (the reads below
        // would wait for it). The spawn passes its fds on by dup2, without the flag.
        #expect(pipe(&out) == 0 && pipe(&passed) == 0)
        for fd in out + passed { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let pid = try Processes.spawnTied("/bin/sh", ["/bin/sh", "-c", "echo three >&3; echo \"out $X\"; read x || echo stdin-empty; exit 7"],
                                          environment: ["X": "y"], passFDs: [passed[1]], outputFD: out[1])
        close(out[1]); close(passed[1])
        #expect(exitStatus(pid) == 7)
        func readAll(_ fd: Int32) -> String {
            var bytes: [UInt8] = [], buf = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                bytes += buf[0..<n]
            }
            close(fd)
            return String(decoding: bytes, as: UTF8.self)
        }
        #expect(readAll(passed[0]) == "three\n")
        #expect(readAll(out[0]) == "out y\nstdin-empty\n")
    }

    @Test func tiedSpawnReportsAProgramThatCannotRun() {
        #expect(throws: Spawn.Failure.self) {
            _ = try Processes.spawnTied("/nonexistent/provider", ["/nonexistent/provider"], environment: [:])
        }
        do {
            _ = try Processes.spawnTied("/nonexistent/provider", ["/nonexistent/provider"], environment: [:])
        } catch {
            #expect("\(error)".contains("/nonexistent/provider"))
        }
    }

    @Test func doorbellRingsAndEnds() throws {
        let bell = try Doorbell.pair()
        defer { close(bell.listener) }
        #expect(pollReadable([bell.listener], timeoutMs: 0).isEmpty)
        Doorbell.ring(bell.ringer)
        Doorbell.ring(bell.ringer)
        #expect(pollReadable([bell.listener], timeoutMs: 1000) == [0])
        #expect(Doorbell.drain(bell.listener))
        #expect(pollReadable([bell.listener], timeoutMs: 0).isEmpty)
        close(bell.ringer)
        #expect(pollReadable([bell.listener], timeoutMs: 1000) == [0])
        #expect(!Doorbell.drain(bell.listener))
    }
}

@Suite struct TextSearchTests {
    @Test(arguments: [("TLS Error: TLS key negotiation failed", "negotiation", true),
                      ("abc", "abcd", false), ("", "a", false), ("a", "", true),
                      ("héllo wörld", "wörld", true), ("VERIFY ERROR: depth=0", "ERROR:", true),
                      ("AUTH_FAILE", "AUTH_FAILED", false), ("xxAUTH_FAILED", "AUTH_FAILED", true)])
    func containsUTF8MatchesByteSearch(haystack: String, needle: String, expected: Bool) {
        #expect(haystack.containsUTF8(needle) == expected)
        // Substring-backed (not contiguous native) strings take the same path.
        #expect(String(haystack[...]).containsUTF8(needle) == expected)
    }
}
