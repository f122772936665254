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
        if text.hasPrefix("https://") { return .unsupported(L("is https, which vpnctl does not probe yet (the condition never matches)")) }
        guard let url = ProbeURL(text) else { return .failed(L("not an http:// URL")) }
        let deadline = monotonicMilliseconds() + timeoutMs
        guard let address = IPAddress(url.host) ?? Resolver.firstAddress(url.host) else {
            return .failed(L("cannot resolve \(url.host)"))
        }
        let socket: IPSocket
        do throws(SocketError) {
            socket = try IPSocket(ipv6: address.isIPv6, .tcp)
            try socket.connect(to: address.bytes, port: UInt16(url.port), deadlineMs: deadline)
        } catch {
            switch error {
            case .create(let e): return .failed(L("socket: \(e)"))
            case .timedOut: return .failed(L("no connection within \(timeoutMs) ms"))
            default: return .failed(L("connect: \(error)"))
            }
        }
        let hostHeader = address.isIPv6 && IPAddress(url.host) != nil ? "[\(url.host)]" : url.host
        let request = Array("GET \(url.path) HTTP/1.0\r\nHost: \(hostHeader)\r\nUser-Agent: vpnctl-ondemand\r\nConnection: close\r\n\r\n".utf8)
        do throws(SocketError) {
            try socket.send(request, deadlineMs: deadline)
        } catch {
            return .failed(error == .timedOut ? L("timed out sending") : L("send: \(error)"))
        }
        var reply: [UInt8] = []
        while reply.count < 8192 {
            if let end = headerEnd(reply) { return parse(Array(reply[..<end])) }
            let chunk: [UInt8]
            do throws(SocketError) {
                chunk = try socket.receive(limit: 2048, deadlineMs: deadline)
            } catch {
                // A reset ends the answer as a close does.
                if error == .timedOut { return .failed(L("no answer within \(timeoutMs) ms")) }
                break
            }
            if chunk.isEmpty { break }
            reply += chunk
        }
        return reply.isEmpty ? .failed(L("the connection closed without an answer")) : parse(reply)
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
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let code = Int(words[1]) else { return .failed(L("not an HTTP answer")) }
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
