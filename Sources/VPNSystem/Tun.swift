#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

public enum TunError: Error, CustomStringConvertible, Sendable {
    /// vpnctl only ever creates new interfaces: attaching to an existing tun
    /// would take over (and on rollback delete) somebody else's device.
    case exists(String)

    public var description: String {
        switch self {
        case .exists(let name): return "interface \(name) already exists; vpnctl only creates new interfaces"
        }
    }
}

/// A tun interface the controller creates itself: open /dev/net/tun, then
/// TUNSETIFF through the C shim (the _IOW macros do not import).
public struct TunDevice {
    public let fd: Int32
    public let name: String

    /// wireguard-go 0.0.20220316 (Debian) expects packet information, so
    /// `packetInformation` must stay true for it.
    public static func create(name: String, packetInformation: Bool = true, persistent: Bool = false) throws -> TunDevice {
        let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
        if fd < 0 { throw SystemError("open", path: "/dev/net/tun", errno: .current) }
        var buffer = Array(name.utf8CString)
        buffer += [CChar](repeating: 0, count: max(0, 16 - buffer.count))
        let r = buffer.withUnsafeMutableBufferPointer { vpn_tun_set_iff(fd, $0.baseAddress, 16, packetInformation ? 0 : 1) }
        if r == -EBUSY {
            close(fd)
            throw TunError.exists(name)
        }
        if r < 0 {
            close(fd)
            throw SystemError("create tun interface", path: name, errno: Errno(-r))
        }
        if persistent {
            let p = vpn_tun_set_persist(fd, 1)
            if p < 0 {
                close(fd)
                throw SystemError("make persistent", path: name, errno: Errno(-p))
            }
        }
        return TunDevice(fd: fd, name: String(cString: buffer))
    }
}
