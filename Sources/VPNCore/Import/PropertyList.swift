import FoundationEssentials

/// A property list value, as Apple's configuration profiles carry them
/// (XML `<plist>` or binary `bplist00`). The reader is vpnctl's own: every
/// count, offset and reference in a hostile file is checked before it is used.
public indirect enum PropertyList: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    /// Seconds since 2001-01-01 00:00:00 UTC, as plists count them.
    case date(Double)
    case data([UInt8])
    case array([PropertyList])
    case dict([String: PropertyList])

    /// What a value is, for messages ("a string", "an array").
    public var kindName: String {
        switch self {
        case .string: return L("a string")
        case .integer: return L("an integer")
        case .real: return L("a real")
        case .bool: return L("a boolean")
        case .date: return L("a date")
        case .data: return L("data")
        case .array: return L("an array")
        case .dict: return L("a dictionary")
        }
    }

    public var string: String? { if case .string(let s) = self { return s }; return nil }
    public var dict: [String: PropertyList]? { if case .dict(let d) = self { return d }; return nil }
    public var array: [PropertyList]? { if case .array(let a) = self { return a }; return nil }
    public var data: [UInt8]? { if case .data(let d) = self { return d }; return nil }

    /// Deepest nesting either reader accepts (real profiles nest about 6 deep).
    public static let maximumDepth = 64
    /// The most values a file may decode to, counting a shared binary object
    /// once per reference (so a small file cannot expand to a huge tree).
    public static let maximumValues = 200_000

    /// Why a file is not a property list vpnctl reads: the problem, and where.
    public struct Problem: Error, CustomStringConvertible, Equatable, Sendable {
        public let message: String
        public var description: String { message }
        init(_ message: String) { self.message = message }
    }

    /// Reads an XML or binary property list, decided by its first bytes.
    public static func parse(_ bytes: [UInt8]) throws -> PropertyList {
        if bytes.starts(with: Array("bplist".utf8)) {
            var reader = BinaryPropertyListReader(bytes)
            return try reader.read()
        }
        var reader = XMLPropertyListReader(bytes)
        return try reader.read()
    }

    /// Whether `bytes` look like a property list (XML or binary).
    public static func looksLike(_ bytes: [UInt8]) -> Bool {
        if bytes.starts(with: Array("bplist".utf8)) { return true }
        let head = String(decoding: bytes.prefix(1024), as: UTF8.self).lowercased()
        return head.containsUTF8("<plist") || head.containsUTF8("<!doctype plist")
    }
}

// MARK: - Dates

enum PlistDate {
    /// 2001-01-01T00:00:00Z as days since 1970-01-01.
    static let referenceDays = 11_323

    /// The dates XML can write: years 0001 to 9999.
    static let range: ClosedRange<Double> =
        Double((daysFromCivil(1, 1, 1) - referenceDays) * 86400)...Double((daysFromCivil(10000, 1, 1) - referenceDays) * 86400 - 1)

    /// "YYYY-MM-DDTHH:MM:SSZ" (what Apple writes) to seconds since 2001.
    static func parse(_ s: String) -> Double? {
        let u = Array(s.utf8)
        guard u.count == 20, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A, u[19] == 0x5A else { return nil }
        func num(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r { guard (0x30...0x39).contains(u[i]) else { return nil }; v = v * 10 + Int(u[i] - 0x30) }
            return v
        }
        guard let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10),
              let h = num(11..<13), let mi = num(14..<16), let se = num(17..<19),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, se < 61 else { return nil }
        let days = daysFromCivil(y, mo, d) - referenceDays
        return Double(days * 86400 + h * 3600 + mi * 60 + se)
    }

    static func format(_ t: Double) -> String {
        let total = t.isFinite ? Int(max(-1e15, min(1e15, t)).rounded(.down)) : 0
        var days = total / 86400, rest = total % 86400
        if rest < 0 { rest += 86400; days -= 1 }
        let (y, m, d) = civilFromDays(days + referenceDays)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = String(y).count < 4 ? String(repeating: "0", count: 4 - String(y).count) + String(y) : String(y)
        return "\(year)-\(two(m))-\(two(d))T\(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60))Z"
    }

    // Howard Hinnant's civil-date algorithms.
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

