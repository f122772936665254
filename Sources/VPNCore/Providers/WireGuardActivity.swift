#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What `status` shows of a WireGuard tunnel at a terminal: the newest
/// handshake and the transfer, read from wireguard-go's UAPI socket as
/// `wg show` reads them (the reply's private key is never kept or shown).
public struct WireGuardActivity: Equatable, Sendable {
    public var latestHandshake: Date?
    public var rxBytes: UInt64
    public var txBytes: UInt64

    public init(peers: [WireGuardUAPI.PeerStatus]) {
        let newest = peers.map { $0.lastHandshakeSec }.max() ?? 0
        latestHandshake = newest > 0 ? Date(timeIntervalSince1970: TimeInterval(newest)) : nil
        rxBytes = peers.reduce(0) { $0 &+ $1.rxBytes }
        txBytes = peers.reduce(0) { $0 &+ $1.txBytes }
    }

    /// nil when nothing answers on the interface's socket in time: status
    /// must never hang on a stuck provider.
    public static func read(interface: String, timeoutMs: Int32 = 300) -> WireGuardActivity? {
        guard let fd = try? UnixSocket.connect(to: KernelTunnelSystem.uapiPath(interface)) else { return nil }
        defer { close(fd) }
        guard let reply = try? UnixSocket.exchange(fd: fd, request: "get=1\n\n", timeoutMs: timeoutMs),
              let peers = try? WireGuardUAPI.parseGet(reply) else { return nil }
        return WireGuardActivity(peers: peers)
    }
}
