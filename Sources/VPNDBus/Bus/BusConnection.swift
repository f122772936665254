#if canImport(Glibc)
import Glibc
#endif
import CDBus
import VPNSystem

/// A D-Bus error: its name (org.vpnctl.VPN1.Error.ConfigurationInvalid, or
/// one of libdbus's own) and message.
public struct BusError: Error, CustomStringConvertible, Sendable {
    public let name: String
    public let message: String
    public var description: String { "\(name): \(message)" }

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// Takes the error out of a libdbus DBusError (and frees it).
    init(_ e: inout DBusError, doing what: String) {
        name = e.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
        message = "\(what): " + (e.message.map { String(cString: $0) } ?? "failed")
        dbus_error_free(&e)
    }
}

/// One connection to a bus, owned here (libdbus's DBusConnection), and the
/// object paths this process serves on it. A message to a path under a
/// registered prefix goes to its handler; the handler's reply (or error)
/// is sent for it. The corresponding libdbus calls are
/// dbus_connection_open_private(), dbus_bus_register() and
/// dbus_connection_try_register_fallback().
public final class BusConnection: @unchecked Sendable {
    let connection: OpaquePointer
    /// The handlers by path prefix; kept alive for libdbus's user data.
    var handlers: [Handler] = []

    public typealias Handle = (BusMessage) -> BusReply?

    final class Handler {
        let handle: Handle
        init(_ handle: @escaping Handle) { self.handle = handle }
    }

    /// Connects to the bus at `address` (a D-Bus address such as
    /// unix:path=/run/dbus/system_bus_socket) and says hello to it.
    public init(address: String) throws {
        dbus_threads_init_default()
        var e = DBusError()
        dbus_error_init(&e)
        guard let c = dbus_connection_open_private(address, &e) else { throw BusError(&e, doing: "connect to \(address)") }
        connection = c
        dbus_connection_set_exit_on_disconnect(c, 0)
        guard dbus_bus_register(c, &e) != 0 else {
            let error = BusError(&e, doing: "register on \(address)")
            dbus_connection_close(c)
            dbus_connection_unref(c)
            throw error
        }
    }

