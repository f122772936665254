#if canImport(Glibc)
import Glibc
#endif
import CNetlink
import CVPNShims

/// AF_UNIX stream sockets: the WireGuard UAPI listener and its client.
public enum UnixSocket {
    static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) throws -> T {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw SystemError("use socket path", path: path, errno: Errno(ENAMETOOLONG))
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// Binds and listens at `path` (mode 0600 via umask). Returns the fd.
    public static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw SystemError("create socket for", path: path, errno: .current) }
        let old = umask(0o077)
        defer { umask(old) }
        let r = try withAddress(path) { bind(fd, $0, $1) }
        if r < 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("bind", path: path, errno: e)
        }
        if Glibc.listen(fd, 16) < 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("listen on", path: path, errno: e)
        }
        return fd
    }

    /// Binds and listens at `path` for any local user: the socket gets `mode`
    /// (0666 for the agent, whose callers are told apart by SO_PEERCRED). A
    /// stale socket left at `path` is replaced; anything else there is not.
    public static func listenShared(at path: String, mode: mode_t, backlog: Int32) throws -> Int32 {
        if let i = try FileSystem.info(path) {
            guard i.isSocket, i.owner == geteuid() else {
                throw SystemError("replace (not a socket of ours)", path: path, errno: Errno(EEXIST))
            }
            if isLive(path) { throw SystemError("listen on (another agent is serving it)", path: path, errno: Errno(EADDRINUSE)) }
            if unlink(path) != 0 { throw SystemError("remove stale socket", path: path, errno: .current) }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { throw SystemError("create socket for", path: path, errno: .current) }
        let old = umask(0o077)
        let r = try withAddress(path) { bind(fd, $0, $1) }
        let e = Errno.current
        umask(old)
        if r < 0 { close(fd); throw SystemError("bind", path: path, errno: e) }
        if chmod(path, mode) != 0 || Glibc.listen(fd, backlog) < 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("listen on", path: path, errno: e)
        }
        return fd
    }

    /// One pending connection, non-blocking and close-on-exec; nil when none is waiting.
    public static func accept(_ listener: Int32) throws -> Int32? {
        while true {
            let fd = vpn_accept(listener)
            if fd >= 0 { return fd }
            switch -fd {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            // The peer gave up between poll and accept: try the next one.
            case ECONNABORTED, EPROTO: continue
            default: throw SystemError("accept on", path: "socket", errno: Errno(-fd))
            }
        }
    }

    /// Connects to `path`. Returns the fd.
    public static func connect(to path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd < 0 { throw SystemError("create socket for", path: path, errno: .current) }
        let r = try withAddress(path) { Glibc.connect(fd, $0, $1) }
        if r < 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("connect to", path: path, errno: e)
        }
        return fd
    }

    /// True when something accepts connections at `path`.
    public static func isLive(_ path: String) -> Bool {
        guard let fd = try? connect(to: path) else { return false }
        close(fd)
        return true
    }

    /// Writes a request and reads until the peer closes or `terminator` ends the reply.
    public static func exchange(fd: Int32, request: String, terminator: [UInt8] = [0x0A, 0x0A], timeoutMs: Int32 = 2000) throws -> String {
        var bytes = Array(request.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("write", path: "socket", errno: .current)
            }
            offset += n
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let p = poll(&pfd, 1, timeoutMs)
            if p == 0 { throw SystemError("read reply from", path: "socket", errno: Errno(ETIMEDOUT)) }
            if p < 0 { if errno == EINTR { continue }; throw SystemError("poll", path: "socket", errno: .current) }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw SystemError("read", path: "socket", errno: .current) }
            if n == 0 { break }
            reply += chunk[0..<n]
            if reply.count >= terminator.count && Array(reply.suffix(terminator.count)) == terminator { break }
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// Sends all of `bytes` on a stream socket, going on after EINTR and
    /// short writes, never raising SIGPIPE; false once the peer is gone (or,
    /// with MSG_DONTWAIT in `flags`, once its buffer is full).
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], flags: Int32 = 0) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL) | flags) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// What one `receive` found.
    public enum Received: Equatable {
        /// This many bytes, at the start of the buffer.
        case bytes(Int)
        /// The peer closed its end.
        case closed
        /// Nothing to read now (EAGAIN).
        case empty
        case failed(Errno)
    }

    /// One recv(2) into `buffer` that never waits (MSG_DONTWAIT), going on
    /// after EINTR.
    public static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> Received {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { return .bytes(n) }
            if n == 0 { return .closed }
            let e = errno
            if e == EINTR { continue }
            return e == EAGAIN || e == EWOULDBLOCK ? .empty : .failed(Errno(e))
        }
    }

    /// Sets the socket's send buffer (SO_SNDBUF); with `force`, past the
    /// system's wmem_max (SO_SNDBUFFORCE, root only). False when refused.
    @discardableResult
    public static func setSendBuffer(_ fd: Int32, bytes: Int, force: Bool = false) -> Bool {
        var size = Int32(clamping: bytes)
        return setsockopt(fd, SOL_SOCKET, force ? SO_SNDBUFFORCE : SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// A connected pair of stream sockets (socketpair), both close-on-exec.
    public static func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) != 0 {
            throw SystemError("create", path: "a control socket pair", errno: .current)
        }
        return (fds[0], fds[1])
    }
}
