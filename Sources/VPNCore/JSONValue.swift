import FoundationEssentials

/// A parsed JSON document.
public enum JSONValue: Equatable, Sendable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    /// The number's text, exactly as written.
    case number(String)
    case bool(Bool)
    case null
}

/// A JSON object's members in document order, with distinct keys. A lookup
/// scans a small object (a profile's objects have about ten members, and
/// hashing each key cost more than the scan); above `indexThreshold` members
/// a dictionary of positions is built once, so an object with thousands of
/// keys stays linear to parse and cheap to read. Equality ignores order, as
/// a dictionary's does.
public struct JSONObject: Equatable, Sendable, ExpressibleByDictionaryLiteral {
    public typealias Member = (key: String, value: JSONValue)

    public let members: [Member]
    /// Each key's position in `members`; nil up to `indexThreshold` members.
    let index: [String: Int]?

    static let indexThreshold = 16

    public init() {
        members = []
        index = nil
    }

    /// The keys must be distinct, as in a dictionary literal.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    /// Members in no particular order (a dictionary has none).
    public init(_ dictionary: [String: JSONValue]) {
        self.init(dictionary.map { (key: $0.key, value: $0.value) })
    }

    /// The keys must be distinct; the parser checks, as it reads, that they are.
    init(_ members: [Member], index: [String: Int]? = nil) {
        self.members = members
        if index == nil, members.count > JSONObject.indexThreshold {
            var built: [String: Int] = [:]
            built.reserveCapacity(members.count)
            for (i, m) in members.enumerated() { built[m.key] = i }
            self.index = built
        } else {
            self.index = index
        }
    }

    public var count: Int { members.count }

    public subscript(key: String) -> JSONValue? {
        position(of: key).map { members[$0].value }
    }

    /// Where the member named `key` is in `members`.
    public func position(of key: String) -> Int? {
        if let index { return index[key] }
        for (i, m) in members.enumerated() where m.key == key { return i }
        return nil
    }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count && a.members.allSatisfy { b[$0.key] == $0.value }
    }
}

/// A decoding failure with the path to the offending value, e.g.
/// "at profiles[2].protocol.mtu: expected an integer".
public struct JSONDecodeProblem: Error, CustomStringConvertible, Sendable {
    public let path: String
    public let message: String
    public var description: String { "at \(path.isEmpty ? "top level" : path.abbreviated(200).escapingControls(keepLineBreaks: false)): \(message)" }
}

/// Reads typed fields out of a `JSONValue`, tracking the path for messages.
public struct JSONReader {
    public let value: JSONValue
    let location: Location
    /// Set on a strict read: every object's members are checked against the
    /// keys the decoder asked for.
    let tracker: KeyTracker?
    /// This object's entry in `tracker`; -1 when the value is not an object.
    let slot: Int
    /// Spelled out only when a message needs it: a store of a thousand
    /// profiles reads tens of thousands of fields.
    public var path: String { location.text }

    public init(_ value: JSONValue, path: String = "", tracker: KeyTracker? = nil) {
        self.init(value, at: .root(path), tracker: tracker)
    }

    init(_ value: JSONValue, at location: Location, tracker: KeyTracker?) {
        self.value = value
        self.location = location
        self.tracker = tracker
        if let tracker, case .object(let object) = value {
            slot = tracker.register(object, at: location)
        } else {
            slot = -1
        }
    }

    /// Where a value sits in its document, e.g. profiles[2].protocol.mtu.
    indirect enum Location {
        case root(String)
        case member(Location, String)
        case element(Location, Int)

        var text: String {
            switch self {
            case .root(let path): return path
            case .member(let parent, let key):
                let path = parent.text
                return path.isEmpty ? key : "\(path).\(key)"
            case .element(let parent, let index): return "\(parent.text)[\(index)]"
            }
        }
    }

    func problem(_ key: String?, _ message: String) -> JSONDecodeProblem {
        JSONDecodeProblem(path: key.map { Location.member(location, $0).text } ?? path, message: message)
    }

    func members() throws -> JSONObject {
        guard case .object(let m) = value else { throw problem(nil, "expected an object") }
        return m
    }