    /// The system bus: $DBUS_SYSTEM_BUS_ADDRESS, else the well-known socket.
    public static var systemBusAddress: String {
        getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? "unix:path=/run/dbus/system_bus_socket"
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// This connection's unique name on the bus (":1.42").
    public var uniqueName: String { dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? "" }

    /// Becomes the primary owner of `name`, or throws (another process owns it,
    /// or the bus policy does not let this user own it).
    public func requestName(_ name: String) throws {
        var e = DBusError()
        dbus_error_init(&e)
        let r = dbus_bus_request_name(connection, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &e)
        if r < 0 { throw BusError(&e, doing: "own \(name)") }
        guard r == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || r == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER else {
            throw BusError(name: "org.freedesktop.DBus.Error.AddressInUse", message: "\(name) is owned by another process already")
        }
    }

    /// Serves every object path under `prefix` (the prefix itself included).
    public func serve(_ prefix: String, _ handle: @escaping Handle) throws {
        let handler = Handler(handle)
        handlers.append(handler)
        var vtable = DBusObjectPathVTable()
        vtable.message_function = { connection, message, data in
            guard let connection, let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            let handler = Unmanaged<Handler>.fromOpaque(data).takeUnretainedValue()
            let m = BusMessage(retaining: message)
            guard let reply = handler.handle(m) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            // (a deferred reply has no message yet)
            if !m.noReplyExpected, let r = reply.message(for: m) { _ = dbus_connection_send(connection, r, nil); dbus_message_unref(r) }
            return DBUS_HANDLER_RESULT_HANDLED
        }
        var e = DBusError()
        dbus_error_init(&e)
        guard dbus_connection_try_register_fallback(connection, prefix, &vtable, Unmanaged.passUnretained(handler).toOpaque(), &e) != 0 else {
            throw BusError(&e, doing: "serve \(prefix)")
        }
    }

    /// Calls `lost` with each unique name that leaves the bus (the bus's
    /// NameOwnerChanged with no new owner), so that what is kept per caller
    /// goes with it. dbus_bus_add_match() and dbus_connection_add_filter().
    public func onNameLost(_ lost: @escaping (String) -> Void) throws {
        let handler = Handler { m in
            guard m.interface == "org.freedesktop.DBus", m.member == "NameOwnerChanged", m.sender == "org.freedesktop.DBus",
                  case let args = m.arguments(), args.count == 3,
                  case .string(let name) = args[0], case .string(let newOwner) = args[2],
                  name.hasPrefix(":"), newOwner.isEmpty else { return nil }
            lost(name)
            return nil
        }
        handlers.append(handler)
        let filter: DBusHandleMessageFunction = { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            if dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL {
                _ = Unmanaged<Handler>.fromOpaque(data).takeUnretainedValue().handle(BusMessage(retaining: message))
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        guard dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(handler).toOpaque(), nil) != 0 else {
            throw BusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "no memory for a message filter")
        }
        var e = DBusError()
        dbus_error_init(&e)
        dbus_bus_add_match(connection, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'", &e)
        if dbus_error_is_set(&e) != 0 { throw BusError(&e, doing: "follow callers leaving the bus") }
    }

    /// Answers a call whose handler deferred its reply, on the loop's thread.
    public func reply(to call: BusMessage, _ reply: BusReply) {
        guard !call.noReplyExpected, let r = reply.message(for: call) else { return }
        _ = dbus_connection_send(connection, r, nil)
        dbus_message_unref(r)
        dbus_connection_flush(connection)
    }

    /// Sends a signal (or any message made here), on the loop's thread.
    public func send(_ message: BusMessage) {
        send([message])
    }

    /// Sends several messages, then flushes once.
    public func send(_ messages: [BusMessage]) {
        for m in messages { _ = dbus_connection_send(connection, m.message, nil) }
        if !messages.isEmpty { dbus_connection_flush(connection) }
    }

    /// Serves the connection from `loop` (its socket, from
    /// dbus_connection_get_unix_fd): each time it is readable, what came is
    /// read and dispatched, and the replies written; the loop stops when the
    /// bus closes the connection. Everything libdbus does happens on the
    /// loop's thread, so that a reply or signal never waits for another
    /// thread's poll.
    public func attach(to loop: EventLoop) throws {
        var fd: Int32 = -1
        guard dbus_connection_get_unix_fd(connection, &fd) != 0, fd >= 0 else {
            throw BusError(name: "org.freedesktop.DBus.Error.Failed", message: "the bus connection has no socket to wait on")
        }
        loop.watch(fd) { [unowned self] in
            _ = dbus_connection_read_write(connection, 0)
            dispatchAll()
            if dbus_connection_get_is_connected(connection) == 0 { loop.stop() }
        }
        dispatchAll()
    }

    func dispatchAll() {
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        dbus_connection_flush(connection)
    }

    /// Calls a method and waits for its reply, up to `timeoutMs`
    /// (dbus_connection_send_with_reply_and_block): its values, or the
    /// error it answered with.
    public func call(_ message: BusMessage, timeoutMs: Int32) throws -> [BusValue] {
        var e = DBusError()
        dbus_error_init(&e)
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message.message, timeoutMs, &e) else {
            throw BusError(&e, doing: "call \(message.interface).\(message.member)")
        }
        return BusMessage(owning: reply).arguments()
    }

    /// The uid of the process behind a unique bus name: the bus's own word
    /// (GetConnectionUnixUser), not the caller's.
    public func unixUser(of sender: String) throws -> uid_t {
        var e = DBusError()
        dbus_error_init(&e)
        let uid = dbus_bus_get_unix_user(connection, sender, &e)
        if uid == UInt(bitPattern: -1) { throw BusError(&e, doing: "ask the bus for \(sender)'s uid") }
        return uid_t(uid)
    }
}
