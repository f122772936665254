import FoundationEssentials

/// A decoding failure with the path to the offending value, e.g.
/// "at profiles[2].protocol.mtu: expected an integer".
public struct JSONDecodeProblem: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let message: String
    public var description: String { "at \(path.isEmpty ? "top level" : path.abbreviated(200).escapingControls(keepLineBreaks: false)): \(message)" }
}

/// Reads typed fields out of a `JSONDocument`, one value at a time; the
/// path for a message is worked out only when a message needs it.
public struct JSONReader {
    let document: JSONDocument
    /// The value's token in `document`.
    let token: Int
    /// What the document's top is called in messages (usually nothing).
    let root: String
    /// Set on a strict read: every object's members are checked against the
    /// keys the decoder asked for.
    let tracker: KeyTracker?
    /// This object's entry in `tracker`; -1 when the value is not an object.
    let slot: Int

    /// The value as a tree.
    public var value: JSONValue { document.value(at: token) }
    /// Where the value is, e.g. profiles[2].protocol.mtu.
    public var path: String { document.path(to: token, root: root) }

    public init(_ document: JSONDocument, path: String = "", tracker: KeyTracker? = nil) {
        self.init(document, at: 0, root: path, tracker: tracker)
    }

    /// Parses `bytes`, or throws their first `JSONSyntax.Problem`.
    public init(parsing bytes: [UInt8], path: String = "", tracker: KeyTracker? = nil) throws {
        self.init(try JSONDocument(parsing: bytes), path: path, tracker: tracker)
    }

    public init(_ value: JSONValue, path: String = "", tracker: KeyTracker? = nil) {
        self.init(JSONDocument(value), path: path, tracker: tracker)
    }

    init(_ document: JSONDocument, at token: Int, root: String, tracker: KeyTracker?) {
        self.document = document
        self.token = token
        self.root = root
        self.tracker = tracker
        if let tracker, document.kind(token) == .object {
            slot = tracker.register(document, token, root: root)
        } else {
            slot = -1
        }
    }

    func reader(at token: Int, tracker: KeyTracker?) -> JSONReader {
        JSONReader(document, at: token, root: root, tracker: tracker)
    }

    var kind: JSONDocument.Token.Kind { document.kind(token) }

    func problem(_ key: String?, _ message: String) -> JSONDecodeProblem {
        let path = self.path
        return JSONDecodeProblem(path: key.map { path.isEmpty ? $0 : "\(path).\($0)" } ?? path, message: message)
    }

    func requireObject() throws {
        guard kind == .object else { throw problem(nil, "expected an object") }
    }

    /// nil when the key is absent or null.
    public func optional(_ key: String) throws -> JSONReader? {
        try memberToken(key).map { reader(at: $0, tracker: tracker) }
    }

    /// The token of the member named `key`; nil when it is absent or null.
    func memberToken(_ key: String) throws -> Int? {
        try requireObject()
        let found = document.member(key, of: token)
        if let tracker { tracker.asked(key, found: found?.position, in: slot) }
        guard let found, document.kind(found.value) != .null else { return nil }
        return found.value
    }

    public func required(_ key: String) throws -> JSONReader {
        guard let r = try optional(key) else { throw problem(key, "missing") }
        return r
    }

    public func string() throws -> String {
        guard kind.isString else { throw problem(nil, "expected a string") }
        return document.text(token)
    }

    public func bool() throws -> Bool {
        switch kind {
        case .true: return true
        case .false: return false
        default: throw problem(nil, "expected true or false")
        }
    }

    public func int() throws -> Int {
        guard kind == .number else { throw problem(nil, "expected an integer") }
        let n = document.text(token)
        guard let i = Int(n) else { throw problem(nil, JSONReader.isInteger(n) ? "\(n.abbreviated(40)) is out of range" : "expected an integer") }
        return i
    }

    public func uint64() throws -> UInt64 {
        guard kind == .number else { throw problem(nil, "expected a non-negative integer") }
        let n = document.text(token)
        guard let i = UInt64(n) else {
            throw problem(nil, JSONReader.isInteger(n) && !n.hasPrefix("-") ? "\(n.abbreviated(40)) is out of range" : "expected a non-negative integer")
        }
        return i
    }

    static func isInteger(_ text: String) -> Bool {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    public func uuid() throws -> UUID {
        guard let u = UUID.parse(try string()) else { throw problem(nil, "expected a UUID string") }
        return u
    }

    public func array() throws -> [JSONReader] {
        guard kind == .array else { throw problem(nil, "expected an array") }
        var out: [JSONReader] = []
        out.reserveCapacity(count)
        document.forEachElement(of: token) { out.append(reader(at: $0, tracker: tracker)) }
        return out
    }

    /// Members or elements.
    var count: Int { Int(document.tokens[token].count) }

    /// An array of strings, read without a reader for each.
    public func stringArray() throws -> [String] {
        guard kind == .array else { throw problem(nil, "expected an array") }
        var out: [String] = []
        out.reserveCapacity(count)
        try document.forEachElement(of: token) { e in
            let k = document.kind(e)
            guard k.isString else { throw reader(at: e, tracker: nil).problem(nil, "expected a string") }
            out.append(document.text(e))
        }
        return out
    }

    /// An object of strings, read whole (every member is asked for).
    public func stringMap() throws -> [String: String] {
        try requireObject()
        var out: [String: String] = [:]
        for (n, m) in document.members(of: token).enumerated() {
            let key = document.text(m.key)
            if let tracker { tracker.asked(key, found: n, in: slot) }
            out[key] = try reader(at: m.value, tracker: nil).string()
        }
        return out
    }

    /// The object's keys, in document order.
    public func keys() throws -> [String] {
        try requireObject()
        return document.members(of: token).map { document.text($0.key) }
    }

    public func oneOf<E: RawRepresentable>(_ type: E.Type, _ all: [E]) throws -> E where E.RawValue == String {
        let s = try string()
        guard let e = E(rawValue: s) else {
            throw problem(nil, "\(s.quotedForMessage) is not one of \(all.map(\.rawValue).joined(separator: ", "))")
        }
        return e
    }

    // Conveniences for optional fields. A field of a scalar type is read
    // straight from its token; a reader is made only for a message.
    public func string(_ key: String) throws -> String? {
        guard let t = try memberToken(key) else { return nil }
        let k = document.kind(t)
        guard k.isString else { return try reader(at: t, tracker: nil).string() }
        return document.text(t)
    }

    public func bool(_ key: String) throws -> Bool? {
        guard let t = try memberToken(key) else { return nil }
        switch document.kind(t) {
        case .true: return true
        case .false: return false
        default: return try reader(at: t, tracker: nil).bool()
        }
    }

    public func int(_ key: String) throws -> Int? { try memberToken(key).map { try reader(at: $0, tracker: nil).int() } }
    public func strings(_ key: String) throws -> [String] {
        try memberToken(key).map { try reader(at: $0, tracker: nil).stringArray() } ?? []
    }
}
