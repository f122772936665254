#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// A libnl error (a positive NLE_* code). libnl's mapping from errno loses
/// detail, so this type is kept apart from `Errno`.
public struct NetlinkError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let operation: String

    /// `code` may be given negative, as libnl returns it.
    public init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code < 0 ? -code : code
    }

    public var description: String {
        let text = nl_geterror(code).map { String(cString: $0) } ?? "netlink error \(code)"
        return "\(operation): \(text.prefix(1).lowercased() + text.dropFirst())"
    }

    /// NLE_EXIST: the kernel has the object already (an address, a route).
    public static func exists(_ operation: String) -> NetlinkError { NetlinkError(operation, code: NLE_EXIST) }

    public var alreadyExists: Bool { code == NLE_EXIST }
    public var isPermission: Bool { code == NLE_PERM || code == NLE_NOACCESS }
    /// The object (or its device) is gone already: nothing left to take back.
    public var isGone: Bool { code == NLE_NODEV || code == NLE_OBJ_NOTFOUND }
}

/// An rtnetlink socket. The corresponding libnl calls are nl_socket_alloc()
/// and nl_connect(sk, NETLINK_ROUTE); nl_socket_free() runs in deinit.
public final class NetlinkRouteSocket {
    let handle: OpaquePointer

    public init() throws {
        guard let sk = nl_socket_alloc() else {
            throw NetlinkError("allocate netlink socket", code: NLE_NOMEM)
        }
        let r = nl_connect(sk, NETLINK_ROUTE)
        if r < 0 {
            nl_socket_free(sk)
            throw NetlinkError("connect netlink route socket", code: r)
        }
        handle = sk
    }

    deinit { nl_socket_free(handle) }

    /// The netlink port id the kernel assigned to this socket.
    public var localPort: UInt32 { nl_socket_get_local_port(handle) }

    /// Asks the kernel for one link by name. The corresponding libnl call is
    /// rtnl_link_get_kernel(). Returns nil when there is no such link.
    public func linkIndex(named name: String) throws -> Int32? {
        var link: OpaquePointer? = nil
        let r = rtnl_link_get_kernel(handle, 0, name, &link)
        if r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV { return nil }
        if r < 0 { throw NetlinkError("get link \(name)", code: r) }
        defer { rtnl_link_put(link) }
        return rtnl_link_get_ifindex(link)
    }
}
