import Glibc

/// A parsed JSON document kept as its bytes and a flat tape of tokens, one
/// per value and per key, in document order. Reading a field scans the keys
/// of one object by their bytes; a string is made only for a value that is
/// read, and nothing is built for the rest. A store of a thousand profiles
/// used to become a tree of some hundred thousand values, most of the cost of
/// `vpnctl list`, and then had to be torn down again.
public final class JSONDocument {
    /// Twelve bytes: a megabyte of preferences makes some seventy
    /// thousand, and every page of them is a page fault.
    struct Token {
        enum Kind: UInt8 {
            case object, array, string, escapedString, number, `true`, `false`, null
            var isString: Bool { self == .string || self == .escapedString }
        }
        let kind: Kind
        /// Scalars: where the text starts (inside the quotes of a string).
        /// Containers: how many members or elements.
        var start: UInt32
        /// Scalars: where the text ends. Containers: the index of the first
        /// token after the container's own.
        var end: UInt32
        /// A container's members or elements.
        var count: UInt32 { start }

        init(kind: Kind, start: UInt32, end: UInt32) {
            self.kind = kind
            self.start = start
            self.end = end
        }

        /// A container, its size and extent filled in when it closes.
        init(container kind: Kind) {
            self.init(kind: kind, start: 0, end: 0)
        }

        var isContainer: Bool { kind == .object || kind == .array }

        /// The index of the token after this one's value (members included),
        /// this token being at `index`.
        func next(at index: Int) -> Int { isContainer ? Int(end) : index + 1 }

        /// Whether this is a string without escapes whose text is `key`,
        /// byte for byte; `bytes` is the document's.
        func isPlain(_ key: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            let n = Int(end &- start)
            guard kind == .string, n == key.count else { return false }
            return n == 0 || memcmp(bytes.baseAddress! + Int(start), key.baseAddress!, n) == 0
        }

        /// A string's text, escapes decoded; `bytes` is the document's.
        func text(in bytes: UnsafeBufferPointer<UInt8>) -> [UInt8] {
            if kind != .escapedString { return Array(bytes[Int(start)..<Int(end)]) }
            var p = JSONSyntax.Parser(bytes: bytes)
            p.i = Int(start) - 1
            return (try? p.escapedString()) ?? []
        }
    }

    let bytes: [UInt8]
    let tokens: [Token]

    /// Parses the whole document, or throws its first `JSONSyntax.Problem`.
    public convenience init(parsing bytes: [UInt8]) throws {
        self.init(bytes: bytes, tokens: try JSONSyntax.tape(of: bytes))
    }

    /// The value as a document of its own (for a reader of a value that
    /// was built, not parsed). Members keep their order. Text written from
    /// a JSONValue always parses, unless it nests deeper than the parser
    /// allows: such a value reads as null.
    public convenience init(_ value: JSONValue) {
        var out: [UInt8] = []
        value.write(to: &out, sortingKeys: false)
        if let tokens = try? JSONSyntax.tape(of: out) {
            self.init(bytes: out, tokens: tokens)
        } else {
            self.init(bytes: Array("null".utf8), tokens: [Token(kind: .null, start: 0, end: 4)])
        }
    }

    init(bytes: [UInt8], tokens: [Token]) {
        self.bytes = bytes
        self.tokens = tokens
    }

    func kind(_ token: Int) -> Token.Kind { tokens[token].kind }

    /// The index of the token after `token`'s value, its members included.
    func after(_ token: Int) -> Int { tokens[token].next(at: token) }

    /// A scalar's text as written: a string's (escapes decoded) or a number's.
    func text(_ token: Int) -> String {
        let t = tokens[token]
        return bytes.withUnsafeBufferPointer { buffer in
            t.kind == .escapedString ? String(decoding: t.text(in: buffer), as: UTF8.self)
                                     : String(decoding: UnsafeBufferPointer(rebasing: buffer[Int(t.start)..<Int(t.end)]), as: UTF8.self)
        }
    }

    /// The object's member named `key`, compared byte for byte: its
    /// position among the members and its value's token. Most keys differ
    /// from the one asked for in length, so few bytes are compared.
    func member(_ key: String, of object: Int) -> (position: Int, value: Int)? {
        if let found = key.utf8.withContiguousStorageIfAvailable({ member($0, of: object) }) { return found }
        return Array(key.utf8).withUnsafeBufferPointer { member($0, of: object) }
    }

    private func member(_ key: UnsafeBufferPointer<UInt8>, of object: Int) -> (position: Int, value: Int)? {
        tokens.withUnsafeBufferPointer { tokens in
            bytes.withUnsafeBufferPointer { bytes in
                var token = object + 1
                for position in 0..<Int(tokens[object].count) {
                    let t = tokens[token]
                    if t.kind == .string ? t.isPlain(key, in: bytes) : t.text(in: bytes).elementsEqual(key) {
                        return (position, token + 1)
                    }
                    token = tokens[token + 1].next(at: token + 1)
                }
                return nil
            }
        }
    }

    /// An object's members as (key token, value token), in document order.
    func members(of object: Int) -> [(key: Int, value: Int)] {
        var out: [(key: Int, value: Int)] = []
        out.reserveCapacity(Int(tokens[object].count))
        var token = object + 1
        for _ in 0..<Int(tokens[object].count) {
            out.append((token, token + 1))
            token = after(token + 1)
        }
        return out
    }

    /// An array's element tokens.
    func elements(of array: Int) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(Int(tokens[array].count))
        forEachElement(of: array) { out.append($0) }
        return out
    }

    func forEachElement(of array: Int, _ body: (Int) throws -> Void) rethrows {
        var token = array + 1
        for _ in 0..<Int(tokens[array].count) {
            try body(token)
            token = after(token)
        }
    }

    /// The value at `token` as a tree.
    public func value(at token: Int) -> JSONValue {
        switch tokens[token].kind {
        case .object: return .object(JSONObject(members(of: token).map { (key: text($0.key), value: value(at: $0.value)) }))
        case .array: return .array(elements(of: token).map { value(at: $0) })
        case .string, .escapedString: return .string(text(token))
        case .number: return .number(text(token))
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return .null
        }
    }

    /// Where `target` sits, e.g. profiles[2].protocol.mtu after `root`: a
    /// walk from the top, made only for a message.
    func path(to target: Int, root: String) -> String {
        var path = root, token = 0
        walk: while token != target {
            switch tokens[token].kind {
            case .object:
                for m in members(of: token) where m.value <= target && target < after(m.value) {
                    let key = text(m.key)
                    path = path.isEmpty ? key : path + "." + key
                    token = m.value
                    continue walk
                }
            case .array:
                for (n, e) in elements(of: token).enumerated() where e <= target && target < after(e) {
                    path += "[\(n)]"
                    token = e
                    continue walk
                }
            default: break
            }
            break
        }
        return path
    }
}
