#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A bounded TCP connect, optionally followed by an HTTP/1.0 GET.
public enum TCPProbe {
    /// `mark`: the probe's socket carries it (SO_MARK), as a program under
    /// include-mode app rules has its packets marked.
    public static func run(address: IPAddress, port: Int, httpPath: String?, host: String, timeoutMs: Int32,
                           mark: UInt32? = nil) -> (ok: Bool, detail: String) {
        let started = monotonicMilliseconds()
        let deadline = started + Int64(timeoutMs)
        let target = address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
        let socket: IPSocket
        do throws(SocketError) {
            socket = try IPSocket(ipv6: address.isIPv6, .tcp)
            if let mark { try socket.setMark(mark) }
            try socket.connect(to: address.bytes, port: UInt16(port), deadlineMs: deadline)
        } catch {
            switch error {
            case .create(let e): return (false, L("socket: \(e)"))
            case .option(let e): return (false, L("socket mark: \(e)"))
            case .timedOut: return (false, L("connect to \(target): timed out after \(timeoutMs) ms"))
            default: return (false, L("connect to \(target): \(error)"))
            }
        }
        let connectMs = monotonicMilliseconds() - started
        guard let path = httpPath else { return (true, L("TCP connect to \(target) in \(connectMs) ms")) }
        let get = "GET http://\(host):\(port)\(path)"
        let request = "GET \(path) HTTP/1.0\r\nHost: \(host)\r\nUser-Agent: vpnctl-verify\r\nConnection: close\r\n\r\n"
        var reply: [UInt8] = []
        do throws(SocketError) {
            try socket.send(Array(request.utf8), deadlineMs: deadline)
            while reply.count < 256 && !reply.contains(0x0A) {
                let chunk = try socket.receive(limit: 4096, deadlineMs: deadline)
                if chunk.isEmpty { break }
                reply += chunk
            }
        } catch {
            switch error {
            case .timedOut: return (false, L("\(get): no answer within \(timeoutMs) ms"))
            case .send: return (false, L("\(get): send: \(error)"))
            default: break  // a reset ends the answer as a close does
            }
        }
        let statusLine = String(decoding: reply.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]) else {
            return (false, L("\(get): not an HTTP answer"))
        }
        let ok = (200..<400).contains(code)
        return (ok, L("\(get): HTTP \(code) in \(monotonicMilliseconds() - started) ms"))
    }
}
