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
    public static func isAlive(_ pid: Int32, startTime: UInt64?) -> Bool {
        guard let now = self.startTime(of: pid) else { return false }
        return startTime == nil || now == startTime
    }

    /// The path of the running executable, for re-executing ourselves.
    public static func currentExecutable() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        return n > 0 ? String(cString: buf) : CommandLine.arguments[0]
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

/// A Linux inotify instance watching directories, for event-driven waits.
public final class DirectoryWatch {
    public let fd: Int32

    /// Renames (records replaced atomically), appends (event logs), creation and deletion.
    public static let everything = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MODIFY)
    /// Only whole-file replacements and deletions: what a record changes by.
    public static let replacements = UInt32(IN_MOVED_TO | IN_DELETE)

    public init(_ paths: [String], mask: UInt32 = DirectoryWatch.everything) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { throw SystemError("watch", path: paths.joined(separator: ", "), errno: .current) }
        for p in paths {
            if inotify_add_watch(fd, p, mask) < 0 {
                let e = Errno.current
                close(fd)
                throw SystemError("watch", path: p, errno: e)
            }
        }
    }

    deinit { close(fd) }

    public func drain() {
        var buf = [UInt8](repeating: 0, count: 8192)
        while buf.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// poll(2) over a few fds; returns the indexes that are readable.
public func pollReadable(_ fds: [Int32], timeoutMs: Int32) -> [Int] {
    var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let r = poll(&pfds, nfds_t(pfds.count), timeoutMs)
    if r <= 0 { return [] }
    return pfds.indices.filter { pfds[$0].revents != 0 }
}

/// As `pollReadable`, also waking when `output`'s reader goes away (the
/// index `fds.count` is then among the ready ones). It waits for nothing
/// else on `output`, so a terminal that has input does not wake it.
public func pollReadable(_ fds: [Int32], orHangupOf output: Int32?, timeoutMs: Int32) -> [Int] {
    guard let output else { return pollReadable(fds, timeoutMs: timeoutMs) }
    var pfds = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) } + [pollfd(fd: output, events: 0, revents: 0)]
    let r = poll(&pfds, nfds_t(pfds.count), timeoutMs)
    if r <= 0 { return [] }
    return pfds.indices.filter { pfds[$0].revents != 0 }
}

/// Milliseconds on the monotonic clock.
public func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
