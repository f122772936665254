#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A bounded TCP connect, optionally followed by an HTTP/1.0 GET.
public enum TCPProbe {
    public static func run(address: IPAddress, port: Int, httpPath: String?, host: String, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { return (false, "socket: \(Errno.current)") }
        defer { close(fd) }
        let started = monotonicMilliseconds()
        var r: Int32
        if address.isIPv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in for (i, b) in address.bytes.enumerated() { raw[i] = b } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin_addr) { raw in for (i, b) in address.bytes.enumerated() { raw[i] = b } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        let target = address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
        if r < 0 && errno != EINPROGRESS { return (false, "connect to \(target): \(Errno.current)") }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        if poll(&pfd, 1, timeoutMs) <= 0 { return (false, "connect to \(target): timed out after \(timeoutMs) ms") }
        var soError: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
        if soError != 0 { return (false, "connect to \(target): \(Errno(soError))") }
        let connectMs = monotonicMilliseconds() - started
        guard let path = httpPath else { return (true, "TCP connect to \(target) in \(connectMs) ms") }
        let request = "GET \(path) HTTP/1.0\r\nHost: \(host)\r\nUser-Agent: vpnctl-verify\r\nConnection: close\r\n\r\n"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        var reply: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = started + Int64(timeoutMs)
        while reply.count < 256 && !reply.contains(0x0A) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline - monotonicMilliseconds()
            if left <= 0 || poll(&p, 1, Int32(left)) <= 0 { return (false, "GET http://\(host):\(port)\(path): no answer within \(timeoutMs) ms") }
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            reply += buf[0..<n]
        }
        let statusLine = String(decoding: reply.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]) else {
            return (false, "GET http://\(host):\(port)\(path): not an HTTP answer")
        }
        let ok = (200..<400).contains(code)
        return (ok, "GET http://\(host):\(port)\(path): HTTP \(code) in \(monotonicMilliseconds() - started) ms")
    }
}
