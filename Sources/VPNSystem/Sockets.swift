#if canImport(Glibc)
import Glibc
#endif
import CNetlink

/// Why a socket call failed: the step, with the kernel's errno, or the
/// deadline passing first.
public enum SocketError: Error, Equatable, CustomStringConvertible, Sendable {
    case create(Errno)
    case bind(Errno)
    case connect(Errno)
    case send(Errno)
    case receive(Errno)
    case option(Errno)
    case timedOut

    /// The errno's text alone (callers name the step and the peer).
    public var description: String {
        switch self {
        case .create(let e), .bind(let e), .connect(let e), .send(let e), .receive(let e), .option(let e): return e.description
        case .timedOut: return "timed out"
        }
    }
}

/// A TCP or UDP socket over IPv4 or IPv6, non-blocking and close-on-exec,
/// closed in deinit. Every wait ends at a deadline on the monotonic clock
/// (`monotonicMilliseconds()`); EINTR and EAGAIN only wait again.
public final class IPSocket {
    public enum Transport: Sendable { case tcp, udp }

    public let fd: Int32
    let ipv6: Bool

    /// The corresponding call is socket(2).
    public init(ipv6: Bool, _ transport: Transport) throws(SocketError) {
        let type = transport == .tcp ? SOCK_STREAM.rawValue : SOCK_DGRAM.rawValue
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(type) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { throw .create(.current) }
        self.fd = fd
        self.ipv6 = ipv6
    }

    deinit { close(fd) }

    /// connect(2) to `address` (4 or 16 bytes, as the socket's family); a TCP
    /// connect in progress is waited for until `deadlineMs`.
    public func connect(to address: [UInt8], port: UInt16, deadlineMs: Int64) throws(SocketError) {
        let r = withAddress(address, port) { Glibc.connect(fd, $0, $1) }
        if r == 0 { return }
        guard errno == EINPROGRESS || errno == EINTR else { throw .connect(.current) }
        guard wait(POLLOUT, deadlineMs: deadlineMs) else { throw .timedOut }
        var soError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length) < 0 { throw .connect(.current) }
        if soError != 0 { throw .connect(Errno(soError)) }
    }

    /// SO_MARK: the packets of this socket carry `mark` (needs CAP_NET_ADMIN).
    public func setMark(_ mark: UInt32) throws(SocketError) {
        var m = mark
        if setsockopt(fd, SOL_SOCKET, SO_MARK, &m, socklen_t(MemoryLayout<UInt32>.size)) < 0 { throw .option(.current) }
    }

    /// bind(2) to `address` (4 or 16 bytes); port 0 lets the kernel choose.
    public func bind(to address: [UInt8], port: UInt16) throws(SocketError) {
        if withAddress(address, port, { Glibc.bind(fd, $0, $1) }) < 0 { throw .bind(.current) }
    }

    /// listen(2), for a bound TCP socket.
    public func listen(backlog: Int32) throws(SocketError) {
        if Glibc.listen(fd, backlog) < 0 { throw .bind(.current) }
    }

    /// The port the socket is bound to (getsockname(2)).
    public func localPort() throws(SocketError) -> UInt16 {
        var storage = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let r = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        if r < 0 { throw .bind(.current) }
        // sin_port and sin6_port sit at the same offset, after the family.
        return UInt16(bigEndian: storage.sin6_port)
    }

    /// send(2) of all of `bytes` (MSG_NOSIGNAL), waiting for room until `deadlineMs`.
    public func send(_ bytes: [UInt8], deadlineMs: Int64) throws(SocketError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(POLLOUT, deadlineMs: deadlineMs) else { throw .timedOut }
                continue
            }
            if n <= 0 { throw .send(.current) }
            sent += n
        }
    }

    /// One recv(2) of at most `limit` bytes once there is something to read
    /// before `deadlineMs`; empty at the end of a stream.
    public func receive(limit: Int, deadlineMs: Int64) throws(SocketError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            guard wait(POLLIN, deadlineMs: deadlineMs) else { throw .timedOut }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return Array(buffer[0..<n]) }
            if errno != EAGAIN && errno != EINTR { throw .receive(.current) }
        }
    }

    /// poll(2) for `events` until `deadlineMs`; false once it has passed.
    func wait(_ events: Int32, deadlineMs: Int64) -> Bool {
        while true {
            let left = deadlineMs - monotonicMilliseconds()
            guard left > 0 else { return false }
            var p = pollfd(fd: fd, events: Int16(events), revents: 0)
            let r = poll(&p, 1, Int32(clamping: left))
            if r > 0 { return true }
            if r == 0 || errno != EINTR { return false }
        }
    }

    func withAddress(_ address: [UInt8], _ port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        if ipv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = in_port_t(port.bigEndian)
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in for (i, b) in address.prefix(16).enumerated() { raw[i] = b } }
            return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = in_port_t(port.bigEndian)
        withUnsafeMutableBytes(of: &sa.sin_addr) { raw in for (i, b) in address.prefix(4).enumerated() { raw[i] = b } }
        return withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }
}

public enum NameLookup {
    /// The first address getaddrinfo(3) gives for `host`, as numeric text
    /// (getnameinfo(3) with NI_NUMERICHOST); nil when there is none.
    public static func firstAddress(_ host: String) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>? = nil
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        var buf = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buf, socklen_t(buf.count), nil, 0, NI_NUMERICHOST) == 0 else { return nil }
        return String(cString: buf)
    }
}
