#if canImport(Glibc)
import Glibc
#endif
import CDBus

/// libdbus's type codes (DBUS_TYPE_STRING and the rest: casts in C
/// macros, which Swift does not import).
enum BusType {
    static let string = Int32(UInt8(ascii: "s"))
    static let objectpath = Int32(UInt8(ascii: "o"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let array = Int32(UInt8(ascii: "a"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let dictentry = Int32(UInt8(ascii: "e"))
    static let invalid: Int32 = 0
}

/// A value to send, typed as D-Bus types it; `signature` is its type code.
public indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    /// A struct: (us), (iss), ...
    case structure([BusValue])
    /// An array whose elements have the signature `of` (for an empty one too).
    case array(of: String, [BusValue])
    /// a{sv}: string keys, variant values.
    case dictionary([(String, BusValue)])
    /// A dictionary of any key and value types (`a{KV}`), e.g. the
    /// ObjectManager's a{oa{sa{sv}}}; every key and value of those types.
    case entries(key: String, value: String, [(BusValue, BusValue)])
    case variant(BusValue)

    public var signature: String {
        switch self {
        case .string: return "s"
        case .objectPath: return "o"
        case .bool: return "b"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .structure(let members): return "(" + members.map(\.signature).joined() + ")"
        case .array(let of, _): return "a" + of
        case .dictionary: return "a{sv}"
        case .entries(let k, let v, _): return "a{" + k + v + "}"
        case .variant: return "v"
        }
    }

    public static func == (a: BusValue, b: BusValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.objectPath(let x), .objectPath(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.int32(let x), .int32(let y)): return x == y
        case (.uint32(let x), .uint32(let y)): return x == y
        case (.int64(let x), .int64(let y)): return x == y
        case (.uint64(let x), .uint64(let y)): return x == y
        case (.structure(let x), .structure(let y)): return x == y
        case (.array(let s, let x), .array(let t, let y)): return s == t && x == y
        case (.dictionary(let x), .dictionary(let y)): return x.map(\.0) == y.map(\.0) && x.map(\.1) == y.map(\.1)
        case (.variant(let x), .variant(let y)): return x == y
        case (.entries(let k, let v, let x), .entries(let l, let w, let y)):
            return k == l && v == w && x.map(\.0) == y.map(\.0) && x.map(\.1) == y.map(\.1)
        default: return false
        }
    }

    /// Appends the value at `iter` (dbus_message_iter_append_basic and
    /// dbus_message_iter_open_container). False when libdbus is out of memory.
    func append(to iter: inout DBusMessageIter) -> Bool {
        func basic<T>(_ type: Int32, _ value: T) -> Bool {
            var v = value
            return withUnsafePointer(to: &v) { dbus_message_iter_append_basic(&iter, type, $0) != 0 }
        }
        func text(_ type: Int32, _ s: String) -> Bool {
            s.withCString { p in
                var ptr: UnsafePointer<CChar>? = p
                return withUnsafePointer(to: &ptr) { dbus_message_iter_append_basic(&iter, type, $0) != 0 }
            }
        }
        switch self {
        case .string(let s): return text(BusType.string, s)
        case .objectPath(let s): return text(BusType.objectpath, s)
        case .bool(let b): return basic(BusType.boolean, dbus_bool_t(b ? 1 : 0))
        case .int32(let n): return basic(BusType.int32, n)
        case .uint32(let n): return basic(BusType.uint32, n)
        case .int64(let n): return basic(BusType.int64, n)
        case .uint64(let n): return basic(BusType.uint64, n)
        case .structure(let members):
            return BusValue.container(&iter, BusType.structure, nil) { sub in members.allSatisfy { $0.append(to: &sub) } }
        case .array(let of, let elements):
            return BusValue.container(&iter, BusType.array, of) { sub in elements.allSatisfy { $0.append(to: &sub) } }
        case .dictionary(let entries):
            return BusValue.container(&iter, BusType.array, "{sv}") { sub in
                entries.allSatisfy { key, value in
                    BusValue.container(&sub, BusType.dictentry, nil) { entry in
                        BusValue.string(key).append(to: &entry) && BusValue.variant(value).append(to: &entry)
                    }
                }
            }
        case .entries(let k, let v, let entries):
            return BusValue.container(&iter, BusType.array, "{" + k + v + "}") { sub in
                entries.allSatisfy { key, value in
                    BusValue.container(&sub, BusType.dictentry, nil) { entry in key.append(to: &entry) && value.append(to: &entry) }
                }
            }
        case .variant(let inner):
            return BusValue.container(&iter, BusType.variant, inner.signature) { sub in inner.append(to: &sub) }
        }
    }

    /// Opens a container in `iter`, has `body` fill it, and closes it (also
    /// when `body` fails, so that the message stays well formed).
    static func container(_ iter: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                          _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        let opened = signature.map { s in s.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) } }
            ?? dbus_message_iter_open_container(&iter, type, nil, &sub)
        guard opened != 0 else { return false }
        let ok = body(&sub)
        return dbus_message_iter_close_container(&iter, &sub) != 0 && ok
    }
}

/// A received or built message (libdbus's DBusMessage, one reference owned here).
public final class BusMessage: @unchecked Sendable {
    let message: OpaquePointer

    init(retaining message: OpaquePointer) {
        self.message = message
        dbus_message_ref(message)
    }

    init(owning message: OpaquePointer) {
        self.message = message
    }

    deinit { dbus_message_unref(message) }

