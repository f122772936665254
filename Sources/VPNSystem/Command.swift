#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// Runs a helper program (nft, resolvconf, resolvectl) to completion and
/// collects what it printed (stdout and stderr together, up to 64 KiB).
public enum Command {
    public struct Result: Sendable {
        public let status: Int32
        public let output: String
        public var succeeded: Bool { status == 0 }
    }

    /// Runs `path` with `argv` (stdin is /dev/null) and waits for it.
    public static func run(_ path: String, _ argv: [String], environment: [String: String] = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"]) throws -> Result {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError("make a pipe for", path: path, errno: .current) }
        // Close-on-exec: the child gets the write end as its stdout only.
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        let pid: pid_t
        do {
            pid = try Processes.spawn(path, argv, environment: environment, outputFD: fds[1])
        } catch {
            close(fds[0]); close(fds[1])
            throw error
        }
        close(fds[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            if output.count < 65536 { output += buffer[0..<n] }
        }
        close(fds[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { throw SystemError("wait for", path: path, errno: .current) }
        }
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: code, output: String(decoding: output, as: UTF8.self))
    }
}

/// Network namespaces, named by the kernel's link text ("net:[4026531840]").
public enum NetworkNamespace {
    /// This process's network namespace.
    public static func current() -> String? { of("self") }

    /// The network namespace of process `pid` ("self" for this one); nil when
    /// it cannot be read (gone, or not ours to look at).
    public static func of(_ pid: String) -> String? {
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/\(pid)/ns/net", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Pids of processes whose command name (/proc/PID/comm) is `name`.
    /// The pids of the processes running the program `name`, with the
    /// executable each runs. The kernel keeps only the first 15 bytes of a
    /// name in /proc/PID/comm (`systemd-resolved` reads `systemd-resolve`),
    /// so comm only preselects; the executable's file name decides (where
    /// it can be read: otherwise the executable is "").
    public static func processes(named name: String) -> [(pid: String, executable: String)] {
        guard let entries = try? FileSystem.list("/proc") else { return [] }
        return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
            guard let bytes = try? FileSystem.readFileIfPresent("/proc/\(pid)/comm", followSymlinks: true, limit: 64) else { return nil }
            let comm = String(decoding: bytes, as: UTF8.self).trimmingSuffix("\n")
            // Another user's /proc/PID/exe needs CAP_SYS_PTRACE, which a
            // sandboxed service lacks (vpnctl-agent.service): then only the
            // comm is known, and the executable reads "".
            guard let exe = readLink("/proc/\(pid)/exe") else {
                return comm == String(decoding: name.utf8.prefix(15), as: UTF8.self) ? (pid, "") : nil
            }
            return isProgram(name, comm: comm, executable: exe) ? (pid, exe) : nil
        }
    }

    /// Pure: whether a process with this comm and executable runs `name`.
    public static func isProgram(_ name: String, comm: String, executable: String) -> Bool {
        guard comm == String(decoding: name.utf8.prefix(15), as: UTF8.self) else { return false }
        // A replaced binary reads "/usr/lib/systemd/systemd-resolved (deleted)".
        let file = executable.hasSuffix(" (deleted)") ? String(executable.dropLast(10)) : executable
        return file.split(separator: "/").last.map(String.init) == name
    }

    /// A symlink's target as written; nil when `path` is not a link.
    public static func readLink(_ path: String) -> String? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buf, buf.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `path` is itself a mount point (a bind-mounted resolv.conf,
    /// as `ip netns exec` makes), from /proc/self/mountinfo.
    public static func isMountPoint(_ path: String) -> Bool {
        guard let bytes = try? FileSystem.readFileIfPresent("/proc/self/mountinfo", followSymlinks: true, limit: 4 << 20) else { return false }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count > 4, fields[4] == path { return true }
        }
        return false
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