// MARK: - XML

/// The XML plist dialect: one `<plist>` element holding one value; `<dict>`
/// of `<key>`/value pairs, `<array>`, `<string>`, `<integer>`, `<real>`,
/// `<true/>`, `<false/>`, `<date>`, `<data>`. Comments, the XML declaration,
/// the DOCTYPE, CDATA and the five named and numeric character references are
/// understood; anything else (other entities, other elements) is refused.
struct XMLPropertyListReader {
    let b: [UInt8]
    var i = 0
    var values = 0

    init(_ bytes: [UInt8]) { b = bytes }

    func fail(_ what: String) -> PropertyList.Problem {
        var line = 1, column = 1
        for k in 0..<min(i, b.count) {
            if b[k] == 0x0A { line += 1; column = 1 } else if b[k] & 0xC0 != 0x80 { column += 1 }
        }
        return PropertyList.Problem(L("XML property list, line \(line), column \(column): \(what)"))
    }

    mutating func read() throws -> PropertyList {
        if b.starts(with: [0xFE, 0xFF]) || b.starts(with: [0xFF, 0xFE]) || b.starts(with: [0x00, 0x3C]) || b.starts(with: [0x3C, 0x00]) {
            throw PropertyList.Problem(L("the property list is UTF-16; vpnctl reads UTF-8 XML or binary property lists (convert it with: plutil -convert xml1 FILE)"))
        }
        guard String(validating: b, as: UTF8.self) != nil else { throw PropertyList.Problem(L("the XML property list is not valid UTF-8")) }
        if b.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        try skipMisc()
        guard let open = try tag(), open.name == "plist", !open.closing else {
            throw fail(L("expected <plist>"))
        }
        let value: PropertyList
        if open.empty {
            throw fail(L("<plist/> holds no value"))
        } else {
            try skipMisc()
            guard let t = try tag(), !t.closing else { throw fail(L("<plist> holds no value")) }
            value = try element(t, depth: 1)
            try skipMisc()
            guard let close = try tag(), close.closing, close.name == "plist" else { throw fail(L("expected </plist> after the value")) }
        }
        try skipMisc()
        if i < b.count { throw fail(L("unexpected content after </plist>")) }
        return value
    }

    struct Tag { var name: String; var closing: Bool; var empty: Bool }

