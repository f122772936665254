/// A strict JSON syntax check that says where the first error is, as line and
/// column, so a hand-edited preferences file can be fixed. It also bounds
/// nesting depth, so hostile input cannot exhaust the stack.
public enum JSONSyntax {
    public struct Problem: Equatable, Sendable {
        public let line: Int
        public let column: Int
        public let message: String
    }

    public static let maximumDepth = 256

    public static func firstError(in bytes: [UInt8]) -> Problem? {
        var p = Parser(bytes: bytes)
        do {
            p.skipWhitespace()
            try p.value(depth: 0)
            p.skipWhitespace()
            if p.i < bytes.count { throw p.fail("unexpected '\(p.printable(bytes[p.i]))' after the end of the document") }
            return nil
        } catch let problem as Problem {
            return problem
        } catch {
            return Problem(line: 1, column: 1, message: "\(error)")
        }
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) {
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
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        mutating func value(depth: Int) throws {
            guard depth < JSONSyntax.maximumDepth else { throw fail("nesting deeper than \(JSONSyntax.maximumDepth) levels") }
            guard i < bytes.count else { throw fail("unexpected end of file; a value was expected") }
            switch bytes[i] {
            case UInt8(ascii: "{"): try object(depth: depth)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
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
            _ = start
        }

        mutating func string() throws {
            i += 1
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { i += 1; return }
                if b < 0x20 { throw fail("control character in a string (escape it, e.g. \\n)") }
                if b == UInt8(ascii: "\\") {
                    i += 1
                    guard i < bytes.count else { break }
                    switch bytes[i] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                         UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        i += 1
                    case UInt8(ascii: "u"):
                        i += 1
                        for _ in 0..<4 {
                            guard i < bytes.count, isHex(bytes[i]) else { throw fail("invalid \\u escape") }
                            i += 1
                        }
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
                    i += n
                    continue
                }
                i += 1
            }
            throw fail("unterminated string")
        }

        func isHex(_ b: UInt8) -> Bool {
            (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
        }

        mutating func object(depth: Int) throws {
            i += 1
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return }
            while true {
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object") }
                guard bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a quoted key, found '\(printable(bytes[i]))'") }
                try string()
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                i += 1
                skipWhitespace()
                try value(depth: depth + 1)
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an object; expected ',' or '}'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return }
                throw fail("expected ',' or '}', found '\(printable(bytes[i]))'")
            }
        }

        mutating func array(depth: Int) throws {
            i += 1
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return }
            while true {
                skipWhitespace()
                try value(depth: depth + 1)
                skipWhitespace()
                guard i < bytes.count else { throw fail("unexpected end of file in an array; expected ',' or ']'") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return }
                throw fail("expected ',' or ']', found '\(printable(bytes[i]))'")
            }
        }
    }
}

extension JSONSyntax.Problem: Error {}
