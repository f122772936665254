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
    /// The members in the order given (serialized in that order).
    public init(ordered members: [Member]) { self.init(members) }

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

    /// Whether the members are already in key order (an object written in
    /// that order, as status's are, needs no sort to be serialized).
    var keysAreSorted: Bool {
        var i = 1
        while i < members.count {
            if !(members[i - 1].key < members[i].key) { return false }
            i += 1
        }
        return true
    }

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

    func write(to out: inout [UInt8], sortingKeys: Bool = true) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: n.utf8)
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, v) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out, sortingKeys: sortingKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            let members = sortingKeys && !object.keysAreSorted ? object.members.sorted(by: { $0.key < $1.key }) : object.members
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.quote(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out, sortingKeys: sortingKeys)
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
        if json.allBytes(below: 0x7F) { return json }
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
