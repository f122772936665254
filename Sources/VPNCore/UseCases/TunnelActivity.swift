#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What a running tunnel has done, as `status` reports it (`wg show`'s
/// "latest handshake" and "transfer"): the newest handshake its provider
/// knows of, and the tunnel interface's counters, the kernel's (inner
/// traffic, the numbers `stats` prints for the interface).
public struct TunnelActivity: Codable, Equatable, Sendable {
    /// nil when the provider knows of none (no handshake yet, or a provider
    /// that does not say: OpenVPN, IKEv2, plugins).
    public var latestHandshake: Date?
    /// Whether the provider reports handshakes: a nil `latestHandshake` then
    /// means none yet.
    public var reportsHandshakes: Bool
    public var rxBytes: UInt64
    public var txBytes: UInt64

    public init(latestHandshake: Date?, reportsHandshakes: Bool, rxBytes: UInt64, txBytes: UInt64) {
        self.latestHandshake = latestHandshake
        self.reportsHandshakes = reportsHandshakes || latestHandshake != nil
        self.rxBytes = rxBytes
        self.txBytes = txBytes
    }

    /// The activity of an active tunnel: nil when it has no interface yet,
    /// or its interface is not the one the record names (gone, or another
    /// with its name): counters of another interface would be a lie.
    public static func read(_ d: DerivedStatus, profile: Profile) -> TunnelActivity? {
        guard d.isActive, let name = d.interface, let index = d.record?.ifindex else { return nil }
        let rx: UInt64, tx: UInt64
        if let pid = d.record?.supervisorPid, !SystemSupervisorHost().sharesNetworkNamespace(with: pid) {
            // A tunnel in another network namespace: its counters are in its
            // supervisor's view of /proc/net/dev, where the name is its own.
            guard let c = (try? ProcNetDev.read(path: "/proc/\(pid)/net/dev"))?.first(where: { $0.name == name }) else { return nil }
            (rx, tx) = (c.rxBytes, c.txBytes)
        } else {
            let link: LinkRecord?
            do { link = try LinkDump.link(named: name, counters: true) } catch { return nil }
            guard let link, link.ifindex == index, let c = link.counters else { return nil }
            (rx, tx) = (c.rxBytes, c.txBytes)
        }
        // A profile no provider of this vpnctl runs has no word on handshakes.
        let provider = try? ProviderRegistry.provider(for: profile)
        return TunnelActivity(latestHandshake: provider?.latestHandshake(interface: name), reportsHandshakes: provider?.reportsHandshakes ?? false,
                              rxBytes: rx, txBytes: tx)
    }
}
