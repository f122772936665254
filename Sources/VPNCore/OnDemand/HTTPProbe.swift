#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A probe URL, parsed: plain http only.
public struct ProbeURL: Equatable, Sendable {
    public var host: String
    public var port: Int
    public var path: String

    /// nil for anything but `http://host[:port][/path]`.
    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var p = String(rest.dropFirst(authority.count).prefix { $0 != "#" })
        if p.isEmpty || p.hasPrefix("?") { p = "/" + p }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.isEmpty { port = 80 } else {
                guard after.hasPrefix(":"), let n = Int(after.dropFirst()), (1...65535).contains(n) else { return nil }
                port = n
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let n = Int(authority[authority.index(after: colon)...]), (1...65535).contains(n) else { return nil }
            port = n
        } else {
            host = String(authority)
            port = 80
        }
        guard !host.isEmpty, !p.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" }) else { return nil }
        path = p
    }

    /// The host of any http or https URL, for the save-time checks.
    public static func host(of text: String) -> String? {
        let scheme = text.hasPrefix("https://") ? 8 : text.hasPrefix("http://") ? 7 : 0
        guard scheme > 0 else { return nil }
        var authority = text.dropFirst(scheme).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        if let colon = authority.lastIndex(of: ":") { return String(authority[..<colon]) }
        return authority.isEmpty ? nil : String(authority)
    }
}

/// A probe-URL request: one GET over plain HTTP/1.0, bounded by a timeout;
/// matches only on 200 without a redirect.
public enum HTTPProbe {
    public static let defaultTimeoutMs: Int64 = 2000

    public static func probe(_ text: String, timeoutMs: Int64 = defaultTimeoutMs) -> ProbeResult {
        if text.hasPrefix("https://") { return .unsupported("is https, which vpnctl does not probe yet (the condition never matches)") }
        guard let url = ProbeURL(text) else { return .failed("not an http:// URL") }
        let deadline = monotonicMilliseconds() + timeoutMs
        guard let address = IPAddress(url.host) ?? Resolver.firstAddress(url.host) else {
            return .failed("cannot resolve \(url.host)")
        }
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { return .failed("socket: \(Errno.current)") }
        defer { close(fd) }
        var r: Int32
        if address.isIPv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = in_port_t(UInt16(url.port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin6_addr) { for i in 0..<16 { $0[i] = address.bytes[i] } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = in_port_t(UInt16(url.port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin_addr) { for i in 0..<4 { $0[i] = address.bytes[i] } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        if r < 0 && errno != EINPROGRESS { return .failed("connect: \(Errno.current)") }
        func wait(_ events: Int32) -> Bool {
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            var p = pollfd(fd: fd, events: Int16(events), revents: 0)
            return poll(&p, 1, Int32(left)) > 0
        }
        guard wait(Int32(POLLOUT)) else { return .failed("no connection within \(timeoutMs) ms") }
        var soError: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
        if soError != 0 { return .failed("connect: \(Errno(soError))") }
        let hostHeader = address.isIPv6 && IPAddress(url.host) != nil ? "[\(url.host)]" : url.host
        let request = Array("GET \(url.path) HTTP/1.0\r\nHost: \(hostHeader)\r\nUser-Agent: vpnctl-ondemand\r\nConnection: close\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { guard wait(Int32(POLLOUT)) else { return .failed("timed out sending") }; continue }
            if n <= 0 { return .failed("send: \(Errno.current)") }
            sent += n
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while reply.count < 8192 {
            if let end = headerEnd(reply) { return parse(Array(reply[..<end])) }
            guard wait(Int32(POLLIN)) else { return .failed("no answer within \(timeoutMs) ms") }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            if n <= 0 { break }
            reply += chunk[0..<n]
        }
        return reply.isEmpty ? .failed("the connection closed without an answer") : parse(reply)
    }

    static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    /// The status line and a Location header of an HTTP answer's head.
    public static func parse(_ head: [UInt8]) -> ProbeResult {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let words = lines.first?.split(separator: " ") ?? []
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let code = Int(words[1]) else { return .failed("not an HTTP answer") }
        let location = lines.dropFirst().first { $0.lowercased().hasPrefix("location:") }
            .map { String($0.dropFirst(9)).trimmedWhitespace }
        if (300...399).contains(code) { return .redirect(code, location: location) }
        return code == 200 ? .ok : .status(code)
    }
}

extension ProbeResult {
    /// One line for the agent's probe worker: kind, code, detail (tabs and
    /// line breaks in the detail become spaces).
    public var line: String {
        let (kind, code, detail): (String, Int, String)
        switch self {
        case .ok: (kind, code, detail) = ("ok", 200, "")
        case .status(let c): (kind, code, detail) = ("status", c, "")
        case .redirect(let c, let l): (kind, code, detail) = ("redirect", c, l ?? "")
        case .failed(let why): (kind, code, detail) = ("failed", 0, why)
        case .unsupported(let why): (kind, code, detail) = ("unsupported", 0, why)
        }
        return "\(kind)\t\(code)\t\(String(detail.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 }))"
    }

    public init?(line: Substring) {
        let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
        guard f.count == 3, let code = Int(f[1]) else { return nil }
        let detail = String(f[2])
        switch f[0] {
        case "ok": self = .ok
        case "status": self = .status(code)
        case "redirect": self = .redirect(code, location: detail.isEmpty ? nil : detail)
        case "failed": self = .failed(detail)
        case "unsupported": self = .unsupported(detail)
        default: return nil
        }
    }
}
