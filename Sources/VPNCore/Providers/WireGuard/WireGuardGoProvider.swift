#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// WireGuard carried by wireguard-go on a utun vpnctl creates (see
/// `WireGuardTunnel` for the bring-up and `WireGuardGoSession` for the run).
public struct WireGuardGoProvider: TunnelProvider {
    public static let kind = ProtocolConfiguration.Kind.wireguard
    public static let implementation = "wireguard-go"
    let config: WireGuardConfiguration

    public init?(profile: Profile) {
        guard case .wireguard(let c) = profile.protocol else { return nil }
        config = c
    }

    public var requirements: ProviderRequirements {
        ProviderRequirements(program: "wireguard-go", package: "wireguard-go")
    }

    public func advice(for error: ConnectionError.Kind) -> String? {
        error == .serverNotResponding
            ? "check that the server is up and reachable, and that its public key matches this profile's peer" : nil
    }

    public func preflight(_ environment: ProviderEnvironment) throws {
        if let name = config.interfaceName, environment.interfaceExists(name) {
            throw VPNError(.configurationInvalid, L("interface \(name) already exists; vpnctl only creates new interfaces"),
                           hint: L("remove interfaceName from the profile, or choose a name that is free"))
        }
    }

    public func checkSecret(name: String, value: [UInt8]) throws {
        guard name == config.privateKeySecret || config.peers.contains(where: { $0.presharedKeySecret == name }) else { return }
        guard let text = String(validating: value, as: UTF8.self), WireGuardKey.isValid(text) else {
            throw VPNError(.configurationInvalid, L("the value for '\(name)' is not a WireGuard key (44 characters of base64 encoding 32 bytes)"),
                           hint: L("generate one with: wg genkey"))
        }
    }

    public func makeTunnel(in context: TunnelContext) -> any ProviderTunnel {
        WireGuardGoSession(context: context, config: config, program: requirements.program)
    }

    /// A UAPI socket nobody answers on is left over from a dead wireguard-go.
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] {
        guard let name = record.interface, InterfaceName.isValid(name) else { return [] }
        let sock = KernelTunnelSystem.uapiPath(name)
        guard FileSystem.exists(sock), !UnixSocket.isLive(sock), unlink(sock) == 0 else { return [] }
        return ["removed \(sock)"]
    }
}
