#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A log file that no writer can grow without bound: a line repeated is
/// counted ("last line repeated N times"), not written again, and when the
/// file would pass `cap` bytes it is renamed to `<path>.1` (replacing the
/// previous one) and started afresh with a marker line. So a profile's log
/// takes at most twice `cap` on disk.
public final class BoundedLog {
    public static let defaultCap = 1 << 20
    /// Longer lines are cut; a provider cannot make one line the whole file.
    public static let maxLine = 4096
    /// A run of repeats is summarised at least this often while it lasts.
    static let repeatSummaryMs: Int64 = 10_000

    public let path: String
    public let cap: Int
    /// Kept open at this number across rotations (dup2), so that a stray
    /// write to it (the supervisor's stderr) lands in the current file.
    public let fd: Int32
    public private(set) var size: Int
    public private(set) var rotations = 0
    let now: () -> Date
    let monotonic: () -> Int64
    var lastMessage: String?
    var repeats = 0
    var repeatsSince: Int64 = 0

    /// `fd` is the log file already open for appending at `path`.
    public init(path: String, fd: Int32, cap: Int = BoundedLog.defaultCap,
                now: @escaping () -> Date = { Date() }, monotonic: @escaping () -> Int64 = monotonicMilliseconds) {
        self.path = path
        self.fd = fd
        self.cap = max(cap, 2 * BoundedLog.maxLine)
        self.now = now
        self.monotonic = monotonic
        var st = stat()
        size = fstat(fd, &st) == 0 ? Int(st.st_size) : 0
    }

    /// Writes one message (no newline) with a timestamp, or counts it when it
    /// is the same as the last one.
    public func write(_ message: String) {
        var message = message
        if message.utf8.count > BoundedLog.maxLine {
            let cut = message.utf8.count - BoundedLog.maxLine
            message = String(decoding: message.utf8.prefix(BoundedLog.maxLine), as: UTF8.self) + "… (\(cut) bytes cut)"
        }
        if message == lastMessage {
            if repeats == 0 { repeatsSince = monotonic() }
            repeats += 1
            if monotonic() - repeatsSince >= BoundedLog.repeatSummaryMs { flushRepeats() }
            return
        }
        flushRepeats()
        lastMessage = message
        append(message)
    }

    /// Writes the pending "last line repeated N times", if any.
    public func flushRepeats() {
        guard repeats > 0 else { return }
        let n = repeats
        repeats = 0
        append("[*] last line repeated \(n) time\(n == 1 ? "" : "s")")
    }

    func append(_ message: String) {
        let line = "\(Timestamp.iso8601(now())) \(message)\n"
        let bytes = Array(line.utf8)
        if size + bytes.count > cap { rotate() }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n > 0 { size += n }
    }

    /// `<path>` becomes `<path>.1`; a new `<path>` starts with a marker line.
    func rotate() {
        let fresh = open(path + ".new", O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fresh < 0 || rename(path, path + ".1") != 0 || rename(path + ".new", path) != 0 {
            // Cannot rotate (directory not writable?): truncate in place.
            if fresh >= 0 { close(fresh); unlink(path + ".new") }
            _ = ftruncate(fd, 0)
            size = 0
        } else {
            dup2(fresh, fd)
            close(fresh)
            size = 0
        }
        rotations += 1
        let marker = "\(Timestamp.iso8601(now())) [*] log reached \(cap) bytes: the earlier part is in \(path).1\n"
        let n = marker.withCString { Glibc.write(fd, $0, strlen($0)) }
        if n > 0 { size += n }
    }
}

/// A provider's stdout and stderr: a pipe whose read end the supervisor's
/// poll loop drains, line by line, into the bounded log.
public final class ProviderOutput {
    public let readFD: Int32
    /// The end the provider gets as its stdout and stderr; closed here once spawned.
    public private(set) var writeFD: Int32
    var partial: [UInt8] = []
    public private(set) var closed = false
    let log: BoundedLog

    public init(log: BoundedLog) throws {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { throw SystemError("pipe", path: "provider output", errno: .current) }
        readFD = fds[0]
        writeFD = fds[1]
        _ = fcntl(readFD, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeFD, F_SETFD, FD_CLOEXEC)
        _ = fcntl(readFD, F_SETFL, fcntl(readFD, F_GETFL) | O_NONBLOCK)
        // Room for a burst while the loop is busy (F_SETPIPE_SZ; best effort).
        _ = fcntl(readFD, 1031, Int32(1 << 20))
        self.log = log
    }

    deinit {
        close(readFD)
        if writeFD >= 0 { close(writeFD) }
    }

    /// The fd for the poll loop's set; -1 (which poll skips) once at EOF.
    public var pollFD: Int32 { closed ? -1 : readFD }

    public func closeWriteEnd() {
        if writeFD >= 0 { close(writeFD); writeFD = -1 }
    }

    /// Reads what is there (at most `limit` bytes, so that a flood cannot hold
    /// the loop) and logs each complete line.
    public func drain(limit: Int = 1 << 20) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        var total = 0
        while total < limit {
            let n = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if n == 0 { closed = true; break }
            if n < 0 { break }
            total += n
            partial += chunk[0..<n]
            for line in LineReader.takeLines(&partial) { log.write(line) }
            if partial.count > BoundedLog.maxLine {
                log.write(String(decoding: partial, as: UTF8.self))
                partial.removeAll()
            }
        }
        if closed && !partial.isEmpty {
            log.write(String(decoding: partial, as: UTF8.self))
            partial.removeAll()
        }
    }
}
