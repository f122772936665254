import Foundation
import Testing
@testable import VPNSystem

@Suite struct BoundedReadTests {
    func tempFile(_ bytes: [UInt8]) -> String {
        var template = Array("/tmp/vpnctl-fs-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return String(cString: template)
    }

    @Test func aFileAtTheLimitIsReadAndOneByteMoreIsRefused() throws {
        let exact = tempFile([UInt8](repeating: 0x61, count: 10))
        let over = tempFile([UInt8](repeating: 0x61, count: 11))
        defer { unlink(exact); unlink(over) }
        #expect(try FileSystem.readFileIfPresent(exact, limit: 10)?.count == 10)
        let e = #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readFileIfPresent(over, limit: 10) }
        #expect(e?.kind == .tooLarge(limit: 10))
        #expect(e?.description == "\(over) is larger than 10 bytes, the most vpnctl reads from it")
    }

    @Test func devicesAreRefusedWithoutReading() {
        let e = #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readFileIfPresent("/dev/zero", followSymlinks: true) }
        #expect(e?.description == "/dev/zero is a character device, not a regular file")
    }

    @Test func anEndlessStreamStopsAtTheLimit() throws {
        let fd = open("/dev/zero", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let e = #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readAll(fd: fd, path: "standard input", limit: 1 << 20) }
        #expect(e?.kind == .tooLarge(limit: 1 << 20))
        #expect(e?.description.contains("larger than 1 MiB") == true)
    }

    @Test func aFIFOIsRefusedAndAPipeOnlyWhenAsked() throws {
        let dir = tempFile([])
        unlink(dir)
        #expect(mkfifo(dir, 0o600) == 0)
        defer { unlink(dir) }
        let e = #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readFileIfPresent(dir) }
        #expect(e?.description == "\(dir) is a FIFO, not a regular file")
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = write(fds[1], "hi", 2)
        close(fds[1])
        defer { close(fds[0]) }
        #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readFileIfPresent("/dev/fd/\(fds[0])", followSymlinks: true) }
        #expect(try FileSystem.readFileIfPresent("/dev/fd/\(fds[0])", followSymlinks: true, acceptPipe: true) == Array("hi".utf8))
    }

    @Test func aSymlinkIsNamedNotELOOP() throws {
        let target = tempFile([0x61])
        let link = target + ".link"
        symlink(target, link)
        defer { unlink(target); unlink(link) }
        let e = #expect(throws: FileSystem.FileProblem.self) { try FileSystem.readFileIfPresent(link) }
        #expect(e?.description.hasPrefix("\(link) is a symlink (vpnctl refuses symlinks") == true)
    }

    @Test func sizesAreNamedInUnits() {
        #expect(FileSystem.sizeText(1 << 20) == "1 MiB")
        #expect(FileSystem.sizeText(64 << 10) == "64 KiB")
        #expect(FileSystem.sizeText(1000) == "1000 bytes")
    }
}

@Suite struct NormalizedPathTests {
    @Test(arguments: [("/etc/vpnctl", "/etc/vpnctl"), ("/etc//vpnctl/", "/etc/vpnctl"), ("/./etc/./vpnctl/.", "/etc/vpnctl"),
                      ("/", "/"), ("//", "/"), ("", "."), ("./", "."), ("a/./b//c", "a/b/c"), ("../x", "../x"),
                      ("/tmp/ünï/.x", "/tmp/ünï/.x"), ("/a/\u{301}b", "/a/\u{301}b"), (".", "."), ("/.", "/"), ("a/.", "a"),
                      ("./a", "a"), ("a/", "a"), ("..", ".."), ("/a/..", "/a/.."), ("/.a/b.", "/.a/b."), ("a/.b/", "a/.b")])
    func normalizes(path: String, expected: String) {
        #expect(FileSystem.normalized(path) == expected)
        // The fast path agrees with the slow one.
        #expect(FileSystem.isNormal(path) == (path == expected), "\(path)")
    }
}
