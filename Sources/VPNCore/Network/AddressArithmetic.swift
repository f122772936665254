#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

extension IPAddress {
    init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        bytes.withUnsafeBytes { raw in
            _ = inet_ntop(bytes.count == 16 ? AF_INET6 : AF_INET, raw.baseAddress, &buf, socklen_t(buf.count))
        }
        self.init(String(cString: buf))
    }
}

extension CIDR {
    /// The prefix with host bits cleared ("10.9.0.2/24" -> "10.9.0.0/24").
    public var network: CIDR {
        var bytes = address.bytes
        for i in 0..<bytes.count {
            let bitsBefore = i * 8
            if bitsBefore >= prefixLength { bytes[i] = 0 }
            else if bitsBefore + 8 > prefixLength { bytes[i] &= UInt8(truncatingIfNeeded: 0xFF << (8 - (prefixLength - bitsBefore))) }
        }
        return CIDR(IPAddress(bytes: bytes)!.description + "/\(prefixLength)")!
    }

    public func contains(_ ip: IPAddress) -> Bool {
        guard ip.isIPv6 == address.isIPv6 else { return false }
        return CIDR("\(ip)/\(prefixLength)")!.network == network
    }
}
