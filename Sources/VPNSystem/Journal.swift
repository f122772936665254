#if canImport(Glibc)
import Glibc
#endif

/// Log priorities for the journal (syslog's levels). A service's stderr
/// lines carry them as a `<N>` prefix, which journald reads when stderr is
/// its stream (systemd sets JOURNAL_STREAM to that stream's device:inode); a
/// process whose output goes to a file of its own (a supervisor) sends
/// what an administrator must see through syslog(3), which journald serves
/// on /dev/log, attributed to the caller's unit.
public enum Journal {
    public enum Priority: Int32, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6
    }

    /// `line` tagged with `priority`, for a log writer that `render`s it.
    public static func tagged(_ priority: Priority, _ line: String) -> String { "<\(priority.rawValue)>" + line }

    /// The priority a `tagged` line carries (info when none) and the line without it.
    public static func untag(_ line: String) -> (priority: Priority, text: String) {
        let b = Array(line.utf8)
        if b.count >= 3, b[0] == UInt8(ascii: "<"), b[2] == UInt8(ascii: ">"), let p = Priority(rawValue: Int32(b[1]) - 48) {
            return (p, String(line.dropFirst(3)))
        }
        return (.info, line)
    }

    /// Whether this process's stderr is the journal's stream (JOURNAL_STREAM
    /// names the device and inode of fd 2).
    public static func stderrIsJournal(_ environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(2, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    /// A stderr line: with the journal's `<N>` prefix when stderr is the journal.
    public static func render(_ line: String, prefix: String, journal: Bool) -> String {
        let (priority, text) = untag(line)
        return (journal ? "<\(priority.rawValue)>" : "") + prefix + text
    }

    nonisolated(unsafe) private static var opened = false

    /// Sends `message` to syslog (the journal on a systemd host) as
    /// "vpnctl[PID]", facility daemon. Where nothing listens on /dev/log,
    /// nothing happens.
    public static func syslog(_ priority: Priority, _ message: String) {
        if !opened {
            openlog("vpnctl", LOG_PID | LOG_NDELAY, LOG_DAEMON)
            opened = true
        }
        message.withCString { text in
            withVaList([text]) { vsyslog(priority.rawValue, "%s", $0) }
        }
    }
}
