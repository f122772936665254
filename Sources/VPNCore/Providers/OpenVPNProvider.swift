#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// OpenVPN 2.6 attached by name to a persistent utun vpnctl creates, driven
/// over a management socket (see `Supervisor.runOpenVPN`).
public struct OpenVPNProvider: TunnelProvider {
    public static let kind = ProtocolConfiguration.Kind.openvpn
    public static let implementation = "openvpn"
    let config: OpenVPNConfiguration

    public init?(profile: Profile) {
        guard case .openvpn(let c) = profile.protocol else { return nil }
        config = c
    }

    public var requirements: ProviderRequirements {
        ProviderRequirements(program: "openvpn", package: "openvpn", trustAnchors: config.caFingerprint.map { [$0] } ?? [])
    }

    public func preflight(_ environment: ProviderEnvironment) throws {
        let trust = TrustStore(configDirectory: environment.configDirectory)
        for fp in requirements.trustAnchors where !trust.exists(fp) {
            throw VPNError(.configurationInvalid, "the profile trusts anchor \(fp), which is not installed",
                           hint: "import the profile again, or install the CA as \(trust.path(fp))")
        }
    }

    public func run(in supervisor: Supervisor, store: PreferencesStore, signalFD: Int32) -> Int32 {
        supervisor.runOpenVPN(config, program: requirements.program, store: store, signalFD: signalFD)
    }

    /// The run-only files of one run: config, client certificate, management socket.
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] {
        RuntimeStore.ProviderFile.allCases.compactMap { kind in
            let path = runtime.providerFile(record.id, kind)
            return unlink(path) == 0 ? "removed \(path)" : nil
        }
    }
}
