#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A profile's log (`<run-dir>/logs/<id>.log`, and `<id>.log.1` after a
/// rotation), as `vpnctl logs` reads it. Each line starts with the time it
/// was written (`2026-12-02T03:04:05.678Z message`, BoundedLog's format).
public enum ProfileLog {
    /// The most one file is read at once (BoundedLog keeps it far smaller).
    public static let maximumSize = 64 << 20

    /// The time a line was written; nil for a line without one (a stray
    /// write to the supervisor's stderr).
    public static func time(of line: Substring) -> Date? {
        let b = line.utf8
        guard b.count >= 24, b[b.index(b.startIndex, offsetBy: 23)] == UInt8(ascii: "Z") else { return nil }
        return Timestamp.parse(String(line.prefix(24)))
    }

    /// The lines written at or after `since` (all of them for nil). A line
    /// without a time of its own goes with the line before it.
    public static func lines<S: Sequence>(_ lines: S, since: Date?) -> [Substring] where S.Element == Substring {
        guard let since else { return Array(lines) }
        var keep = false
        var out: [Substring] = []
        for line in lines {
            if let t = time(of: line) { keep = t >= since }
            if keep { out.append(line) }
        }
        return out
    }

    /// `--since`: a time ago ("30s", "10m", "2h", "1d", "1h30m", optionally
    /// followed by " ago") or an ISO 8601 time ("2026-12-02T03:04:05Z",
    /// "2026-12-02T04:04:05+01:00", "2026-12-02 03:04" in local time, or a
    /// date alone: its local midnight). Nil when it is neither.
    public static func since(_ text: String, now: Date) -> Date? {
        var t = Substring(text.trimmingCharactersOfLineEnds())
        if t.hasSuffix(" ago") { t = t.dropLast(4) }
        if let seconds = duration(t) { return now.addingTimeInterval(-Double(seconds)) }
        return isoTime(t)
    }

    /// "1h30m" and the like, in seconds.
    static func duration(_ text: Substring) -> Int? {
        let units: [(String, Int)] = [("sec", 1), ("min", 60), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        var rest = text, total = 0
        guard !rest.isEmpty else { return nil }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 9, let n = Int(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            guard let unit = units.first(where: { rest.hasPrefix($0.0) }) else { return nil }
            rest = rest.dropFirst(unit.0.count)
            total += n * unit.1
            guard total <= 100 * 365 * 86400 else { return nil }
        }
        return total
    }

    static func isoTime(_ text: Substring) -> Date? {
        let b = Array(text.utf8)
        func num(_ from: Int, _ len: Int) -> Int32? {
            guard from + len <= b.count else { return nil }
            var v: Int32 = 0
            for c in b[from..<(from + len)] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int32(c - 48)
            }
            return v
        }
        guard b.count >= 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), (1...12).contains(mo), (1...31).contains(d) else { return nil }
        var tm = tm()
        tm.tm_year = y - 1900
        tm.tm_mon = mo - 1
        tm.tm_mday = d
        var i = 10
        var fraction = 0.0
        if i < b.count {
            guard b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: " "), let h = num(i + 1, 2), b.count > i + 3, b[i + 3] == UInt8(ascii: ":"),
                  let mi = num(i + 4, 2), h < 24, mi < 60 else { return nil }
            tm.tm_hour = h
            tm.tm_min = mi
            i += 6
            if i < b.count, b[i] == UInt8(ascii: ":") {
                guard let s = num(i + 1, 2), s < 61 else { return nil }
                tm.tm_sec = s
                i += 3
                if i < b.count, b[i] == UInt8(ascii: ".") {
                    var j = i + 1, scale = 0.1
                    while j < b.count, b[j] >= 48, b[j] <= 57 { fraction += Double(b[j] - 48) * scale; scale /= 10; j += 1 }
                    guard j > i + 1 else { return nil }
                    i = j
                }
            }
        }
        // The zone: Z, ±HH:MM or ±HHMM; none means local time.
        var offset: Int? = nil
        if i < b.count {
            if b[i] == UInt8(ascii: "Z") && i + 1 == b.count {
                offset = 0
            } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-"), let h = num(i + 1, 2) {
                let colon = i + 3 < b.count && b[i + 3] == UInt8(ascii: ":")
                guard let m = num(i + (colon ? 4 : 3), 2), i + (colon ? 6 : 5) == b.count, h < 24, m < 60 else { return nil }
                offset = (Int(h) * 3600 + Int(m) * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            } else {
                return nil
            }
        }
        let seconds: time_t
        if let offset {
            seconds = timegm(&tm) - time_t(offset)
        } else {
            tm.tm_isdst = -1
            seconds = mktime(&tm)
        }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}

/// Reads a log as it grows, line by line, across a rotation (the rest of
/// the old file first, then the new file from its start) or a truncation.
public final class LogTail {
    public let path: String
    var fd: Int32 = -1
    var inode: ino_t = 0
    var offset = 0
    var partial: [UInt8] = []

    /// `fromEnd`: only what is written from now on.
    public init(path: String, fromEnd: Bool = false) {
        self.path = path
        if reopen(), fromEnd {
            var st = stat()
            if fstat(fd, &st) == 0 { offset = Int(st.st_size) }
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Opens the file now at `path`; false when there is none (yet).
    @discardableResult
    func reopen() -> Bool {
        let new = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard new >= 0 else { return false }
        var st = stat()
        guard fstat(new, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { close(new); return false }
        if fd >= 0 { close(fd) }
        fd = new
        inode = st.st_ino
        offset = 0
        partial.removeAll()
        return true
    }

    /// The complete lines written since the last call.
    public func read() throws -> [String] {
        if fd < 0 && !reopen() { return [] }
        var lines = try drain()
        // Rotated (another file at the path now): finish the old one, then
        // read the new one from its start.
        var st = stat()
        if stat(path, &st) == 0, st.st_ino != inode {
            if !partial.isEmpty { lines.append(String(decoding: partial, as: UTF8.self)) }
            if reopen() { lines += try drain() }
        }
        return lines
    }

    func drain() throws -> [String] {
        var st = stat()
        if fstat(fd, &st) == 0, Int(st.st_size) < offset {
            // Truncated in place (BoundedLog's fallback): from the start again.
            offset = 0
            partial.removeAll()
        }
        var lines: [String] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var total = 0
        while total < ProfileLog.maximumSize {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path: path, errno: .current)
            }
            if n == 0 { break }
            offset += n
            total += n
            partial += chunk[0..<n]
            for line in LineReader.takeLines(&partial) { lines.append(line) }
        }
        return lines
    }
}
