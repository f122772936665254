import Glibc

/// A strict JSON parser that says where the first error is, as line and
/// column, so a hand-edited preferences file can be fixed. It bounds nesting
/// depth, so hostile input cannot exhaust the stack, and refuses duplicate
/// keys (compared byte for byte, as written), which would otherwise hide an
/// edit. It writes a `JSONDocument`'s tape; vpnctl decodes its own files
/// from that by hand: Codable's generic machinery costs more than the rest
/// of a `status` call in a static binary.
public enum JSONSyntax {
    public struct Problem: Equatable, Sendable {
        public let line: Int
        public let column: Int
        public let message: String
    }

    public static let maximumDepth = 256

    public static func firstError(in bytes: [UInt8]) -> Problem? {
        do {
            _ = try JSONDocument(parsing: bytes)
            return nil
        } catch let problem as Problem {
            return problem
        } catch {
            return Problem(line: 1, column: 1, message: "\(error)")
        }
    }

    /// Parses a whole document into a `JSONValue`, or throws the first `Problem`.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONDocument(parsing: bytes).value(at: 0)
    }

    /// The tape of a whole document, or the first `Problem`.
    static func tape(of bytes: [UInt8]) throws -> [JSONDocument.Token] {
        guard bytes.count < Int(UInt32.max) else {
            throw Problem(line: 1, column: 1, message: "the document is larger than 4 GiB")
        }
        return try bytes.withUnsafeBufferPointer { buffer in
            var p = Parser(bytes: buffer)
            p.tokens.reserveCapacity(bytes.count / 8)
            p.skipWhitespace()
            try p.value(depth: 0)
            p.skipWhitespace()
            if p.i < buffer.count { throw p.fail("unexpected '\(p.printable(buffer[p.i]))' after the end of the document") }
            return p.tokens
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
    /// It makes no strings: each value becomes one token on the tape, and a
    /// string is cut out of the bytes only when a reader asks for it.
    struct Parser {
        typealias Token = JSONDocument.Token
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        var tokens: [Token] = []
        /// The key tokens of the objects being read, innermost last.
        var keys: [Int] = []

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

        /// Indentation comes in runs of spaces: a run is skipped up to eight
        /// at a time (the lowest byte of the word that is not a space ends it).
        mutating func skipWhitespace() {
            while i < bytes.count {
                let b = bytes[i]
                if b == 0x20, i + 8 <= bytes.count {
                    let word = UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self))
                    let notSpaces = word ^ 0x2020_2020_2020_2020
                    i += notSpaces == 0 ? 8 : notSpaces.trailingZeroBitCount >> 3
                    continue
                }
                guard b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D else { return }
                i += 1
            }
        }

        mutating func scalar(_ kind: Token.Kind, from start: Int) {
            tokens.append(Token(kind: kind, start: UInt32(start), end: UInt32(i)))
        }

        mutating func value(depth: Int) throws {
            guard depth < JSONSyntax.maximumDepth else { throw fail("nesting deeper than \(JSONSyntax.maximumDepth) levels") }
            guard i < bytes.count else { throw fail("unexpected end of file; a value was expected") }
            let start = i
            switch bytes[i] {
            case UInt8(ascii: "{"): try object(depth: depth)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true"); scalar(.true, from: start)
            case UInt8(ascii: "f"): try literal("false"); scalar(.false, from: start)
            case UInt8(ascii: "n"): try literal("null"); scalar(.null, from: start)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(); scalar(.number, from: start)
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

        mutating func number() throws {
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
        }

        /// Most strings have no escapes: the token is the run between the
        /// quotes, checked as UTF-8 once. Anything else, and every error,
        /// goes through `escapedString`, whose token marks that the text
        /// must be decoded again when it is read.
        mutating func string() throws {
            let start = i + 1
            var j = start, ascii = true
            // Eight bytes at a time while none is a quote, a backslash or a
            // control character (see `plainRun`).
            var high: UInt64 = 0
            while j + 8 <= bytes.count {
                let w = UnsafeRawPointer(bytes.baseAddress! + j).loadUnaligned(as: UInt64.self)
                if Parser.stops(w) { break }
                high |= w
                j += 8
            }
            if high & 0x8080_8080_8080_8080 != 0 { ascii = false }
            while j < bytes.count {
                let b = bytes[j]
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
                if b >= 0x80 { ascii = false }
                j += 1
            }
            if j < bytes.count, bytes[j] == UInt8(ascii: "\""),
               ascii || String(validating: UnsafeBufferPointer(rebasing: bytes[start..<j]), as: UTF8.self) != nil {
                i = j + 1
                tokens.append(Token(kind: .string, start: UInt32(start), end: UInt32(j)))
                return
            }
            _ = try escapedString()
            tokens.append(Token(kind: .escapedString, start: UInt32(start), end: UInt32(i - 1)))
        }

        /// Whether one of the eight bytes in `w` ends a plain run of a
        /// string: a quote, a backslash or a byte below 0x20. The usual
        /// test for a zero byte, `(x - 0x01…) & ~x & 0x80…`, applied to `w`
        /// xor '"', `w` xor '\\', and (with 0x20 for 0x01) `w` itself; a byte
        /// of 0x80 or more never sets its own bit there.
        static func stops(_ w: UInt64) -> Bool {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            let q = w ^ (ones &* 0x22), b = w ^ (ones &* 0x5C)
            return ((q &- ones) & ~q | (b &- ones) & ~b | (w &- ones &* 0x20) & ~w) & highs != 0
        }

        /// The string's text with its escapes decoded; `i` at its opening quote.
        mutating func escapedString() throws -> [UInt8] {
            i += 1
            var out: [UInt8] = []
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { i += 1; return out }
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
                        UTF8.encode(scalar) { out.append($0) }
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

        /// An object's token, then each member's key token and its value's
        /// tokens; the object's `end` is the index past its last token.
        mutating func object(depth: Int) throws {
            let me = tokens.count
            tokens.append(Token(container: .object))
            i += 1
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; close(me, count: 0); return }
            // This object's keys sit on `keys` above `base`, over those of
            // the objects it is nested in.
            let base = keys.count
            defer { keys.removeSubrange(base...) }
            var index: Set<[UInt8]>?
            while true {
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object") }
                guard bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key, found '\(printable(bytes[i]))'") }
                let keyStart = i
                try string()
                let key = tokens.count - 1
                if has(key, from: base, index: &index) {
                    i = keyStart
                    throw fail("duplicate key '\(String(decoding: text(of: key), as: UTF8.self))'")
                }
                keys.append(key)
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                i += 1
                skipWhitespace()
                try value(depth: depth + 1)
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object; expected ',' or '}'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    close(me, count: keys.count - base)
                    return
                }
                throw fail("expected ',' or '}', found '\(printable(bytes[i]))'")
            }
        }

        mutating func close(_ container: Int, count: Int) {
            tokens[container].end = UInt32(tokens.count)
            tokens[container].start = UInt32(count)
        }

        /// A string token's text, escapes decoded.
        func text(of token: Int) -> [UInt8] { tokens[token].text(in: bytes) }

        /// Whether two string tokens have the same text, byte for byte.
        func same(_ a: Int, _ b: Int) -> Bool {
            let x = tokens[a], y = tokens[b]
            guard x.kind == .string, y.kind == .string else { return text(of: a) == text(of: b) }
            return x.isPlain(UnsafeBufferPointer(rebasing: bytes[Int(y.start)..<Int(y.end)]), in: bytes)
        }

        /// Whether the object whose keys start at `keys[base]` has the text of
        /// `key`: a scan while it is small, then through `index`, built here
        /// once it passes `JSONObject.indexThreshold` members and kept up to
        /// date.
        func has(_ key: Int, from base: Int, index: inout Set<[UInt8]>?) -> Bool {
            if index == nil {
                if keys.count - base < JSONObject.indexThreshold {
                    for j in base..<keys.count where same(keys[j], key) { return true }
                    return false
                }
                index = Set(keys[base...].map { text(of: $0) })
            }
            return !index!.insert(text(of: key)).inserted
        }

        mutating func array(depth: Int) throws {
            let me = tokens.count
            tokens.append(Token(container: .array))
            i += 1
            var count = 0
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; close(me, count: 0); return }
            while true {
                skipWhitespace()
                try value(depth: depth + 1)
                count += 1
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an array; expected ',' or ']'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; close(me, count: count); return }
                throw fail("expected ',' or ']', found '\(printable(bytes[i]))'")
            }
        }
    }
}

extension JSONSyntax.Problem: Error, CustomStringConvertible {
    public var description: String { "line \(line), column \(column): \(message)" }
}
