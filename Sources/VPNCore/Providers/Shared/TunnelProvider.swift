#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// Who makes the tunnel's interface.
public enum InterfaceOwnership: String, Sendable {
    /// vpnctl creates (and marks) the utun and hands it to the provider.
    case controllerCreates
    /// The provider makes its own interface (strongSwan's kernel-libipsec).
    case providerOwns
}

/// What a provider needs before anything starts; `start` checks each and
/// names what is missing.
public struct ProviderRequirements: Equatable, Sendable {
    /// The program the provider runs, found in PATH.
    public var program: String
    /// The Debian package that installs it.
    public var package: String
    /// Trust-anchor fingerprints the profile relies on.
    public var trustAnchors: [String]
    public var interface: InterfaceOwnership

    public init(program: String, package: String, trustAnchors: [String] = [], interface: InterfaceOwnership = .controllerCreates) {
        self.program = program
        self.package = package
        self.trustAnchors = trustAnchors
        self.interface = interface
    }
}

/// What a provider may consult when it checks a profile before a start.
public struct ProviderEnvironment {
    public var configDirectory: String
    /// Whether a network interface of that name exists in this namespace.
    public var interfaceExists: (String) -> Bool

    public init(configDirectory: String, interfaceExists: @escaping (String) -> Bool) {
        self.configDirectory = configDirectory
        self.interfaceExists = interfaceExists
    }

    /// The real system's view.
    public static func system(configDirectory: String) -> ProviderEnvironment {
        ProviderEnvironment(configDirectory: configDirectory) { name in
            ((try? NetlinkRouteSocket().linkIndex(named: name)) ?? nil) != nil
        }
    }
}

/// The NEPacketTunnelProvider analogue: one per protocol implementation. It
/// declares what it needs, checks a profile before anything starts, runs the
/// tunnel inside the supervisor (`makeTunnel`, on its one event loop), and removes its own leftovers after a dead
/// supervisor. Adding a transport means one such type and one line in
/// `ProviderRegistry.builtIn`.
public protocol TunnelProvider {
    /// The protocol and the implementation this provider registers under.
    static var kind: ProtocolConfiguration.Kind { get }
    static var implementation: String { get }
    /// Whether it is a transport vpnctl carries itself (false: the door
    /// through which third-party plugins are run, listed by their manifests).
    static var isBuiltInTransport: Bool { get }

    /// nil when the profile is not this provider's.
    init?(profile: Profile)

    var requirements: ProviderRequirements { get }

    /// Checks only this provider can make before anything is spawned; throws
    /// a `VPNError` naming the problem.
    func preflight(_ environment: ProviderEnvironment) throws

    /// Checks a secret value as `secret set` receives it (a WireGuard key must
    /// be a key); throws a `VPNError`.
    func checkSecret(name: String, value: [UInt8]) throws

    /// What to check when a start of this provider failed with `error`, when
    /// the provider knows better than the generic advice; nil otherwise.
    func advice(for error: ConnectionError.Kind) -> String?

    /// The tunnel for one run, driven by the supervisor's event loop.
    func makeTunnel(in context: TunnelContext) -> any ProviderTunnel

    /// Removes what a dead supervisor of this provider left that is the
    /// provider's own (sockets, run files), for the record's interface and id.
    static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String]

    /// The newest handshake of this provider's running tunnel on `interface`,
    /// for `status`; nil when the provider knows of none (never invented).
    func latestHandshake(interface: String) -> Date?
    /// Whether `latestHandshake` can say anything (nil then means "none yet").
    var reportsHandshakes: Bool { get }
}

extension TunnelProvider {
    public func preflight(_ environment: ProviderEnvironment) throws {}
    public func checkSecret(name: String, value: [UInt8]) throws {}
    public func advice(for error: ConnectionError.Kind) -> String? { nil }
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] { [] }
    public func latestHandshake(interface: String) -> Date? { nil }
    public var reportsHandshakes: Bool { false }
}

/// The providers this vpnctl has, keyed by protocol and implementation.
public enum ProviderRegistry {
    public static let builtIn: [any TunnelProvider.Type] = [WireGuardGoProvider.self, OpenVPNProvider.self, CharonProvider.self, PluginProvider.self]

    /// The provider that starts `profile`, or `providerUnavailable` naming
    /// what this vpnctl can start.
    public static func provider(for profile: Profile, among providers: [any TunnelProvider.Type] = builtIn) throws -> any TunnelProvider {
        for type in providers where type.kind == profile.protocol.kind {
            if let p = type.init(profile: profile) { return p }
        }
        let known = providers.map { "\($0.kind.rawValue) (\($0.implementation))" }.joined(separator: ", ")
        throw VPNError(.providerUnavailable, L("no provider for \(profile.protocol.kind.rawValue) profiles in this vpnctl"),
                       hint: L("this version starts: \(known)"))
    }

    /// Every provider's own clean-up after a dead supervisor.
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] {
        builtIn.flatMap { $0.cleanUp(after: record, runtime: runtime) }
    }
}

extension TunnelProvider {
    public static var isBuiltInTransport: Bool { true }
}
