#if canImport(Glibc)
import Glibc
#endif

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
