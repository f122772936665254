#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// OpenVPN 2.6 attached by name to a persistent utun vpnctl creates, driven
/// over a management socket (see `OpenVPNTunnel`).
public struct OpenVPNProvider: TunnelProvider {
    public static let kind = ProtocolConfiguration.Kind.openvpn
    public static let implementation = "openvpn"
    let config: OpenVPNConfiguration

    public init?(profile: Profile) {
        guard case .openvpn(let c) = profile.protocol else { return nil }
        config = c
    }

    public var requirements: ProviderRequirements {
        ProviderRequirements(program: "openvpn", package: "openvpn", trustAnchors: config.caFingerprints)
    }

    public func advice(for error: ConnectionError.Kind) -> String? {
        error == .serverNotResponding
            ? "check that the server is up and reachable on its port and protocol (udp/tcp), and that its tls-crypt/tls-auth key matches this profile's"
            : nil
    }

    /// Each anchor must be installed and be exactly the one certificate its
    /// name stands for (the supervisor checks again when it builds the bundle).
    public func preflight(_ environment: ProviderEnvironment) throws {
        _ = try TrustStore(configDirectory: environment.configDirectory).bundle(requirements.trustAnchors)
    }

    public func makeTunnel(in context: TunnelContext) -> any ProviderTunnel {
        OpenVPNTunnel(context: context, config: config, program: requirements.program)
    }

    /// The run-only files of one run: config, client certificate, CA bundle, management socket.
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] {
        RuntimeStore.ProviderFile.allCases.compactMap { kind in
            let path = runtime.providerFile(record.id, kind)
            return unlink(path) == 0 ? "removed \(path)" : nil
        }
    }
}