    static func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }

    public var path: String { BusMessage.text(dbus_message_get_path(message)) }
    public var interface: String { BusMessage.text(dbus_message_get_interface(message)) }
    public var member: String { BusMessage.text(dbus_message_get_member(message)) }
    public var sender: String { BusMessage.text(dbus_message_get_sender(message)) }
    /// The arguments' type codes, e.g. "sa{sv}".
    public var signature: String { BusMessage.text(dbus_message_get_signature(message)) }
    public var isMethodCall: Bool { dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_CALL }
    var noReplyExpected: Bool { dbus_message_get_no_reply(message) != 0 }
    /// Whether the caller lets the service have it authenticated before
    /// the reply (the ALLOW_INTERACTIVE_AUTHORIZATION flag).
    var allowsInteractiveAuthorization: Bool { dbus_message_get_allow_interactive_authorization(message) != 0 }

    /// The arguments, read as values (the types the service takes: basic
    /// types, arrays, dictionaries, structs and variants).
    public func arguments() -> [BusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var out: [BusValue] = []
        repeat {
            if let v = BusMessage.read(&iter) { out.append(v) }
        } while dbus_message_iter_next(&iter) != 0
        return out
    }

    static func read(_ iter: inout DBusMessageIter) -> BusValue? {
        func basic<T>(_ zero: T) -> T {
            var v = zero
            dbus_message_iter_get_basic(&iter, &v)
            return v
        }
        switch dbus_message_iter_get_arg_type(&iter) {
        case BusType.string: return .string(text(basic(UnsafePointer<CChar>?.none)))
        case BusType.objectpath: return .objectPath(text(basic(UnsafePointer<CChar>?.none)))
        case BusType.boolean: return .bool(basic(dbus_bool_t(0)) != 0)
        case BusType.int32: return .int32(basic(Int32(0)))
        case BusType.uint32: return .uint32(basic(UInt32(0)))
        case BusType.int64: return .int64(basic(Int64(0)))
        case BusType.uint64: return .uint64(basic(UInt64(0)))
        case BusType.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return read(&sub).map { .variant($0) }
        case BusType.structure:
            return .structure(elements(&iter))
        case BusType.array:
            var signature = ""
            if let p = dbus_message_iter_get_signature(&iter) {
                signature = String(cString: p)
                dbus_free(p)
            }
            if signature == "a{sv}" {
                var sub = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &sub)
                var entries: [(String, BusValue)] = []
                while dbus_message_iter_get_arg_type(&sub) == BusType.dictentry {
                    let kv = elements(&sub)
                    if kv.count == 2, case .string(let k) = kv[0], case .variant(let v) = kv[1] { entries.append((k, v)) }
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(entries)
            }
            return .array(of: String(signature.dropFirst()), elements(&iter))
        default: return nil
        }
    }

    /// The members of the container at `iter`.
    static func elements(_ iter: inout DBusMessageIter) -> [BusValue] {
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        var out: [BusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != BusType.invalid {
            if let v = read(&sub) { out.append(v) }
            dbus_message_iter_next(&sub)
        }
        return out
    }

    /// A signal from `path` (dbus_message_new_signal); with `destination`,
    /// delivered to that connection only (a monitor aside), not broadcast.
    public static func signal(path: String, interface: String, member: String, destination: String? = nil, _ values: [BusValue]) -> BusMessage? {
        guard let m = dbus_message_new_signal(path, interface, member) else { return nil }
        let message = BusMessage(owning: m)
        if let destination, dbus_message_set_destination(m, destination) == 0 { return nil }
        guard message.append(values) else { return nil }
        return message
    }

    /// A method call (dbus_message_new_method_call), as a client sends it.
    public static func methodCall(destination: String?, path: String, interface: String, member: String, _ values: [BusValue]) -> BusMessage? {
        guard let m = dbus_message_new_method_call(destination, path, interface, member) else { return nil }
        let message = BusMessage(owning: m)
        return message.append(values) ? message : nil
    }

    /// A message from its wire form (dbus_message_demarshal: libdbus checks
    /// the header, the signature and the body), or nil when it is not one.
    public static func demarshal(_ bytes: [UInt8]) -> BusMessage? {
        var e = DBusError()
        dbus_error_init(&e)
        let m = bytes.withUnsafeBufferPointer { b in
            b.baseAddress.flatMap { base in base.withMemoryRebound(to: CChar.self, capacity: b.count) { dbus_message_demarshal($0, Int32(b.count), &e) } }
        }
        dbus_error_free(&e)
        return m.map { BusMessage(owning: $0) }
    }

    /// The message's wire form (dbus_message_marshal), with `serial` (a
    /// message made here has none until it is sent).
    public func marshal(serial: UInt32 = 1) -> [UInt8]? {
        if dbus_message_get_serial(message) == 0 { dbus_message_set_serial(message, serial) }
        var p: UnsafeMutablePointer<CChar>?
        var n: Int32 = 0
        guard dbus_message_marshal(message, &p, &n) != 0, let p else { return nil }
        defer { dbus_free(p) }
        return p.withMemoryRebound(to: UInt8.self, capacity: Int(n)) { Array(UnsafeBufferPointer(start: $0, count: Int(n))) }
    }

    func append(_ values: [BusValue]) -> Bool {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        return values.allSatisfy { $0.append(to: &iter) }
    }
}

/// What a handler answers a method call with.
public enum BusReply: @unchecked Sendable {
    case values([BusValue])
    case error(BusError)
    /// Answered later, with BusConnection.reply(to:_:).
    case deferred

    /// The reply message to `call`; nil when libdbus is out of memory.
    func message(for call: BusMessage) -> OpaquePointer? {
        switch self {
        case .values(let values):
            guard let r = dbus_message_new_method_return(call.message) else { return nil }
            let reply = BusMessage(owning: r)
            guard reply.append(values) else { return nil }
            dbus_message_ref(r)
            return r
        case .error(let e):
            return dbus_message_new_error(call.message, e.name, e.message)
        case .deferred:
            return nil
        }
    }
}
