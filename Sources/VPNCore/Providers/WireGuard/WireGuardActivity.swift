#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A WireGuard tunnel's peers as wireguard-go's UAPI socket reports them
/// (`wg show` reads the same): the newest handshake, which `status` shows,
/// and the peers' transfer (the reply's private key is never kept or shown).
public struct WireGuardActivity: Equatable, Sendable {
    public var latestHandshake: Date?
    public var rxBytes: UInt64
    public var txBytes: UInt64

    public init(peers: [WireGuardUAPI.PeerStatus]) {
        // last_handshake_time_sec/nsec; 0 is "never".
        let newest = peers.filter { $0.lastHandshakeSec > 0 }
            .map { TimeInterval($0.lastHandshakeSec) + TimeInterval($0.lastHandshakeNsec) / 1e9 }.max()
        latestHandshake = newest.map { Date(timeIntervalSince1970: $0) }
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

extension WireGuardGoProvider {
    /// The newest handshake of any peer, from wireguard-go's UAPI socket.
    public func latestHandshake(interface: String) -> Date? {
        WireGuardActivity.read(interface: interface)?.latestHandshake
    }

    public var reportsHandshakes: Bool { true }
}
