#if canImport(Glibc)
import Glibc
#endif

/// A wake-up line from one process to another: a socketpair whose ringer
/// end a child inherits. The ringer sends a byte when something changed; the
/// listener polls and then looks for itself (a ring carries no state). Used
/// by `start` instead of inotify: closing an inotify fd that has a watch
/// waits for an SRCU grace period (about 8 ms here), and a start pays it on
/// the way to its exit.
public enum Doorbell {
    /// (listener, ringer), both close-on-exec; pass the ringer to the child.
    public static func pair() throws -> (listener: Int32, ringer: Int32) {
        var fds: [Int32] = [-1, -1]
        if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) != 0 {
            throw SystemError("create", path: "a socketpair", errno: .current)
        }
        _ = shutdown(fds[0], Int32(SHUT_WR))
        return (fds[0], fds[1])
    }

    /// Never blocks and never raises SIGPIPE: a listener that went away or a
    /// full buffer (the listener is behind; it will look anyway) is fine.
    public static func ring(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = send(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
    }

    /// Reads what is pending. False once the ringer's end is closed.
    public static func drain(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { continue }
            if n == 0 { return false }
            return errno == EAGAIN || errno == EINTR
        }
    }
}