    /// nil when the key is absent or null.
    public func optional(_ key: String) throws -> JSONReader? {
        let object = try members()
        let i = object.position(of: key)
        if let tracker { tracker.asked(key, found: i, in: slot) }
        guard let i, case let v = object.members[i].value, v != .null else { return nil }
        return JSONReader(v, at: .member(location, key), tracker: tracker)
    }

    public func required(_ key: String) throws -> JSONReader {
        guard let r = try optional(key) else { throw problem(key, "missing") }
        return r
    }

    public func string() throws -> String {
        guard case .string(let s) = value else { throw problem(nil, "expected a string") }
        return s
    }

    public func bool() throws -> Bool {
        guard case .bool(let b) = value else { throw problem(nil, "expected true or false") }
        return b
    }

    public func int() throws -> Int {
        guard case .number(let n) = value else { throw problem(nil, "expected an integer") }
        guard let i = Int(n) else { throw problem(nil, JSONReader.isInteger(n) ? "\(n.abbreviated(40)) is out of range" : "expected an integer") }
        return i
    }

    public func uint64() throws -> UInt64 {
        guard case .number(let n) = value else { throw problem(nil, "expected a non-negative integer") }
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
        guard case .array(let items) = value else { throw problem(nil, "expected an array") }
        return items.enumerated().map { JSONReader($1, at: .element(location, $0), tracker: tracker) }
    }

    public func stringArray() throws -> [String] { try array().map { try $0.string() } }

    public func stringMap() throws -> [String: String] {
        var out: [String: String] = [:]
        let object = try members()
        for (n, (k, v)) in object.members.enumerated() {
            if let tracker { tracker.asked(k, found: n, in: slot) }
            out[k] = try JSONReader(v, at: .member(location, k), tracker: nil).string()
        }
        return out
    }

    public func oneOf<E: RawRepresentable>(_ type: E.Type, _ all: [E]) throws -> E where E.RawValue == String {
        let s = try string()
        guard let e = E(rawValue: s) else {
            throw problem(nil, "\(s.quotedForMessage) is not one of \(all.map(\.rawValue).joined(separator: ", "))")
        }
        return e
    }

    // Conveniences for optional fields.
    public func string(_ key: String) throws -> String? { try optional(key)?.string() }
    public func int(_ key: String) throws -> Int? { try optional(key)?.int() }
    public func bool(_ key: String) throws -> Bool? { try optional(key)?.bool() }
    public func strings(_ key: String) throws -> [String] { try optional(key)?.stringArray() ?? [] }
}

/// Records the keys a decoder asked each object for, so that the members it
/// never asked for (a misspelt or unknown key, which a decoder would drop
/// silently) can be named with the key it most likely meant. Strict reads
/// only: a profile a person wrote or edited, and the preferences on load.
///
/// A counting tracker only answers whether there is an unknown key: per
/// object a bit for each member found, no strings kept, so that a store of
/// a thousand profiles loads at nearly the cost of an unchecked read. On
/// the rare file that has one, a second, full read names it.
public final class KeyTracker {
    struct Entry {
        let location: JSONReader.Location
        let object: JSONObject
        var asked: [String] = []
    }
    struct Tally {
        let members: Int
        var found: UInt64 = 0
        var asked = false
    }
    let full: Bool
    var entries: [Entry] = []
    var tallies: [Tally] = []

    /// `full`: keep every asked key and every object, for `unknownKeys()`.
    public init(full: Bool = true) {
        self.full = full
    }

    func register(_ object: JSONObject, at location: JSONReader.Location) -> Int {
        if full {
            entries.append(Entry(location: location, object: object))
            return entries.count - 1
        }
        tallies.append(Tally(members: object.count))
        return tallies.count - 1
    }

    func asked(_ key: String, found position: Int?, in slot: Int) {
        guard slot >= 0 else { return }
        if full {
            entries[slot].asked.append(key)
            return
        }
        tallies[slot].asked = true
        if let position, position < 64 { tallies[slot].found |= 1 << UInt64(position) }
    }

    /// Whether some object has a member its decoder never asked for (an
    /// object of more than 64 members counts as having one: no decoder
    /// reads that many).
    public var hasUnknownKeys: Bool {
        if full { return !unknownKeys().isEmpty }
        return tallies.contains { $0.asked && ($0.members > 64 || $0.found.nonzeroBitCount != $0.members) }
    }

