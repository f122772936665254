#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// An IPv4 or IPv6 address, parsed with inet_pton(3). Text with a NUL in it
/// is refused: inet_pton would read only up to the NUL ("fd00::\0junk").
public struct IPAddress: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]
    public var isIPv6: Bool { bytes.count == 16 }

    public init?(_ text: String) {
        if text.utf8.contains(0) { return nil }
        if text.contains(":") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, text, &a) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &a) { Array($0) }
        } else {
            var a = in_addr()
            // inet_pton rejects the shorthand forms ("10.1") that inet_aton accepts.
            guard inet_pton(AF_INET, text, &a) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &a) { Array($0) }
        }
    }

    public var description: String {
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in
            _ = inet_ntop(isIPv6 ? AF_INET6 : AF_INET, raw.baseAddress, &buf, socklen_t(buf.count))
        }
        return String(cString: buf)
    }
}

/// An address with a prefix length, as in "10.0.0.2/32" or "fd00::2/128".
public struct CIDR: Equatable, Hashable, Sendable, CustomStringConvertible {
    public let address: IPAddress
    public let prefixLength: Int

    /// A bare address means a host prefix (/32 or /128), as wg-quick reads it.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(String(parts[0])) else { return nil }
        let maxLength = address.isIPv6 ? 128 : 32
        if parts.count == 2 {
            let p = parts[1]
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), p.allSatisfy(\.isNumber),
                  let n = Int(p), n <= maxLength else { return nil }
            prefixLength = n
        } else {
            prefixLength = maxLength
        }
        self.address = address
    }

    public var description: String { "\(address)/\(prefixLength)" }
}

/// A peer endpoint: "host:port" or "[v6]:port". The host may be a name.
public struct Endpoint: Equatable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        case missingPort, badPort, badHost

        public var description: String {
            switch self {
            case .missingPort: return "missing :port"
            case .badPort: return "the port is not a number from 1 to 65535"
            case .badHost: return "the host is not an address or a host name"
            }
        }
    }

    public static func parse(_ text: String) -> Result<Endpoint, Problem> {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return .failure(.badHost) }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return .failure(.missingPort) }
            portText = rest.dropFirst()
            guard IPAddress(String(host))?.isIPv6 == true else { return .failure(.badHost) }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return .failure(.missingPort) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") || !Endpoint.isHostName(host) { return .failure(.badHost) }
        }
        guard let port = parsePort(portText) else { return .failure(.badPort) }
        return .success(Endpoint(host: String(host), port: port))
    }

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// A DNS name or an IPv4 address as text: ASCII letters, digits, '.' and
    /// '-', at most 253 characters.
    public static func isHostName<S: StringProtocol>(_ host: S) -> Bool {
        !host.isEmpty && host.count <= 253 && host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

func parsePort<S: StringProtocol>(_ text: S) -> Int? {
    guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
          let n = Int(text), (1...65535).contains(n) else { return nil }
    return n
}

/// WireGuard keys: 32 bytes, base64 in profiles and wg-quick files, hex on UAPI.
public enum WireGuardKey {
    public static func decode(_ base64: String) -> [UInt8]? {
        guard base64.count == 44, base64.hasSuffix("="),
              let data = Data(base64Encoded: base64), data.count == 32 else { return nil }
        return Array(data)
    }

    public static func isValid(_ base64: String) -> Bool { decode(base64) != nil }

    public static func hex(_ base64: String) -> String? {
        decode(base64).map { bytes in bytes.map { b in
            let s = String(b, radix: 16)
            return b < 16 ? "0" + s : s
        }.joined() }
    }

    /// A short, safe label for a public key in messages: its first 8 characters.
    public static func label(_ base64: String) -> String {
        base64.count > 8 ? String(base64.prefix(8)) + "…" : base64
    }
}
