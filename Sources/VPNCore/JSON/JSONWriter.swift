/// Compact JSON written straight to bytes, member by member, with no tree in
/// between: `status --json` of a thousand profiles spent a third of its time
/// building JSONValue objects only to walk them once. Members are written in
/// the order given, so a caller that wants sorted keys writes them sorted.
/// Strings are quoted as `JSONValue.quote` quotes them.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether the container being written already has a member or element.
    var started = false

    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The bytes written, taken out (the writer is left empty), so that
    /// the caller holds the only reference and can append without a copy.
    public mutating func take() -> [UInt8] {
        var out: [UInt8] = []
        swap(&out, &bytes)
        return out
    }

    mutating func separate() {
        if started { bytes.append(UInt8(ascii: ",")) }
        started = true
    }

    /// An object: `body` writes its members with the `member` calls.
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        open(UInt8(ascii: "{"), UInt8(ascii: "}"), body)
    }

    /// An array: `body` writes its elements with the value calls.
    public mutating func array(_ body: (inout JSONWriter) -> Void) {
        open(UInt8(ascii: "["), UInt8(ascii: "]"), body)
    }

    mutating func open(_ first: UInt8, _ last: UInt8, _ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(first)
        let outer = started
        started = false
        body(&self)
        bytes.append(last)
        started = outer
    }

    /// A member's key and colon; the value follows.
    public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        // The value that follows is not an element of its own.
        started = false
    }

    // Values: in an array each is an element; after `key` each is the member's value.
    public mutating func string(_ s: String) { separate(); JSONValue.quote(s, into: &bytes) }
    public mutating func string(_ s: String?) { if let s { string(s) } else { null() } }
    public mutating func number<N: BinaryInteger>(_ n: N) { separate(); bytes.append(contentsOf: String(n).utf8) }
    public mutating func number<N: BinaryInteger>(_ n: N?) { if let n { number(n) } else { null() } }
    public mutating func bool(_ b: Bool) { separate(); bytes.append(contentsOf: (b ? "true" : "false").utf8) }
    public mutating func null() { separate(); bytes.append(contentsOf: "null".utf8) }
    public mutating func strings(_ all: [String]) { array { w in for s in all { w.string(s) } } }

    public mutating func object(_ key: StaticString, _ body: (inout JSONWriter) -> Void) { self.key(key); object(body) }

    // Members: key and value in one call.
    public mutating func member(_ key: StaticString, _ s: String?) { self.key(key); string(s) }
    public mutating func member<N: BinaryInteger>(_ key: StaticString, _ n: N?) { self.key(key); number(n) }
    public mutating func member(_ key: StaticString, _ b: Bool) { self.key(key); bool(b) }
    public mutating func member(_ key: StaticString, _ all: [String]) { self.key(key); strings(all) }
}
