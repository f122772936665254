#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// Process facts from /proc, and spawning with passed fds.
public enum Processes {
    /// The start time of a process in clock ticks since boot (/proc/PID/stat
    /// field 22). With the pid it identifies a process even after pid reuse.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard pid > 0, let bytes = try? FileSystem.readFileIfPresent("/proc/\(pid)/stat"),
              let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // Fields after the command name, which may itself contain spaces and ')'.
        let rest = bytes[(close + 2)...].split(separator: UInt8(ascii: " "))
        // rest[0] is field 3 (state); field 22 is rest[19].
        guard rest.count > 19 else { return nil }
        if rest[0].first == UInt8(ascii: "Z") { return nil }
        return UInt64(String(decoding: rest[19], as: UTF8.self))
    }

    /// True when `pid` is alive and is the same process that had `startTime`.
    /// Without a recorded start time nothing is proven: false.
    public static func isAlive(_ pid: Int32, startTime: UInt64?) -> Bool {
        guard let startTime, let now = self.startTime(of: pid) else { return false }
        return now == startTime
    }

    /// The argv of a live process (/proc/PID/cmdline), or nil.
    public static func commandLine(of pid: Int32) -> [String]? {
        guard pid > 0, let bytes = try? FileSystem.readFileIfPresent("/proc/\(pid)/cmdline"), !bytes.isEmpty else { return nil }
        return bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
    }

    /// The path of the running executable, for re-executing ourselves.
    public static func currentExecutable() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        return n > 0 ? String(cString: buf) : CommandLine.arguments[0]
    }

    /// The executable named `name` in this executable's directory (vpnctl
    /// and vpnctl-dbus, installed together, find each other so).
    public static func besideSelf(_ name: String) -> String {
        let me = currentExecutable()
        return String(me[..<(me.lastIndex(of: "/") ?? me.startIndex)]) + "/" + name
    }

    /// Finds `program` in PATH (or takes it as a path when it contains '/').
    public static func which(_ program: String, path: String?) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        for dir in (path ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin").split(separator: ":") {
            let candidate = "\(dir)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// posix_spawn with `passFDs` as fds 3, 4, ... in the child and nothing
    /// else inherited. Output goes to `outputFD` (or /dev/null).
    public static func spawn(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32] = [],
                             outputFD: Int32 = -1, newSession: Bool = false) throws -> pid_t {
        try spawning(path, argv, environment, passFDs) { args, env, fds, count in
            vpn_spawn(path, args, env, fds, count, outputFD, newSession ? 1 : 0)
        }
    }

    /// Spawns a provider tied to this process: it gets SIGKILL when this
    /// process dies (PR_SET_PDEATHSIG, armed before the exec), so it never
    /// outlives its supervisor. Same fds, stdio and signal state as `spawn`.
    public static func spawnTied(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32] = [],
                                 outputFD: Int32 = -1) throws -> pid_t {
        try spawning(path, argv, environment, passFDs) { args, env, fds, count in
            vpn_spawn_tied(path, args, env, fds, count, outputFD, SIGKILL)
        }
    }

    /// `spawnTied` as another user: the child drops to `user` (groups, gid,
    /// uid; no new privileges) after its fds are in place, before the exec.
    public static func spawnTied(_ path: String, _ argv: [String], environment: [String: String], passFDs: [Int32] = [],
                                 outputFD: Int32 = -1, as user: UserIdentity) throws -> pid_t {
        try spawning(path, argv, environment, passFDs) { args, env, fds, count in
            vpn_spawn_tied_as(path, args, env, fds, count, outputFD, SIGKILL, Int32(bitPattern: user.uid), Int32(bitPattern: user.gid))
        }
    }

    /// argv and the environment as C arrays for one of the shims' spawns,
    /// which returns a pid or -errno.
    static func spawning(_ path: String, _ argv: [String], _ environment: [String: String], _ passFDs: [Int32],
                         _ spawn: (UnsafePointer<UnsafeMutablePointer<CChar>?>, UnsafePointer<UnsafeMutablePointer<CChar>?>,
                                   UnsafePointer<Int32>?, Int32) -> Int32) throws -> pid_t {
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        let cEnv: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        let r = cArgs.withUnsafeBufferPointer { a in
            cEnv.withUnsafeBufferPointer { e in
                passFDs.withUnsafeBufferPointer { fds in spawn(a.baseAddress!, e.baseAddress!, fds.baseAddress, Int32(fds.count)) }
            }
        }
        if r < 0 { throw Spawn.Failure(program: path, errno: Errno(-r)) }
        return r
    }

    /// Waits without blocking; returns the exit status (or 128+signal) when `pid` has ended.
    public static func reap(_ pid: pid_t) -> Int32? {
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return nil }
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    /// Sends `signal`, then waits up to `timeoutMs` for the child to end,
    /// then SIGKILLs it. Only for our own children.
    @discardableResult
    public static func terminate(_ pid: pid_t, signal: Int32 = SIGTERM, timeoutMs: Int = 3000) -> Int32? {
        // Already reaped (ECHILD): the pid is not ours any more, and may even
        // belong to another process now, so it must not be signalled.
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == -1 && errno == ECHILD { return nil }
        if r == pid { return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f) }
        kill(pid, signal)
        var waited = 0
        while waited < timeoutMs {
            if let s = reap(pid) { return s }
            usleep(5_000)
            waited += 5
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return 128 + SIGKILL
    }
}

/// A user account as the password database has it.
public struct UserIdentity: Equatable, Sendable {
    public let name: String
    public let uid: UInt32
    public let gid: UInt32

    public init(name: String, uid: UInt32, gid: UInt32) {
        self.name = name
        self.uid = uid
        self.gid = gid
    }

    /// The account named `name` (getpwnam_r), or nil.
    public static func lookup(_ name: String) -> UserIdentity? {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>? = nil
        var buffer = [CChar](repeating: 0, count: 16384)
        let r = getpwnam_r(name, &pw, &buffer, buffer.count, &result)
        guard r == 0, result != nil else { return nil }
        return UserIdentity(name: name, uid: pw.pw_uid, gid: pw.pw_gid)
    }
}

extension Processes {
    /// Replaces this process with `path` (execve). Returns only when the
    /// exec failed, with its errno.
    public static func replace(with path: String, _ argv: [String], environment: [String: String]) -> Errno {
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArgs + cEnv { free(p) } }
        execve(path, &cArgs, &cEnv)
        return Errno.current
    }
}

extension Processes {
    /// The user a process runs as: its uid when the real, effective and
    /// saved uids agree, and its gids do; 0 (root's) when they differ (a
    /// set-uid or set-gid program);
    /// nil when there is no such process.
    public static func owner(of pid: Int32) -> UInt32? {
        guard pid > 0, let bytes = try? FileSystem.readFileIfPresent("/proc/\(pid)/status", followSymlinks: true) else { return nil }
        func ids(_ key: String) -> [UInt32]? {
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(key) {
                let v = line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).prefix(3).compactMap { UInt32($0) }
                return v.count == 3 ? v : nil
            }
            return nil
        }
        guard let uids = ids("Uid:"), let gids = ids("Gid:") else { return nil }
        // A set-uid or set-gid program is root's, whoever started it.
        return uids.allSatisfy { $0 == uids[0] } && gids.allSatisfy { $0 == gids[0] } ? uids[0] : 0
    }
}