    /// A member no decoder asked for, with the known keys closest to it.
    public struct UnknownKey: Equatable, Sendable, CustomStringConvertible {
        /// Where the object is, e.g. profiles[2].protocol.peers[0]; empty at the top.
        public let path: String
        public let key: String
        public let suggestions: [String]

        public var description: String {
            let at = path.isEmpty ? "" : " in \(path)"
            let hint = suggestions.isEmpty ? "" : " (\(Suggest.question(suggestions)))"
            return "unknown key \(key.quotedForMessage)\(at)\(hint)"
        }
    }

    /// Unknown members in document order (a full tracker's; a counting
    /// one has none to name). Only objects whose decoder read at least one
    /// key are checked: an object read as a whole (a value the decoder
    /// skipped) is not the decoder's to judge.
    public func unknownKeys() -> [UnknownKey] {
        var out: [UnknownKey] = []
        for e in entries where !e.asked.isEmpty {
            for m in e.object.members where !e.asked.contains(m.key) {
                var seen = Set<String>()
                let known = e.asked.filter { seen.insert($0).inserted }
                out.append(UnknownKey(path: e.location.text, key: m.key,
                                      suggestions: Suggest.closest(to: m.key, among: known, limit: 2)))
            }
        }
        return out
    }
}

extension JSONValue {
    /// Compact JSON with sorted keys, as JSONEncoder's .sortedKeys writes it.
    /// Written as bytes: appending to a String cost most of a `status --json`
    /// of a thousand profiles.
    public var serialized: String {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, v) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (i, member) in object.members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.quote(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    public static func quote(_ s: String, into out: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        quote(s, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// The string in JSON quotes; quotes, backslashes, controls and
    /// invisible formatting characters escaped.
    static func quote(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if isPlain(s) {
            out.append(contentsOf: s.utf8)
        } else {
            for u in s.unicodeScalars {
                switch u {
                case "\"": out.append(contentsOf: "\\\"".utf8)
                case "\\": out.append(contentsOf: "\\\\".utf8)
                case "\n": out.append(contentsOf: "\\n".utf8)
                case "\r": out.append(contentsOf: "\\r".utf8)
                case "\t": out.append(contentsOf: "\\t".utf8)
                default:
                    if u.needsEscapeOnTerminal { escapeUnit(u, into: &out) } else { UTF8.encode(u) { out.append($0) } }
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Printable ASCII without quotes or backslashes: written as it is.
    static func isPlain(_ s: String) -> Bool {
        func plain(_ b: UInt8) -> Bool { b >= 0x20 && b < 0x7F && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") }
        if let all = s.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(plain) }) { return all }
        return s.utf8.allSatisfy(plain)
    }

    /// `\u` escapes, lowercase hex (a surrogate pair above U+FFFF).
    static func escapeUnit(_ u: Unicode.Scalar, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        for unit in String(u).utf16 {
            out.append(contentsOf: "\\u".utf8)
            for shift in stride(from: 12, through: 0, by: -4) { out.append(hex[Int((unit >> UInt16(shift)) & 0xF)]) }
        }
    }

    static func escapeUnit(_ u: Unicode.Scalar, into out: inout String) {
        var bytes: [UInt8] = []
        escapeUnit(u, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Escapes DEL, C1 controls and invisible formatting characters that an
    /// encoder left raw in JSON text (they can only be inside strings).
    public static func escapingInvisibles(_ json: String) -> String {
        if json.utf8.allSatisfy({ $0 < 0x7F }) { return json }
        var out = ""
        out.reserveCapacity(json.utf8.count)
        for u in json.unicodeScalars {
            if u.value >= 0x7F && u.needsEscapeOnTerminal { escapeUnit(u, into: &out) } else { out.unicodeScalars.append(u) }
        }
        return out
    }

    public static func optional(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
}

extension ConnectionError {
    public var json: JSONValue {
        .object(["domain": .string(domain), "code": .number(String(code)), "name": .string(name), "message": .string(message)])
    }
}

extension KeyedEncodingContainer {
    /// The value, or an explicit null: vpnctl's JSON documents keep every
    /// key, so that scripts can read a field without testing for it.
    public mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
