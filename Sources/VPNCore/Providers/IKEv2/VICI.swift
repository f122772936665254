/// strongSwan's vici protocol (the binary protocol charon speaks on its unix
/// socket; src/libcharon/plugins/vici/vici_message.h and vici_socket.c).
///
/// A packet is a 32-bit big-endian length, then the packet: one type byte,
/// for named types a name (8-bit length + bytes), and for commands, responses
/// and events a message. A message is a sequence of elements: section start
/// (name) and end, key/value (8-bit name length, 16-bit value length), list
/// start (name), list item (16-bit value length) and list end.
public enum VICI {
    /// vici_socket.c refuses larger packets (VICI_MESSAGE_SIZE_MAX).
    public static let maxPacketSize = 512 * 1024

    public enum PacketType: UInt8, Sendable, CaseIterable {
        case cmdRequest = 0, cmdResponse = 1, cmdUnknown = 2
        case eventRegister = 3, eventUnregister = 4, eventConfirm = 5, eventUnknown = 6, event = 7

        /// Whether a name follows the type byte.
        var isNamed: Bool { self == .cmdRequest || self == .eventRegister || self == .eventUnregister || self == .event }
        /// Whether a message follows (the name, if any).
        var hasMessage: Bool { self == .cmdRequest || self == .cmdResponse || self == .event }
    }

    enum Element: UInt8 {
        case sectionStart = 1, sectionEnd = 2, keyValue = 3, listStart = 4, listItem = 5, listEnd = 6
    }

    public struct DecodeError: Error, Equatable, CustomStringConvertible, Sendable {
        public let reason: String
        public let offset: Int
        public var description: String { "malformed vici data at byte \(offset): \(reason)" }
    }

    public struct EncodeError: Error, Equatable, CustomStringConvertible, Sendable {
        public let reason: String
        public var description: String { "cannot encode a vici message: \(reason)" }
    }

    /// One vici packet.
    public struct Packet: Equatable, Sendable {
        public var type: PacketType
        public var name: String?
        public var message: Message?

        public init(_ type: PacketType, name: String? = nil, message: Message? = nil) {
            self.type = type
            self.name = name
            self.message = message
        }

        public static func request(_ command: String, _ message: Message = Message()) -> Packet {
            Packet(.cmdRequest, name: command, message: message)
        }

        /// The packet with its length prefix, as written to the socket.
        public func encoded() throws -> [UInt8] {
            var body: [UInt8] = [type.rawValue]
            if type.isNamed { try VICI.appendName(name ?? "", to: &body) }
            if type.hasMessage { body += try (message ?? Message()).encoded() }
            guard body.count <= VICI.maxPacketSize else { throw EncodeError(reason: "the packet is \(body.count) bytes; vici takes at most \(VICI.maxPacketSize)") }
            let n = UInt32(body.count)
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
        }

        /// One packet without its length prefix.
        public static func decode(_ bytes: [UInt8]) throws -> Packet {
            guard let first = bytes.first else { throw DecodeError(reason: "empty packet", offset: 0) }
            guard let type = PacketType(rawValue: first) else { throw DecodeError(reason: "unknown packet type \(first)", offset: 0) }
            var reader = Reader(bytes: bytes, offset: 1)
            var packet = Packet(type)
            if type.isNamed { packet.name = try reader.name() }
            if type.hasMessage {
                packet.message = try Message.decode(reader)
            } else if reader.offset != bytes.count {
                throw DecodeError(reason: "\(bytes.count - reader.offset) bytes after a \(type) packet", offset: reader.offset)
            }
            return packet
        }
    }

    /// A value in a message: bytes, a list of byte strings, or a section.
    public indirect enum Value: Equatable, Sendable {
        case bytes([UInt8])
        case list([[UInt8]])
        case section(Message)

        public static func text(_ s: String) -> Value { .bytes(Array(s.utf8)) }
        public static func texts(_ s: [String]) -> Value { .list(s.map { Array($0.utf8) }) }

        public var text: String? {
            if case .bytes(let b) = self { return String(decoding: b, as: UTF8.self) }
            return nil
        }
        public var texts: [String]? {
            if case .list(let l) = self { return l.map { String(decoding: $0, as: UTF8.self) } }
            return nil
        }
        public var section: Message? {
            if case .section(let m) = self { return m }
            return nil
        }
    }

    /// A message, or a section of one: named entries in their order.
    public struct Message: Equatable, Sendable {
        public var entries: [(name: String, value: Value)]

        public init(_ entries: [(String, Value)] = []) {
            self.entries = entries.map { (name: $0.0, value: $0.1) }
        }

        public static func == (a: Message, b: Message) -> Bool {
            a.entries.count == b.entries.count && zip(a.entries, b.entries).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        }

        /// The first entry of that name.
        public subscript(_ name: String) -> Value? {
            entries.first { $0.name == name }?.value
        }

        public mutating func append(_ name: String, _ value: Value) { entries.append((name: name, value: value)) }

        /// A response's `success` and `errmsg`: nil when it succeeded.
        public var failure: String? {
            guard self["success"]?.text != "yes" else { return nil }
            return self["errmsg"]?.text ?? "charon gave no reason"
        }

        public func encoded() throws -> [UInt8] {
            var out: [UInt8] = []
            try append(to: &out)
            return out
        }

