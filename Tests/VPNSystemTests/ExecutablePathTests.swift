import Foundation
import Testing
@testable import VPNSystem

/// Item 9 (issue 29) on the real file system: the walk opens what it
/// checked, and the spawn runs that open file, whatever the path names by
/// then. Needs root (the files must be root's for the walk to accept them).
@Suite(.enabled(if: getuid() == 0, "needs root: the walk accepts only root's files"))
struct ExecutablePathTests {
    let dir: String

    init() throws {
        var template = Array("/tmp/vpnctl-exe-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { throw Errno.current }
        dir = String(cString: template)
        chmod(dir, 0o755)
        for d in ["a", "b"] { mkdir("\(dir)/\(d)", 0o755) }
        symlink("\(dir)/a", "\(dir)/link")
        try write("\(dir)/a/plugin", "#!/bin/sh\necho the-checked-program\n")
        try write("\(dir)/b/plugin", "#!/bin/sh\necho the-swapped-program\n")
        // Hard links where the file system allows (no copy open for writing
        // that a fork in a parallel test could inherit: ETXTBSY at exec).
        for (from, to) in [("/bin/echo", "\(dir)/a/binary"), ("/bin/true", "\(dir)/b/binary")] where link(from, to) != 0 {
            try FileManager.default.copyItem(atPath: from, toPath: to)
        }
    }

    func write(_ path: String, _ text: String) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o755)
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: dir) }

    /// a and b trade places (as renameat2 RENAME_EXCHANGE would).
    func swap() {
        rename("\(dir)/a", "\(dir)/t")
        rename("\(dir)/b", "\(dir)/a")
        rename("\(dir)/t", "\(dir)/b")
    }

    /// Runs `exe` as nobody and returns what it printed. An exec that a
    /// parallel test's fork made fail (ETXTBSY: it inherited a write handle
    /// of the file we wrote) prints nothing, and is tried again.
    func run(_ exe: CheckedExecutable, _ argv: [String]) throws -> String {
        for _ in 0..<4 {
            let out = try runOnce(exe, argv)
            if !out.isEmpty { return out }
            usleep(50_000)
        }
        return ""
    }

    func runOnce(_ exe: CheckedExecutable, _ argv: [String]) throws -> String {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let pid = try Spawn.tied(exe, argv, environment: ["PATH": "/usr/bin:/bin"], passFDs: [], outputFD: fds[1],
                                 as: UserIdentity(name: "nobody", uid: 65534, gid: 65534))
        close(fds[1])
        var out = [UInt8](repeating: 0, count: 4096), text = ""
        while true {
            let n = out.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: out[0..<n], as: UTF8.self)
        }
        close(fds[0])
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return text
    }

    @Test func aSwapAfterTheCheckDoesNotRunTheSwappedProgram() throws {
        defer { cleanUp() }
        let script = try ExecutablePath.open("\(dir)/link/plugin", in: SystemPathWalkFiles())
        defer { close(script.handle) }
        #expect(script.resolved == "\(dir)/a/plugin" && script.isScript && script.interpreter != nil)
        let binary = try ExecutablePath.open("\(dir)/link/binary", in: SystemPathWalkFiles())
        defer { close(binary.handle) }
        #expect(!binary.isScript)
        swap()
        #expect(try run(script, ["plugin"]) == "the-checked-program\n")
        #expect(try run(binary, ["echo", "the-checked-binary"]) == "the-checked-binary\n")
    }

    @Test func aDirectoryAboveTheTargetThatAUserOwnsIsNamed() throws {
        defer { cleanUp() }
        chown("\(dir)/a", 65534, 65534)
        let e = #expect(throws: ExecutablePathProblem.self) { try ExecutablePath.open("\(dir)/link/plugin", in: SystemPathWalkFiles()) }
        #expect(e == ExecutablePathProblem(.directoryOwner(65534), "\(dir)/a", via: "\(dir)/link"))
        chown("\(dir)/a", 0, 0)
        chmod("\(dir)/b", 0o775)
        symlink("\(dir)/b", "\(dir)/link2")
        let w = #expect(throws: ExecutablePathProblem.self) { try ExecutablePath.open("\(dir)/link2/plugin", in: SystemPathWalkFiles()) }
        #expect(w == ExecutablePathProblem(.directoryWritable(0o775), "\(dir)/b", via: "\(dir)/link2"))
    }
}
