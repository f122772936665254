#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The run directory: `<id>.json` (the record), `<id>.events` (JSON lines,
/// one per transition, bounded: `eventsCap`) and `<id>.log` (the supervisor's log).
/// Every read and write goes through `files`: the system's, or a unit
/// test's `MemoryFiles`.
public struct RuntimeStore: Sendable {
    public let directory: String
    public let files: any Files
    /// The run dir (and each directory above it) is checked once per store,
    /// not once per record: `status` reads every profile's record.
    private let trusted = OnceFlag()

    private let normalizedDirectory: String

    public init(directory: String, files: any Files = SystemFiles()) {
        self.directory = directory
        self.files = files
        normalizedDirectory = FileSystem.normalized(directory)
    }

    /// A record is a few hundred bytes; anything near this is not one.
    public static let maximumRecordSize = 1 << 20
    /// The most of an events log a reader takes in (the writer keeps it far smaller).
    public static let maximumEventsSize = 64 << 20
    /// `<id>.events` is kept under this many bytes, like the log: past it,
    /// it becomes `<id>.events.1` (replacing the one before) and starts
    /// afresh, so a profile's events take at most twice this on disk.
    public static let defaultEventsCap = 256 << 10
    public var eventsCap = RuntimeStore.defaultEventsCap

    public func recordPath(_ id: UUID) -> String { "\(directory)/\(id.lowercasedString).json" }
    public func eventsPath(_ id: UUID) -> String { "\(directory)/\(id.lowercasedString).events" }
    /// Held by `start` from deciding to spawn a supervisor until it is accepted.
    public func startLockPath(_ id: UUID) -> String { "\(directory)/\(id.lowercasedString).start.lock" }
    /// Files a provider needs for one run (openvpn's config, the client
    /// certificate and the management socket). Removed on stop, or by the
    /// cleanup after a dead supervisor.
    public func providerFile(_ id: UUID, _ kind: ProviderFile) -> String { "\(directory)/\(id.lowercasedString).\(kind.rawValue)" }
    public enum ProviderFile: String, CaseIterable, Sendable { case config = "conf", certificate = "cert.pem", caBundle = "ca.pem", management = "mgmt" }
    /// Logs live in their own directory: the supervisor and the provider write
    /// them line by line, and watchers of the run directory must not wake for that.
    public var logDirectory: String { "\(directory)/logs" }
    public func logPath(_ id: UUID) -> String { "\(logDirectory)/\(id.lowercasedString).log" }

    public func prepare() throws {
        do {
            try files.ensurePrivateDirectory(directory)
            try files.ensurePrivateDirectory(logDirectory)
        } catch {
            throw storeError(error)
        }
    }

    public static func makeEncoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(Timestamp.iso8601(date))
        }
        return e
    }

    /// The names of the record files in the run directory: one listing,
    /// where a status of a thousand profiles would otherwise look for a
    /// thousand files that are not there. Nil when it cannot be listed.
    public func recordFileNames() -> Set<String>? {
        guard let names = try? files.listAll(directory) else { return nil }
        return Set(names.lazy.filter { $0.hasSuffix(".json") })
    }

    /// Nil when the profile never ran here.
    public func read(_ id: UUID) throws -> RuntimeRecord? {
        let path = recordPath(id)
        let bytes: [UInt8]
        do {
            // A record makes vpnctl signal processes and delete interfaces:
            // it counts only from a run dir nobody else can write.
            if !trusted.isSet {
                guard try files.info(normalizedDirectory) != nil else { return nil }
                try files.checkTrustedDirectory(directory)
                trusted.set()
            }
            guard try files.checkTrustedFile(path) != nil,
                  let b = try files.readFileIfPresent(path, limit: RuntimeStore.maximumRecordSize) else { return nil }
            bytes = b
        } catch {
            throw storeError(error)
        }
        do {
            return try RuntimeRecord(json: JSONReader(parsing: bytes))
        } catch {
            throw VPNError(.configurationReadWriteFailed, L("\(path): unreadable runtime record (\(error))"),
                           hint: L("stop the profile, or remove the file if no supervisor runs"))
        }
    }

    public func write(_ record: RuntimeRecord) throws {
        let bytes = Array(try RuntimeStore.makeEncoder().encode(record)) + [0x0A]
        do { try files.writeAtomically(bytes, to: recordPath(record.id), mode: 0o600, durable: false) } catch { throw storeError(error) }
    }

    public func appendEvent(_ event: TransitionEvent, id: UUID) throws {
        let line = Array(try RuntimeStore.makeEncoder().encode(event)) + [0x0A]
        let path = eventsPath(id)
        do {
            if let i = try files.info(path), i.isRegular, i.size > 0, i.size + line.count > eventsCap {
                // Rotated by rename, so that a reader holding the old file (or
                // its offset in it) can tell, and finish it from `<id>.events.1`.
                try files.rename(path, to: path + ".1")
            }
            try files.append(line, to: path, mode: 0o600)
        } catch {
            throw storeError(error)
        }
    }

    /// Taken by `start` from deciding to spawn a supervisor until it is
    /// accepted; starts of one profile take turns. Released when the returned
    /// object goes.
    public func lockStart(_ id: UUID) throws -> AnyObject {
        do { return try files.lock(startLockPath(id)) } catch { throw storeError(error) }
    }

    /// Forgets a removed profile: its record, events, log and lock files.
    public func remove(_ id: UUID) throws {
        let base = "\(directory)/\(id.lowercasedString)"
        let log = logPath(id)
        do {
            for path in [recordPath(id), eventsPath(id), eventsPath(id) + ".1", startLockPath(id), base + ".lock",
                         log, log + ".1", log + ".new"] { try files.remove(path) }
        } catch {
            throw storeError(error)
        }
    }
}