        func append(to out: inout [UInt8]) throws {
            for (name, value) in entries {
                switch value {
                case .bytes(let b):
                    out.append(Element.keyValue.rawValue)
                    try VICI.appendName(name, to: &out)
                    try VICI.appendValue(b, to: &out)
                case .list(let items):
                    out.append(Element.listStart.rawValue)
                    try VICI.appendName(name, to: &out)
                    for item in items {
                        out.append(Element.listItem.rawValue)
                        try VICI.appendValue(item, to: &out)
                    }
                    out.append(Element.listEnd.rawValue)
                case .section(let m):
                    out.append(Element.sectionStart.rawValue)
                    try VICI.appendName(name, to: &out)
                    try m.append(to: &out)
                    out.append(Element.sectionEnd.rawValue)
                }
            }
        }

        /// Sections nest at most this deep (charon itself has no limit, but
        /// nothing it sends comes close).
        static let maxDepth = 64

        public static func decode(_ bytes: [UInt8]) throws -> Message {
            try decode(Reader(bytes: bytes, offset: 0))
        }

        static func decode(_ start: Reader) throws -> Message {
            var r = start
            var stack: [(name: String, message: Message)] = [("", Message())]
            while r.offset < r.bytes.count {
                let at = r.offset
                let raw = r.bytes[r.offset]
                r.offset += 1
                guard let element = Element(rawValue: raw) else { throw DecodeError(reason: "unknown element type \(raw)", offset: at) }
                switch element {
                case .sectionStart:
                    guard stack.count <= maxDepth else { throw DecodeError(reason: "sections nested deeper than \(maxDepth)", offset: at) }
                    stack.append((try r.name(), Message()))
                case .sectionEnd:
                    guard stack.count > 1 else { throw DecodeError(reason: "a section end without a start", offset: at) }
                    let done = stack.removeLast()
                    stack[stack.count - 1].message.append(done.name, .section(done.message))
                case .keyValue:
                    let name = try r.name()
                    stack[stack.count - 1].message.append(name, .bytes(try r.value()))
                case .listStart:
                    let name = try r.name()
                    var items: [[UInt8]] = []
                    while true {
                        guard r.offset < r.bytes.count else { throw DecodeError(reason: "list '\(name)' has no end", offset: r.offset) }
                        let t = r.bytes[r.offset]
                        r.offset += 1
                        if t == Element.listEnd.rawValue { break }
                        guard t == Element.listItem.rawValue else {
                            throw DecodeError(reason: "element type \(t) inside list '\(name)'", offset: r.offset - 1)
                        }
                        items.append(try r.value())
                    }
                    stack[stack.count - 1].message.append(name, .list(items))
                case .listItem, .listEnd:
                    throw DecodeError(reason: "a list element outside a list", offset: at)
                }
            }
            guard stack.count == 1 else { throw DecodeError(reason: "section '\(stack[stack.count - 1].name)' has no end", offset: r.offset) }
            return stack[0].message
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var offset: Int

        mutating func name() throws -> String {
            guard offset < bytes.count else { throw DecodeError(reason: "a name is cut short", offset: offset) }
            let n = Int(bytes[offset])
            guard offset + 1 + n <= bytes.count else { throw DecodeError(reason: "a name is cut short", offset: offset) }
            let s = String(decoding: bytes[(offset + 1)..<(offset + 1 + n)], as: UTF8.self)
            offset += 1 + n
            return s
        }

        mutating func value() throws -> [UInt8] {
            guard offset + 2 <= bytes.count else { throw DecodeError(reason: "a value length is cut short", offset: offset) }
            let n = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard offset + 2 + n <= bytes.count else { throw DecodeError(reason: "a value is cut short", offset: offset) }
            let v = Array(bytes[(offset + 2)..<(offset + 2 + n)])
            offset += 2 + n
            return v
        }
    }

    static func appendName(_ name: String, to out: inout [UInt8]) throws {
        let b = Array(name.utf8)
        guard b.count <= 255 else { throw EncodeError(reason: "the name '\(name.prefix(32))…' is longer than 255 bytes") }
        out.append(UInt8(b.count))
        out += b
    }

    static func appendValue(_ v: [UInt8], to out: inout [UInt8]) throws {
        guard v.count <= 0xffff else { throw EncodeError(reason: "a value of \(v.count) bytes is longer than 65535") }
        out.append(UInt8(v.count >> 8))
        out.append(UInt8(v.count & 0xff))
        out += v
    }

    /// Splits a byte stream into packets (without their length prefixes),
    /// keeping an incomplete tail for the next read.
    public struct Framer: Sendable {
        var buffer: [UInt8] = []
        public init() {}

        public mutating func feed(_ bytes: [UInt8]) { buffer += bytes }

        /// The next whole packet, nil when more bytes are needed; throws on a
        /// length vici never sends.
        public mutating func next() throws -> [UInt8]? {
            guard buffer.count >= 4 else { return nil }
            let n = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
            guard n >= 1, n <= VICI.maxPacketSize else { throw DecodeError(reason: "a packet length of \(n)", offset: 0) }
            guard buffer.count >= 4 + n else { return nil }
            let packet = Array(buffer[4..<(4 + n)])
            buffer.removeFirst(4 + n)
            return packet
        }
    }
}
