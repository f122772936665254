/// A strict JSON parser that says where the first error is, as line and
/// column, so a hand-edited preferences file can be fixed. It bounds nesting
/// depth, so hostile input cannot exhaust the stack, and refuses duplicate
/// keys, which would otherwise hide an edit. vpnctl decodes its own files
/// from its `JSONValue` by hand: Codable's generic machinery costs more than
/// the rest of a `status` call in a static binary.
public enum JSONSyntax {
    public struct Problem: Equatable, Sendable {
        public let line: Int
        public let column: Int
        public let message: String
    }

    public static let maximumDepth = 256

    public static func firstError(in bytes: [UInt8]) -> Problem? {
        do {
            _ = try parse(bytes)
            return nil
        } catch let problem as Problem {
            return problem
        } catch {
            return Problem(line: 1, column: 1, message: "\(error)")
        }
    }

    /// Parses a whole document into a `JSONValue`, or throws the first `Problem`.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in
            var p = Parser(bytes: buffer)
            p.skipWhitespace()
            let v = try p.value(depth: 0)
            p.skipWhitespace()
            if p.i < buffer.count { throw p.fail("unexpected '\(p.printable(buffer[p.i]))' after the end of the document") }
            return v
        }
    }

    /// The line of the first member named `key` (its quoted text followed by
    /// a colon), for a message about a key the decoder did not know. A key
    /// written with escapes is not found; the message then has no line.
    public static func line(ofKey key: String, in bytes: [UInt8]) -> Int? {
        let needle = Array("\"\(key)\"".utf8)
        guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
        var line = 1, i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == 0x0A { line += 1 }
            if bytes[i] == 0x22, bytes[i..<(i + needle.count)].elementsEqual(needle) {
                var j = i + needle.count
                while j < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[j]) { j += 1 }
                if j < bytes.count, bytes[j] == 0x3A { return line }
            }
            i += 1
        }
        return nil
    }

    /// Reads straight from the caller's buffer: a preferences file with a
    /// thousand profiles is most of a megabyte, and every byte passes here.
    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        /// Members of the objects being read, innermost last.
        var pending: [JSONObject.Member] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        }

        func fail(_ message: String) -> Problem {
            var line = 1, column = 1
            var j = 0
            while j < i && j < bytes.count {
                if bytes[j] == 0x0A { line += 1; column = 1 }
                else if bytes[j] & 0xC0 != 0x80 { column += 1 }
                j += 1
            }
            return Problem(line: line, column: column, message: message)
        }

        func printable(_ b: UInt8) -> String {
            (0x20..<0x7F).contains(b) ? String(UnicodeScalar(b)) : "\\x" + String(b, radix: 16)
        }

        mutating func skipWhitespace() {
            while i < bytes.count {
                let b = bytes[i]
                guard b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D else { return }
                i += 1
            }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < JSONSyntax.maximumDepth else { throw fail("nesting deeper than \(JSONSyntax.maximumDepth) levels") }
            guard i < bytes.count else { throw fail("unexpected end of file; a value was expected") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("unexpected '\(printable(bytes[i]))'; a value was expected")
            }
        }

        mutating func literal(_ word: String) throws {
            let start = i
            for c in word.utf8 {
                guard i < bytes.count, bytes[i] == c else {
                    i = start
                    throw fail("invalid literal; expected '\(word)'")
                }
                i += 1
            }
        }

        mutating func number() throws -> String {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            func digits() -> Int {
                let s = i
                while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
                return i - s
            }
            guard i < bytes.count else { throw fail("unexpected end of file in a number") }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else if digits() == 0 { throw fail("invalid number") }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                if digits() == 0 { throw fail("invalid number: digits expected after '.'") }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                if digits() == 0 { throw fail("invalid number: digits expected in the exponent") }
            }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        }

        /// Most strings have no escapes: they are cut straight out of the
        /// buffer, with one UTF-8 check for the whole run. Anything else, and
        /// every error, goes through `escapedString`.
        mutating func string() throws -> String {
            let start = i + 1
            var j = start, ascii = true
            while j < bytes.count {
                let b = bytes[j]
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
                if b >= 0x80 { ascii = false }
                j += 1
            }
            if j < bytes.count, bytes[j] == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<j])
                if ascii {
                    i = j + 1
                    return String(decoding: run, as: UTF8.self)
                }
                if let s = String(validating: run, as: UTF8.self) {
                    i = j + 1
                    return s
                }
            }
            return try escapedString()
        }

        mutating func escapedString() throws -> String {
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { i += 1; return String(decoding: out, as: UTF8.self) }
                if b < 0x20 { throw fail("control character in a string (escape it, e.g. \\n)") }
                if b == UInt8(ascii: "\\") {
                    i += 1
                    guard i < bytes.count else { break }
                    switch bytes[i] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                        out.append(bytes[i]); i += 1
                    case UInt8(ascii: "b"): out.append(0x08); i += 1
                    case UInt8(ascii: "f"): out.append(0x0C); i += 1
                    case UInt8(ascii: "n"): out.append(0x0A); i += 1
                    case UInt8(ascii: "r"): out.append(0x0D); i += 1
                    case UInt8(ascii: "t"): out.append(0x09); i += 1
                    case UInt8(ascii: "u"):
                        i += 1
                        var unit: UInt32 = 0
                        for _ in 0..<4 {
                            guard i < bytes.count, isHex(bytes[i]) else { throw fail("invalid \\u escape") }
                            unit = unit << 4 | UInt32(hexValue(bytes[i]))
                            i += 1
                        }
                        // A high surrogate followed by \uDC00-\uDFFF is one scalar.
                        if (0xD800..<0xDC00).contains(unit), i + 5 < bytes.count, bytes[i] == UInt8(ascii: "\\"),
                           bytes[i + 1] == UInt8(ascii: "u"), bytes[(i + 2)..<(i + 6)].allSatisfy(isHex) {
                            var low: UInt32 = 0
                            for k in 0..<4 { low = low << 4 | UInt32(hexValue(bytes[i + 2 + k])) }
                            if (0xDC00..<0xE000).contains(low) {
                                unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                                i += 6
                            }
                        }
                        let scalar = Unicode.Scalar(unit) ?? "\u{FFFD}"
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default:
                        throw fail("invalid escape '\\\(printable(bytes[i]))'")
                    }
                    continue
                }
                if b >= 0x80 {
                    let n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0
                    guard n > 0, i + n <= bytes.count,
                          String(validating: bytes[i..<i + n], as: UTF8.self) != nil
                    else { throw fail("invalid UTF-8 in a string") }
                    out.append(contentsOf: bytes[i..<i + n])
                    i += n
                    continue
                }
                out.append(b)
                i += 1
            }
            throw fail("unterminated string")
        }

        func hexValue(_ b: UInt8) -> UInt8 {
            b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10
        }

        func isHex(_ b: UInt8) -> Bool {
            (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
        }

        mutating func object(depth: Int) throws -> JSONValue {
            i += 1
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(JSONObject()) }
            // This object's members sit on `pending` above `base`, over those
            // of the objects it is nested in, until its '}' copies them out.
            let base = pending.count
            defer { pending.removeSubrange(base...) }
            var index: [String: Int]?
            while true {
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object") }
                guard bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key, found '\(printable(bytes[i]))'") }
                let keyStart = i
                let key = try string()
                if has(key, from: base, index: &index) {
                    i = keyStart
                    throw fail("duplicate key '\(key)'")
                }
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                i += 1
                skipWhitespace()
                let value = try value(depth: depth + 1)
                index?[key] = pending.count - base
                pending.append((key: key, value: value))
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object; expected ',' or '}'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return .object(JSONObject(Array(pending[base...]), index: index))
                }
                throw fail("expected ',' or '}', found '\(printable(bytes[i]))'")
            }
        }

        /// Whether the object whose members start at `pending[base]` has
        /// `key`: a scan while it is small, then through `index`, built here
        /// once it passes `JSONObject.indexThreshold` members.
        func has(_ key: String, from base: Int, index: inout [String: Int]?) -> Bool {
            if let index { return index[key] != nil }
            let members = pending[base...]
            if members.count < JSONObject.indexThreshold { return members.contains { $0.key == key } }
            var built: [String: Int] = [:]
            for (i, m) in members.enumerated() { built[m.key] = i }
            index = built
            return built[key] != nil
        }

        mutating func array(depth: Int) throws -> JSONValue {
            i += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an array; expected ',' or ']'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']', found '\(printable(bytes[i]))'")
            }
        }
    }
}

extension JSONSyntax.Problem: Error, CustomStringConvertible {
    public var description: String { "line \(line), column \(column): \(message)" }
}
