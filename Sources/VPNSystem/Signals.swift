#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// How a child process ended, decoded from waitpid's status.
public enum ExitStatus: Equatable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    public init(waitStatus status: Int32) {
        self = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
    }

    /// The shell's convention: the status, or 128 + the signal.
    public var code: Int32 {
        switch self {
        case .exited(let s): return s
        case .signalled(let s): return 128 + s
        }
    }

    /// "exited with status 1", "was killed by signal 9".
    public var description: String {
        switch self {
        case .exited(let s): return "exited with status \(s)"
        case .signalled(let s): return "was killed by signal \(s)"
        }
    }
}

/// The supervisor's signals (SIGTERM, SIGINT, SIGHUP, SIGCHLD), blocked and
/// read from a signalfd so that one poll loop sees them with everything else.
public final class SignalQueue {
    public let fd: Int32

    public init() throws {
        let fd = vpn_supervisor_signalfd()
        if fd < 0 { throw SystemError("open", path: "a signalfd", errno: Errno(-fd)) }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Every pending signal, in order of arrival.
    public func drain() -> [Int32] {
        var signals: [Int32] = []
        while true {
            let sig = vpn_signalfd_read(fd)
            if sig <= 0 { return signals }
            signals.append(sig)
        }
    }
}

/// The one place a supervisor reaps its children.
public enum ChildReaper {
    /// Every child that has ended since the last call, with how it ended.
    public static func reapAll() -> [(pid: pid_t, status: ExitStatus)] {
        var ended: [(pid_t, ExitStatus)] = []
        while true {
            var status: Int32 = 0
            let pid = waitpid(-1, &status, WNOHANG)
            if pid <= 0 { return ended }
            ended.append((pid, ExitStatus(waitStatus: status)))
        }
    }
}

/// A pidfd (pidfd_open(2)): readable when the process ends. Owns its fd.
public final class ProcessWatch {
    public let pid: pid_t
    public let fd: Int32

    /// nil when the process is already gone or pidfds are not supported.
    public init?(pid: pid_t) {
        let fd = vpn_pidfd_open(pid)
        if fd < 0 { return nil }
        self.pid = pid
        self.fd = fd
    }

    deinit { close(fd) }
}
