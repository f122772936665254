#if canImport(Glibc)
import Glibc
#endif

/// One interface's line of /proc/net/dev.
public struct InterfaceCounters: Equatable, Sendable {
    public var name: String
    public var rxBytes: UInt64
    public var rxPackets: UInt64
    public var rxErrors: UInt64
    public var rxDropped: UInt64
    public var txBytes: UInt64
    public var txPackets: UInt64
    public var txErrors: UInt64
    public var txDropped: UInt64

    public init(name: String, rxBytes: UInt64, rxPackets: UInt64, rxErrors: UInt64, rxDropped: UInt64,
                txBytes: UInt64, txPackets: UInt64, txErrors: UInt64, txDropped: UInt64) {
        self.name = name
        self.rxBytes = rxBytes
        self.rxPackets = rxPackets
        self.rxErrors = rxErrors
        self.rxDropped = rxDropped
        self.txBytes = txBytes
        self.txPackets = txPackets
        self.txErrors = txErrors
        self.txDropped = txDropped
    }
}

/// /proc/net/dev, parsed as a pure function of its text.
public enum ProcNetDev {
    public static let defaultPath = "/proc/net/dev"

    public enum ParseError: Error, Equatable, CustomStringConvertible, Sendable {
        case badLine(Int, String)
        public var description: String {
            switch self {
            case .badLine(let n, let text): return "line \(n) of /proc/net/dev is not 'name: 16 counters': \(text)"
            }
        }
    }

    /// The two header lines are skipped. Each other line is `name:` then 16
    /// decimal counters. The kernel pads the name to 6 columns and prints the
    /// first counter right after the colon, so a wide counter touches it; the
    /// name ends at the last ':' that is followed by exactly 16 numbers.
    public static func parse(_ bytes: [UInt8]) throws -> [InterfaceCounters] {
        var result: [InterfaceCounters] = []
        var lineNumber = 0
        var start = 0
        result.reserveCapacity(bytes.count / 120)
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            lineNumber += 1
            if lineNumber > 2 && end > start {
                guard let c = parseLine(bytes, start, end) else {
                    let text = String(decoding: bytes[start..<min(end, start + 80)], as: UTF8.self)
                    throw ParseError.badLine(lineNumber, text)
                }
                result.append(c)
            }
            start = end + 1
        }
        return result
    }

    static func parseLine(_ b: [UInt8], _ start: Int, _ end: Int) -> InterfaceCounters? {
        var colon = end - 1
        while colon >= start {
            if b[colon] == UInt8(ascii: ":"), let values = numbers(b, colon + 1, end), values.count == 16 {
                var nameStart = start
                while nameStart < colon && (b[nameStart] == 0x20 || b[nameStart] == 0x09) { nameStart += 1 }
                guard nameStart < colon else { return nil }
                let name = String(decoding: b[nameStart..<colon], as: UTF8.self)
                return InterfaceCounters(name: name, rxBytes: values[0], rxPackets: values[1], rxErrors: values[2],
                                         rxDropped: values[3], txBytes: values[8], txPackets: values[9],
                                         txErrors: values[10], txDropped: values[11])
            }
            colon -= 1
        }
        return nil
    }

    /// Space-separated unsigned decimals; nil on anything else or on overflow.
    static func numbers(_ b: [UInt8], _ from: Int, _ end: Int) -> [UInt64]? {
        var values: [UInt64] = []
        values.reserveCapacity(16)
        var i = from
        while i < end {
            let c = b[i]
            if c == 0x20 || c == 0x09 || c == 0x0D { i += 1; continue }
            guard c >= 0x30 && c <= 0x39 else { return nil }
            var v: UInt64 = 0
            while i < end && b[i] >= 0x30 && b[i] <= 0x39 {
                let (m, o1) = v.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(b[i] - 0x30))
                if o1 || o2 { return nil }
                v = s
                i += 1
            }
            values.append(v)
            if values.count > 16 { return nil }
        }
        return values
    }

    /// Reads and parses the file in one go (the kernel hands it out in page
    /// sized chunks, so it is read to EOF).
    public static func read(path: String = defaultPath) throws -> [InterfaceCounters] {
        guard let bytes = try FileSystem.readFileIfPresent(path, followSymlinks: true, limit: maximumSize) else {
            throw SystemError("read", path: path, errno: .notFound)
        }
        return try parse(bytes)
    }

    /// About a million interfaces' worth.
    public static let maximumSize = 128 << 20
}
