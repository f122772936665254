#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// One DNS question (type A, or AAAA) over UDP to one server, for `verify
/// --dns`: the message is built and read here, with no resolver library in
/// between, so the answer comes from the server asked and from no other.
public enum DNSQuery {
    /// The query message (RFC 1035 4.1): header, one question, recursion desired.
    public static func message(id: UInt16, name: String, type: UInt16 = 1) -> [UInt8]? {
        var m: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        guard !name.contains(".."), !name.hasPrefix(".") else { return nil }
        for label in name.split(separator: ".") {
            let bytes = Array(label.utf8)
            guard !bytes.isEmpty, bytes.count < 64 else { return nil }
            m.append(UInt8(bytes.count))
            m += bytes
        }
        guard m.count - 12 < 255 else { return nil }
        m += [0, UInt8(type >> 8), UInt8(type & 0xff), 0, 1]
        return m
    }

    public enum Answer: Equatable, Sendable {
        case addresses([String])
        /// The server answered with an error code (3: NXDOMAIN) or no address.
        case failed(rcode: Int)
        case malformed
    }

    /// Reads an answer to the query `id`: the addresses of its A and AAAA records.
    public static func parse(_ b: [UInt8], id: UInt16) -> Answer {
        guard b.count >= 12, UInt16(b[0]) << 8 | UInt16(b[1]) == id, b[2] & 0x80 != 0 else { return .malformed }
        let rcode = Int(b[3] & 0x0f)
        let qd = Int(b[4]) << 8 | Int(b[5]), an = Int(b[6]) << 8 | Int(b[7])
        var i = 12
        func skipName() -> Bool {
            while i < b.count {
                let len = Int(b[i])
                if len == 0 { i += 1; return true }
                if len & 0xc0 == 0xc0 { i += 2; return i <= b.count }
                i += 1 + len
            }
            return false
        }
        for _ in 0..<qd { guard skipName(), i + 4 <= b.count else { return .malformed }; i += 4 }
        var out: [String] = []
        for _ in 0..<an {
            guard skipName(), i + 10 <= b.count else { return .malformed }
            let type = Int(b[i]) << 8 | Int(b[i + 1])
            let len = Int(b[i + 8]) << 8 | Int(b[i + 9])
            i += 10
            guard i + len <= b.count else { return .malformed }
            let data = Array(b[i..<(i + len)])
            if (type == 1 && len == 4) || (type == 28 && len == 16), let ip = IPAddress(bytes: data) { out.append(ip.description) }
            i += len
        }
        if rcode != 0 || out.isEmpty { return .failed(rcode: rcode) }
        return .addresses(out)
    }

    /// Asks `server` (port 53) for `name`; bounded by `timeoutMs`.
    public static func ask(_ server: IPAddress, name: String, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        let id = UInt16.random(in: 1...UInt16.max)
        guard let query = message(id: id, name: name, type: server.isIPv6 ? 28 : 1) else { return (false, L("'\(name)' is not a domain name")) }
        let started = monotonicMilliseconds()
        let deadline = started + Int64(timeoutMs)
        let socket: IPSocket
        do throws(SocketError) {
            socket = try IPSocket(ipv6: server.isIPv6, .udp)
            try socket.connect(to: server.bytes, port: 53, deadlineMs: deadline)
        } catch {
            if case .create(let e) = error { return (false, L("socket: \(e)")) }
            return (false, L("connect to \(server) port 53: \(error)"))
        }
        do throws(SocketError) {
            try socket.send(query, deadlineMs: deadline)
        } catch {
            return (false, L("send to \(server) port 53: \(error)"))
        }
        while true {
            let answer: [UInt8]
            do throws(SocketError) {
                answer = try socket.receive(limit: 1500, deadlineMs: deadline)
            } catch {
                if error == .timedOut { return (false, L("no answer from \(server) for \(name) within \(timeoutMs) ms")) }
                return (false, L("no answer from \(server) for \(name): \(error)"))
            }
            switch parse(answer, id: id) {
            case .malformed: continue  // not the answer to this query
            case .failed(let rcode):
                switch rcode {
                case 3: return (false, L("\(server) answered \(name) with NXDOMAIN"))
                case 0: return (false, L("\(server) answered \(name) with no address"))
                default: return (false, L("\(server) answered \(name) with error \(rcode)"))
                }
            case .addresses(let a):
                return (true, L("\(name) is \(a.joined(separator: ", ")) (answered by \(server) in \(monotonicMilliseconds() - started) ms)"))
            }
        }
    }
}
