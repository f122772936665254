#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { vpn_isatty(fd) == 1 }
    /// The terminal's width in columns, or nil when fd is no terminal.
    public static func columns(_ fd: Int32) -> Int? {
        let n = vpn_terminal_columns(fd)
        return n > 0 ? Int(n) : nil
    }
}

/// Where text output goes. The CLI writes through this so tests can capture it.
public protocol TextSink: AnyObject {
    func write(_ text: String)
    /// UTF-8 text as bytes: a large output (status of a thousand profiles)
    /// goes out without being copied into a String first.
    func write(utf8 bytes: [UInt8])
    /// The first write that failed; nothing is written after it.
    var failure: Errno? { get }
    /// Whether output can still arrive (false once a write failed or the
    /// reader went away), checked without writing anything.
    func checkOpen() -> Bool
    /// The descriptor behind the sink, for a loop that waits on other things
    /// to notice its reader going away.
    var descriptor: Int32? { get }
}

extension TextSink {
    public func write(utf8 bytes: [UInt8]) { write(String(decoding: bytes, as: UTF8.self)) }
    public var failure: Errno? { nil }
    public func checkOpen() -> Bool { failure == nil }
    public var descriptor: Int32? { nil }
}

/// Writes straight to a file descriptor, unbuffered. It remembers the first
/// failed write (a full disk, a closed descriptor, a reader that went away)
/// so that the command can exit 1 instead of pretending it printed.
public final class FileDescriptorSink: TextSink {
    public let fd: Int32
    public private(set) var failure: Errno?
    public var descriptor: Int32? { fd }
    public init(fd: Int32) { self.fd = fd }

    public func write(_ text: String) {
        // A native String's bytes are written where they are.
        if text.utf8.withContiguousStorageIfAvailable({ write($0) }) == nil { write(utf8: Array(text.utf8)) }
    }

    public func write(utf8 bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { write($0) }
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard failure == nil, let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, base + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&p, 1, -1)
                    continue
                }
                failure = .current
                return
            }
            offset += n
        }
    }

    /// A zero-length write finds a closed (or read-only) descriptor; poll
    /// finds a pipe whose reader has gone.
    public func checkOpen() -> Bool {
        guard failure == nil else { return false }
        if Glibc.write(fd, "", 0) < 0 && errno != EINTR && errno != EAGAIN {
            failure = .current
            return false
        }
        var p = pollfd(fd: fd, events: 0, revents: 0)
        if poll(&p, 1, 0) > 0 && p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
            failure = Errno(EPIPE)
            return false
        }
        return true
    }

    /// A closed fd 0, 1 or 2 would be handed to the next file vpnctl opens,
    /// and output would land in it. Each closed one gets /dev/null, opened
    /// read-only for 1 and 2 so that writing there fails as it should.
    public static func reserveStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
            let n = open("/dev/null", O_RDONLY | O_NOCTTY)
            if n >= 0 && n != fd {
                dup2(n, fd)
                close(n)
            }
        }
    }
}

/// Collects output in memory, for tests.
public final class BufferSink: TextSink {
    public private(set) var text = ""
    public init() {}
    public func write(_ text: String) { self.text += text }
}

/// The terminal settings to put back if a signal ends the process while
/// echo is off. Set before the handlers go in; read only by them.
private var termiosToRestore = termios()

private func restoreTerminalAndReraise(_ signal: Int32) {
    tcsetattr(0, TCSAFLUSH, &termiosToRestore)
    Glibc.signal(signal, SIG_DFL)
    raise(signal)
}

extension Terminal {
    static let endingSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Reads one line from the terminal on fd 0 with echo turned off, for
    /// secrets typed by hand. The prompt goes to stderr. Echo comes back on
    /// every way out, Ctrl-C and kill included: a signal that ends the
    /// process restores the terminal first, then ends it as it would have.
    public static func readLineWithoutEcho(prompt: String, limit: Int = 64 << 10) -> [UInt8] {
        FileDescriptorSink(fd: 2).write(prompt)
        var saved = termios()
        let haveTermios = tcgetattr(0, &saved) == 0
        var previous: [(Int32, sighandler_t?)] = []
        if haveTermios {
            termiosToRestore = saved
            previous = endingSignals.map { ($0, signal($0, restoreTerminalAndReraise)) }
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTermios {
                tcsetattr(0, TCSAFLUSH, &saved)
                for (sig, handler) in previous { signal(sig, handler) }
            }
            FileDescriptorSink(fd: 2).write("\n")
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= limit {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n != 1 || byte == 0x0A { break }
            line.append(byte)
        }
        return line
    }

    /// Reads one answer typed at the terminal on fd 0 (echoed), after a
    /// prompt on stderr; nil at end of input.
    public static func readLine(prompt: String, limit: Int = 4096) -> String? {
        FileDescriptorSink(fd: 2).write(prompt)
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= limit {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n != 1 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 0x0A { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }
}
