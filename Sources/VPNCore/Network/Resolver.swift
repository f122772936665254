#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

public enum Resolver {
    /// getaddrinfo(3), first result.
    public static func firstAddress(_ host: String) -> IPAddress? {
        NameLookup.firstAddress(host).flatMap { IPAddress($0) }
    }
}