/// ISO 8601 with milliseconds, UTC, without Foundation's formatters.
public enum Timestamp {
    /// Broken-down time (UTC or local) and the milliseconds.
    static func fields(_ date: Date, utc: Bool) -> (tm, Int32) {
        let totalMs = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var secs = time_t(totalMs / 1000)
        var tm = tm()
        if utc { gmtime_r(&secs, &tm) } else { localtime_r(&secs, &tm) }
        return (tm, Int32(totalMs % 1000))
    }

    static func pad(_ v: Int32, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    public static func iso8601(_ date: Date) -> String {
        let (t, ms) = fields(date, utc: true)
        return "\(pad(t.tm_year + 1900, 4))-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2))T\(clockText(t, ms))Z"
    }

    /// "2026-12-01 14:03:07 +0100", local time, for people (status --verbose).
    public static func local(_ date: Date) -> String {
        let (t, _) = fields(date, utc: false)
        let offset = Int32(t.tm_gmtoff / 60)
        let sign = offset < 0 ? "-" : "+"
        return "\(pad(t.tm_year + 1900, 4))-\(pad(t.tm_mon + 1, 2))-\(pad(t.tm_mday, 2)) "
            + "\(pad(t.tm_hour, 2)):\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2)) \(sign)\(pad(abs(offset) / 60, 2))\(pad(abs(offset) % 60, 2))"
    }

    /// "just now", "42 s ago", "3 min ago", "2 h 5 min ago", "4 days ago",
    /// for people: each form is one whole message, in the language of
    /// `catalog` (the process's by default).
    public static func ago(_ date: Date, now: Date, in catalog: MessageCatalog? = Localization.catalog) -> String {
        func L(_ text: LocalizedText) -> String { Localization.translate(text, in: catalog) }
        let s = Int((now.timeIntervalSince(date)).rounded(.down))
        if s < 1 { return L("just now") }
        if s < 60 { return L("\(s) s ago") }
        if s < 3600 { return L("\(s / 60) min ago") }
        if s < 86400 { return s % 3600 < 60 ? L("\(s / 3600) h ago") : L("\(s / 3600) h \(s % 3600 / 60) min ago") }
        let days = s / 86400
        return days == 1 ? L("1 day ago") : L("\(days) days ago")
    }

    /// "14:03:07.123", local time, for --watch lines.
    public static func clock(_ date: Date) -> String {
        let (t, ms) = fields(date, utc: false)
        return clockText(t, ms)
    }

    static func clockText(_ t: tm, _ ms: Int32) -> String {
        "\(pad(t.tm_hour, 2)):\(pad(t.tm_min, 2)):\(pad(t.tm_sec, 2)).\(pad(ms, 3))"
    }

    public static func parse(_ s: String) -> Date? {
        let b = Array(s.utf8)
        guard b.count >= 20 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int32? {
            guard from + len <= b.count else { return nil }
            var v: Int32 = 0
            for c in b[from..<(from + len)] {
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int32(c - 48)
            }
            return v
        }
        guard let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
              let se = num(17, 2) else { return nil }
        var tm = tm()
        tm.tm_year = y - 1900
        tm.tm_mon = mo - 1
        tm.tm_mday = d
        tm.tm_hour = h
        tm.tm_min = mi
        tm.tm_sec = se
        let secs = timegm(&tm)
        var ms = 0.0
        if b.count > 20, b[19] == UInt8(ascii: "."), let f = num(20, 3) { ms = Double(f) / 1000 }
        return Date(timeIntervalSince1970: Double(secs) + ms)
    }
}

/// A flag that is set once; for state a short-lived command checks once.
final class OnceFlag: @unchecked Sendable {
    private(set) var isSet = false
    func set() { isSet = true }
}