    /// Skips white space, comments, processing instructions and a DOCTYPE.
    mutating func skipMisc() throws {
        while true {
            while i < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[i]) { i += 1 }
            if hasPrefix("<!--") {
                guard let end = find("-->", from: i + 4) else { throw fail(L("a comment is never closed")) }
                i = end + 3
            } else if hasPrefix("<?") {
                guard let end = find("?>", from: i + 2) else { throw fail(L("a processing instruction is never closed")) }
                i = end + 2
            } else if hasPrefix("<!DOCTYPE") {
                var k = i
                while k < b.count, b[k] != 0x3E {
                    if b[k] == 0x5B { throw fail(L("a DOCTYPE with an internal subset (entity declarations) is refused")) }
                    k += 1
                }
                guard k < b.count else { throw fail(L("the DOCTYPE is never closed")) }
                i = k + 1
            } else {
                return
            }
        }
    }

    func hasPrefix(_ s: String) -> Bool {
        let u = Array(s.utf8)
        return i + u.count <= b.count && Array(b[i..<(i + u.count)]) == u
    }

    func find(_ s: String, from start: Int) -> Int? {
        let u = Array(s.utf8)
        var k = start
        while k + u.count <= b.count {
            if b[k] == u[0] && Array(b[k..<(k + u.count)]) == u { return k }
            k += 1
        }
        return nil
    }

    /// The tag at `i` (attributes read and dropped), or nil when no '<' is there.
    mutating func tag() throws -> Tag? {
        guard i < b.count, b[i] == 0x3C else { return nil }
        var k = i + 1
        let closing = k < b.count && b[k] == 0x2F
        if closing { k += 1 }
        let start = k
        while k < b.count, isNameByte(b[k]) { k += 1 }
        guard k > start else { throw fail(L("a malformed tag")) }
        let name = String(decoding: b[start..<k], as: UTF8.self)
        var quote: UInt8? = nil
        while k < b.count {
            let c = b[k]
            if let q = quote { if c == q { quote = nil } } else if c == 0x22 || c == 0x27 { quote = c } else if c == 0x3E || c == 0x3C { break }
            k += 1
        }
        guard k < b.count, b[k] == 0x3E else { throw fail(L("the tag <\(closing ? "/" : "")\(name.prefix(40))> is never closed")) }
        let empty = !closing && b[k - 1] == 0x2F
        i = k + 1
        return Tag(name: name, closing: closing, empty: empty)
    }

    func isNameByte(_ c: UInt8) -> Bool {
        (0x61...0x7A).contains(c) || (0x41...0x5A).contains(c) || (0x30...0x39).contains(c) || c == 0x2D || c == 0x5F || c == 0x3A || c == 0x2E
    }

    mutating func element(_ t: Tag, depth: Int) throws -> PropertyList {
        guard depth <= PropertyList.maximumDepth else { throw fail(L("nested more than \(PropertyList.maximumDepth) deep")) }
        values += 1
        guard values <= PropertyList.maximumValues else { throw fail(L("more than \(PropertyList.maximumValues) values")) }
        switch t.name {
        case "true", "false":
            if !t.empty {
                try skipMisc()
                guard let c = try tag(), c.closing, c.name == t.name else { throw fail(L("<\(t.name)> must be empty")) }
            }
            return .bool(t.name == "true")
        case "dict":
            var d: [String: PropertyList] = [:]
            if t.empty { return .dict(d) }
            while true {
                try skipMisc()
                guard let k = try tag() else { throw fail(L("text inside <dict> (expected <key>)")) }
                if k.closing {
                    guard k.name == "dict" else { throw fail(L("</\(k.name)> closes <dict>")) }
                    return .dict(d)
                }
                guard k.name == "key" else { throw fail(L("<\(k.name)> where a <key> was expected in <dict>")) }
                let key = k.empty ? "" : try text(closing: "key")
                try skipMisc()
                guard let v = try tag(), !v.closing else { throw fail(L("the key '\(key.prefix(60))' has no value")) }
                let value = try element(v, depth: depth + 1)
                if d[key] != nil { throw fail(L("the key '\(key.prefix(60))' appears twice in one <dict>")) }
                d[key] = value
            }
        case "array":
            var a: [PropertyList] = []
            if t.empty { return .array(a) }
            while true {
                try skipMisc()
                guard let v = try tag() else { throw fail(L("text inside <array>")) }
                if v.closing {
                    guard v.name == "array" else { throw fail(L("</\(v.name)> closes <array>")) }
                    return .array(a)
                }
                a.append(try element(v, depth: depth + 1))
            }
        case "string":
            return .string(t.empty ? "" : try text(closing: "string"))
        case "key":
            throw fail(L("a <key> outside a <dict>"))
        case "integer":
            let s = t.empty ? "" : try text(closing: "integer")
            guard let v = Self.integer(s) else { throw fail(L("<integer>\(s.prefix(40))</integer> is not a 64-bit integer")) }
            return .integer(v)
        case "real":
            let s = (t.empty ? "" : try text(closing: "real")).trimmingSpaces()
            guard let v = Double(s), !s.isEmpty else { throw fail(L("<real>\(s.prefix(40))</real> is not a number")) }
            return .real(v)
        case "date":
            let s = (t.empty ? "" : try text(closing: "date")).trimmingSpaces()
            guard let v = PlistDate.parse(s) else { throw fail(L("<date>\(s.prefix(40))</date> is not YYYY-MM-DDTHH:MM:SSZ")) }
            return .date(v)
        case "data":
            let s = t.empty ? "" : try text(closing: "data")
            let compact = String(String.UnicodeScalarView(s.unicodeScalars.filter { !" \t\r\n".unicodeScalars.contains($0) }))
            if compact.isEmpty { return .data([]) }
            guard let d = Data(base64Encoded: compact) else { throw fail(L("<data> is not valid base64")) }
            return .data(Array(d))
        default:
            throw fail(L("unknown element <\(t.name.prefix(40))>"))
        }
    }

    static func integer(_ s0: String) -> Int64? {
        let s = s0.trimmingSpaces()
        var body = Substring(s)
        var negative = false
        if body.hasPrefix("-") { negative = true; body = body.dropFirst() } else if body.hasPrefix("+") { body = body.dropFirst() }
        let hex = body.hasPrefix("0x") || body.hasPrefix("0X")
        if hex { body = body.dropFirst(2) }
        guard !body.isEmpty, let magnitude = UInt64(body, radix: hex ? 16 : 10) else { return nil }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
        }
        // Apple writes unsigned values above Int64.max as themselves; none fits a profile.
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Character data up to `</name>`, with references and CDATA resolved.
    mutating func text(closing name: String) throws -> String {
        var out: [UInt8] = []
        while i < b.count {
            let c = b[i]
            if c == 0x3C {
                if hasPrefix("<![CDATA[") {
                    guard let end = find("]]>", from: i + 9) else { throw fail(L("a CDATA section is never closed")) }
                    out += b[(i + 9)..<end]
                    i = end + 3
                    continue
                }
                if hasPrefix("<!--") {
                    guard let end = find("-->", from: i + 4) else { throw fail(L("a comment is never closed")) }
                    i = end + 3
                    continue
                }
                guard let t = try tag() else { throw fail(L("a malformed tag")) }
                guard t.closing, t.name == name else { throw fail(L("<\(t.closing ? "/" : "")\(t.name.prefix(40))> inside <\(name)>")) }
                return String(decoding: out, as: UTF8.self)
            }
            if c == 0x26 {
                guard let semi = b[i...].prefix(12).firstIndex(of: 0x3B) else { throw fail(L("'&' that starts no character reference (write &amp;)")) }
                let ref = String(decoding: b[(i + 1)..<semi], as: UTF8.self)
                let scalar: Unicode.Scalar?
                switch ref {
                case "lt": scalar = "<"
                case "gt": scalar = ">"
                case "amp": scalar = "&"
                case "quot": scalar = "\""
                case "apos": scalar = "'"
                default:
                    if ref.hasPrefix("#x") || ref.hasPrefix("#X") {
                        scalar = UInt32(ref.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                    } else if ref.hasPrefix("#") {
                        scalar = UInt32(ref.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                    } else {
                        throw fail(L("the entity &\(ref.prefix(20)); is not one XML defines (vpnctl expands no others)"))
                    }
                }
                guard let s = scalar, s.value != 0 else { throw fail(L("&\(ref.prefix(20)); is not a valid character")) }
                out += Array(String(Character(s)).utf8)
                i = semi + 1
                continue
            }
            out.append(c)
            i += 1
        }
        throw fail(L("<\(name)> is never closed"))
    }
}

// MARK: - Binary

/// `bplist00`: objects, then a table of their offsets, then a 32-byte
/// trailer (offset and reference sizes, object count, top object, table
/// offset). Every offset, count and reference is checked against the file;
/// a reference back to an object being decoded (a cycle) is refused.
struct BinaryPropertyListReader {
    let b: [UInt8]
    var offsetSize = 0, refSize = 0
    var objectCount = 0, top = 0, tableOffset = 0
    var decoding: Set<Int> = []
    var values = 0

    init(_ bytes: [UInt8]) { b = bytes }

    func fail(_ what: String) -> PropertyList.Problem { PropertyList.Problem(L("binary property list: \(what)")) }

    mutating func read() throws -> PropertyList {
        guard b.count >= 8 + 1 + 32 else { throw fail(L("too short (\(b.count) bytes)")) }
        guard b.starts(with: Array("bplist00".utf8)) else {
            throw fail(L("version '\(String(decoding: b[6..<8], as: UTF8.self))' is not 00"))
        }
        let t = b.count - 32
        offsetSize = Int(b[t + 6]); refSize = Int(b[t + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(refSize) else {
            throw fail(L("offset size \(offsetSize) or reference size \(refSize) is not 1–8"))
        }
        let count = uint(t + 8, 8), topObject = uint(t + 16, 8), table = uint(t + 24, 8)
        guard count >= 1, count <= UInt64(b.count) else { throw fail(L("object count \(count) does not fit the file")) }
        guard topObject < count else { throw fail(L("top object \(topObject) is not one of the \(count) objects")) }
        guard table >= 9, table < UInt64(t) else { throw fail(L("offset table at \(table) is outside the file")) }
        objectCount = Int(count); top = Int(topObject); tableOffset = Int(table)
        let (tableBytes, o1) = objectCount.multipliedReportingOverflow(by: offsetSize)
        guard !o1, tableOffset + tableBytes <= t else { throw fail(L("the offset table (\(objectCount) × \(offsetSize) bytes) runs past the trailer")) }
        return try object(top, depth: 1)
    }

    func uint(_ at: Int, _ size: Int) -> UInt64 {
        var v: UInt64 = 0
        for k in 0..<size { v = v << 8 | UInt64(b[at + k]) }
        return v
    }

    func offset(of index: Int) throws -> Int {
        let o = uint(tableOffset + index * offsetSize, offsetSize)
        guard o >= 8, o < UInt64(tableOffset) else { throw fail(L("object \(index) has offset \(o), outside the object area")) }
        return Int(o)
    }

    /// The count in a marker's low nibble, or the integer object after it when the nibble is 0xF.
    /// Returns the count and where the object's payload starts.
    func count(_ marker: UInt8, at o: Int) throws -> (Int, Int) {
        let low = Int(marker & 0x0F)
        if low != 0x0F { return (low, o + 1) }
        guard o + 1 < tableOffset else { throw fail(L("object at \(o) is cut off")) }
        let m = b[o + 1]
        guard m >> 4 == 1 else { throw fail(L("object at \(o): its length is not an integer")) }
        let size = 1 << Int(m & 0x0F)
        guard size <= 8, o + 2 + size <= tableOffset else { throw fail(L("object at \(o): its length is cut off or too wide")) }
        let v = uint(o + 2, size)
        guard v <= UInt64(b.count) else { throw fail(L("object at \(o): length \(v) is larger than the file")) }
        return (Int(v), o + 2 + size)
    }

    /// Checks that `count` items of `width` bytes at `start` lie within the object area.
    func checkSpan(_ start: Int, _ count: Int, _ width: Int, _ what: String) throws {
        let (bytes, o1) = count.multipliedReportingOverflow(by: width)
        let (end, o2) = start.addingReportingOverflow(bytes)
        guard !o1, !o2, end <= tableOffset else { throw fail(L("\(what) of \(count) at \(start) runs past the object area")) }
    }

    /// The `count` object references at `start` (a span already checked),
    /// each one of the file's objects. A reference is 1 to 8 bytes wide, so it
    /// is range-checked as read, before it becomes an index.
    func refs(_ start: Int, _ count: Int, of index: Int) throws -> [Int] {
        try (0..<count).map { k in
            let at = start + k * refSize
            let ref = uint(at, refSize)
            guard ref < UInt64(objectCount) else {
                throw fail(L("object \(index): reference to object \(ref) at offset \(at), but the objects are numbered 0 to \(objectCount - 1)"))
            }
            return Int(ref)
        }
    }

    /// An integer, a real or a date (markers 0x1, 0x2, 0x3).
    mutating func number(_ marker: UInt8, at o: Int, index: Int) throws -> PropertyList {
        switch marker >> 4 {
        case 0x1:
            let size = 1 << Int(marker & 0x0F)
            guard size <= 16 else { throw fail(L("object \(index): integer of \(size) bytes")) }
            try checkSpan(o + 1, size, 1, "integer")
            if size == 16 {
                guard uint(o + 1, 8) == 0, uint(o + 9, 8) <= UInt64(Int64.max) else { throw fail(L("object \(index): integer out of 64-bit range")) }
                return .integer(Int64(uint(o + 9, 8)))
            }
            // 1, 2 and 4 bytes are unsigned; 8 bytes is two's complement.
            return .integer(size == 8 ? Int64(bitPattern: uint(o + 1, 8)) : Int64(uint(o + 1, size)))
        case 0x2:
            let size = 1 << Int(marker & 0x0F)
            guard size == 4 || size == 8 else { throw fail(L("object \(index): real of \(size) bytes")) }
            try checkSpan(o + 1, size, 1, "real")
            let bits = uint(o + 1, size)
            return .real(size == 4 ? Double(Float(bitPattern: UInt32(bits))) : Double(bitPattern: bits))
        case 0x3:
            guard marker == 0x33 else { throw fail(L("object \(index): date marker 0x\(String(marker, radix: 16))")) }
            try checkSpan(o + 1, 8, 1, "date")
            let t = Double(bitPattern: uint(o + 1, 8))
            guard PlistDate.range.contains(t) else { throw fail(L("object \(index): a date outside the years 0001–9999")) }
            return .date(t)
        default:
            throw fail(L("object \(index): unknown marker 0x\(String(marker, radix: 16))"))
        }
    }

    mutating func object(_ index: Int, depth: Int) throws -> PropertyList {
        guard index < objectCount else { throw fail(L("reference to object \(index), but there are \(objectCount)")) }
        guard depth <= PropertyList.maximumDepth else { throw fail(L("nested more than \(PropertyList.maximumDepth) deep")) }
        guard !decoding.contains(index) else { throw fail(L("object \(index) contains itself (a reference cycle)")) }
        values += 1
        guard values <= PropertyList.maximumValues else { throw fail(L("more than \(PropertyList.maximumValues) values (shared objects counted each time)")) }
        let o = try offset(of: index)
        let marker = b[o]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw fail(L("object \(index): marker 0x\(String(marker, radix: 16)) (null or fill) is not a value"))
            }
        case 0x1, 0x2, 0x3:
            return try number(marker, at: o, index: index)
        case 0x4:
            let (n, start) = try count(marker, at: o)
            try checkSpan(start, n, 1, "data")
            return .data(Array(b[start..<(start + n)]))
        case 0x5:
            let (n, start) = try count(marker, at: o)
            try checkSpan(start, n, 1, "ASCII string")
            let bytes = b[start..<(start + n)]
            guard bytes.allSatisfy({ $0 < 0x80 }) else { throw fail(L("object \(index): an ASCII string with a byte above 0x7F")) }
            return .string(String(decoding: bytes, as: UTF8.self))
        case 0x6:
            let (n, start) = try count(marker, at: o)
            try checkSpan(start, n, 2, "UTF-16 string")
            let units = (0..<n).map { UInt16(b[start + 2 * $0]) << 8 | UInt16(b[start + 2 * $0 + 1]) }
            var s = ""
            for scalar in Unicode.UTF16.self.decodeAll(units) {
                guard let scalar else { throw fail(L("object \(index): a UTF-16 string with an unpaired surrogate")) }
                s.unicodeScalars.append(scalar)
            }
            return .string(s)
        case 0x8:
            throw fail(L("object \(index) is a UID (an NSKeyedArchiver archive, not a configuration profile)"))
        case 0xA:
            let (n, start) = try count(marker, at: o)
            try checkSpan(start, n, refSize, "array")
            decoding.insert(index)
            defer { decoding.remove(index) }
            return .array(try refs(start, n, of: index).map { try object($0, depth: depth + 1) })
        case 0xD:
            let (n, start) = try count(marker, at: o)
            try checkSpan(start, n, 2 * refSize, "dictionary")
            decoding.insert(index)
            defer { decoding.remove(index) }
            let keys = try refs(start, n, of: index), vals = try refs(start + n * refSize, n, of: index)
            var d: [String: PropertyList] = [:]
            for (k, v) in zip(keys, vals) {
                guard case .string(let key) = try object(k, depth: depth + 1) else {
                    throw fail(L("object \(index): a dictionary key that is not a string"))
                }
                if d[key] != nil { throw fail(L("object \(index): the key '\(key.prefix(60))' appears twice")) }
                d[key] = try object(v, depth: depth + 1)
            }
            return .dict(d)
        default:
            throw fail(L("object \(index): unknown marker 0x\(String(marker, radix: 16))"))
        }
    }
}

extension Unicode.UTF16 {
    /// Each scalar of `units`, nil for an unpaired surrogate.
    static func decodeAll(_ units: [UInt16]) -> [Unicode.Scalar?] {
        var out: [Unicode.Scalar?] = []
        var it = units.makeIterator()
        var d = Unicode.UTF16()
        loop: while true {
            switch d.decode(&it) {
            case .scalarValue(let s): out.append(s)
            case .error: out.append(nil)
            case .emptyInput: break loop
            }
        }
        return out
    }
}

// MARK: - Writing

extension PropertyList {
    /// The value as an XML property list, as Apple writes one.
    public func xmlDocument() -> String {
        var out = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """
        write(into: &out, indent: "")
        return out + "</plist>\n"
    }

    static func escaped(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\r": out += "&#13;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    func write(into out: inout String, indent: String) {
        switch self {
        case .string(let s): out += "\(indent)<string>\(Self.escaped(s))</string>\n"
        case .integer(let v): out += "\(indent)<integer>\(v)</integer>\n"
        case .real(let v): out += "\(indent)<real>\(v.isNaN ? "nan" : v.isInfinite ? (v < 0 ? "-inf" : "+inf") : "\(v)")</real>\n"
        case .bool(let v): out += "\(indent)<\(v)/>\n"
        case .date(let t): out += "\(indent)<date>\(PlistDate.format(t))</date>\n"
        case .data(let d): out += "\(indent)<data>\(Data(d).base64EncodedString())</data>\n"
        case .array(let a):
            if a.isEmpty { out += "\(indent)<array/>\n"; return }
            out += "\(indent)<array>\n"
            for v in a { v.write(into: &out, indent: indent + "\t") }
            out += "\(indent)</array>\n"
        case .dict(let d):
            if d.isEmpty { out += "\(indent)<dict/>\n"; return }
            out += "\(indent)<dict>\n"
            for k in d.keys.sorted() {
                out += "\(indent)\t<key>\(Self.escaped(k))</key>\n"
                d[k]!.write(into: &out, indent: indent + "\t")
            }
            out += "\(indent)</dict>\n"
        }
    }

    /// The value as a binary property list (bplist00), every object written
    /// once per occurrence, references 4 bytes wide.
    public func binaryDocument() -> [UInt8] {
        var objects: [[UInt8]] = []
        func be(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        func header(_ kind: UInt8, _ n: Int) -> [UInt8] {
            n < 15 ? [kind << 4 | UInt8(n)] : [kind << 4 | 0x0F, 0x13] + be(UInt64(n), 8)
        }
        @discardableResult
        func add(_ v: PropertyList) -> Int {
            let index = objects.count
            objects.append([])
            var o: [UInt8]
            switch v {
            case .bool(let x): o = [x ? 0x09 : 0x08]
            case .integer(let x): o = [0x13] + be(UInt64(bitPattern: x), 8)
            case .real(let x): o = [0x23] + be(x.bitPattern, 8)
            case .date(let x): o = [0x33] + be(x.bitPattern, 8)
            case .data(let d): o = header(0x4, d.count) + d
            case .string(let s):
                if s.utf8.allSatisfy({ $0 < 0x80 }) {
                    o = header(0x5, s.utf8.count) + Array(s.utf8)
                } else {
                    let units = Array(s.utf16)
                    o = header(0x6, units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
                }
            case .array(let a):
                let refs = a.map { add($0) }
                o = header(0xA, a.count) + refs.flatMap { be(UInt64($0), 4) }
            case .dict(let d):
                let keys = d.keys.sorted()
                let k = keys.map { add(.string($0)) }
                let vals = keys.map { add(d[$0]!) }
                o = header(0xD, d.count) + (k + vals).flatMap { be(UInt64($0), 4) }
            }
            objects[index] = o
            return index
        }
        add(self)
        var out = Array("bplist00".utf8)
        var offsets: [Int] = []
        for o in objects { offsets.append(out.count); out += o }
        let table = out.count
        for off in offsets { out += be(UInt64(off), 8) }
        out += [0, 0, 0, 0, 0, 0, 8, 4] + be(UInt64(objects.count), 8) + be(0, 8) + be(UInt64(table), 8)
        return out
    }
}
