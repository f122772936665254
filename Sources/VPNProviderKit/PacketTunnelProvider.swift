#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// The NEPacketTunnelProvider analogue for vpnctl plugins. Subclass it,
/// implement `startTunnel(options:completionHandler:)` and
/// `stopTunnel(with:completionHandler:)`, and call `YourProvider.main()`.
/// vpnctl's supervisor runs the plugin as the manifest's unprivileged user
/// with the utun as fd 3 and its control socket as fd 4 (vpnctl-provider(7));
/// this class speaks that protocol. Everything runs on one thread, on `loop`.
open class PacketTunnelProvider {
    /// The packets of the tunnel (fd 3).
    public let packetFlow: PacketTunnelFlow
    /// The loop every callback runs on; watch your transport's sockets here.
    public let loop: ProviderLoop
    /// The profile's providerConfiguration and serverAddress, once `start` came.
    public private(set) var protocolConfiguration = TunnelProviderProtocol()
    /// The utun's name (for messages; the fd is what carries packets).
    public private(set) var interfaceName = ""

    let control: ControlChannel
    var nextID = 1
    var settingsReplies: [Int: (Error?) -> Void] = [:]
    var secretReplies: [Int: (Result<String, Error>) -> Void] = [:]
    var started = false
    var stopping = false

    public required init() {
        loop = ProviderLoop()
        packetFlow = PacketTunnelFlow(fd: 3, loop: loop)
        control = ControlChannel(fd: 4)
    }

    /// Starts the transport; call the handler with nil once the tunnel
    /// carries traffic (vpnctl reports connected), or with the error.
    open func startTunnel(options: [String: String]?, completionHandler: @escaping (Error?) -> Void) {
        completionHandler(nil)
    }

    /// Stops the transport; the process ends after the handler is called.
    open func stopTunnel(with reason: ProviderStopReason, completionHandler: @escaping () -> Void) {
        completionHandler()
    }

    /// Addresses, routes, excluded routes, DNS and MTU, applied by vpnctl's
    /// settings applier; the handler gets nil or the reason they were not.
    public func setTunnelNetworkSettings(_ settings: PacketTunnelNetworkSettings?, completionHandler: @escaping (Error?) -> Void) {
        let id = takeID()
        settingsReplies[id] = completionHandler
        let s = settings ?? PacketTunnelNetworkSettings()
        control.send(Outgoing(type: "setTunnelNetworkSettings", id: id, addresses: s.addresses, routes: s.routes,
                              excludedRoutes: s.excludedRoutes, dns: s.dnsServers, mtu: s.mtu))
    }

    /// One of the profile's secrets, by its providerConfiguration key (the
    /// keys the profile's `secrets` names). The value is never logged by vpnctl.
    public func secret(_ key: String, completionHandler: @escaping (Result<String, Error>) -> Void) {
        let id = takeID()
        secretReplies[id] = completionHandler
        control.send(Outgoing(type: "secret", id: id, name: key))
    }

    /// While true, vpnctl reports `reasserting`; set it back to false once
    /// the transport works again.
    public var reasserting = false {
        didSet {
            guard reasserting != oldValue, started else { return }
            control.send(Outgoing(type: "status", status: reasserting ? "reasserting" : "connected"))
        }
    }

    /// Ends the tunnel from the provider's side: the error (a `TunnelError`
    /// carries an NEVPNConnectionError name; any other is `pluginFailed`)
    /// becomes the tunnel's last-disconnect error. The process ends.
    public func cancelTunnelWithError(_ error: Error?) -> Never {
        if let error {
            let e = error as? TunnelError ?? TunnelError(.pluginFailed, "\(error)")
            control.send(Outgoing(type: "error", name: e.code.rawValue, message: e.message))
        }
        exit(error == nil ? 0 : 1)
    }

    /// A line for the supervisor's log (stderr is the log).
    public func log(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    /// Runs a provider of this class until it is stopped.
    public static func main() -> Never {
        signal(SIGPIPE, SIG_IGN)
        let provider = Self()
        provider.run()
    }

    func run() -> Never {
        loop.watch(control.fd) { [self] in
            let (messages, closed) = control.receive()
            for m in messages { handle(m) }
            if closed {
                // The supervisor is gone or closed on us: nothing to report to.
                exit(stopping ? 0 : 1)
            }
        }
        loop.run()
        exit(0)
    }

    func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    func handle(_ m: Incoming) {
        switch m.type {
        case "start" where !started:
            started = true
            protocolConfiguration = TunnelProviderProtocol(providerConfiguration: m.providerConfiguration ?? [:],
                                                           serverAddress: m.serverAddress)
            interfaceName = m.interface ?? ""
            control.send(Outgoing(type: "status", status: "connecting"))
            startTunnel(options: nil) { [self] error in
                if let error { cancelTunnelWithError(error) }
                control.send(Outgoing(type: "status", status: reasserting ? "reasserting" : "connected"))
            }
        case "stop" where !stopping:
            stopping = true
            stopTunnel(with: ProviderStopReason(rawValue: m.reason ?? "none")) { exit(0) }
        case "setTunnelNetworkSettings":
            guard let id = m.id, let reply = settingsReplies.removeValue(forKey: id) else { return }
            reply(m.ok == true ? nil : TunnelError(.configurationFailed, m.error ?? "the settings were not applied"))
        case "secret":
            guard let id = m.id, let reply = secretReplies.removeValue(forKey: id) else { return }
            if let value = m.value { reply(.success(value)) } else {
                reply(.failure(TunnelError(.configurationFailed, m.error ?? "no secret '\(m.name ?? "")'")))
            }
        default:
            log("[!] unexpected message from vpnctl: \(m.type)")
        }
    }
}

/// NETunnelProviderProtocol's part a provider reads.
public struct TunnelProviderProtocol: Sendable {
    public var providerConfiguration: [String: String] = [:]
    public var serverAddress: String?
    public init(providerConfiguration: [String: String] = [:], serverAddress: String? = nil) {
        self.providerConfiguration = providerConfiguration
        self.serverAddress = serverAddress
    }
}

/// NEPacketTunnelNetworkSettings, flattened: CIDR strings throughout.
public struct PacketTunnelNetworkSettings: Sendable {
    /// "198.19.20.2/32", with the host part.
    public var addresses: [String] = []
    /// Prefixes routed into the tunnel.
    public var routes: [String] = []
    /// Prefixes kept on the route they have now.
    public var excludedRoutes: [String] = []
    public var dnsServers: [String] = []
    public var mtu: Int?
    public init(addresses: [String] = [], routes: [String] = [], excludedRoutes: [String] = [], dnsServers: [String] = [],
                mtu: Int? = nil) {
        self.addresses = addresses
        self.routes = routes
        self.excludedRoutes = excludedRoutes
        self.dnsServers = dnsServers
        self.mtu = mtu
    }
}

/// NEProviderStopReason, by name (vpnctl sends userInitiated, providerFailed, ...).
public struct ProviderStopReason: RawRepresentable, Equatable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none = ProviderStopReason(rawValue: "none")
    public static let userInitiated = ProviderStopReason(rawValue: "userInitiated")
    public static let providerFailed = ProviderStopReason(rawValue: "providerFailed")
    public static let configurationRemoved = ProviderStopReason(rawValue: "configurationRemoved")
    public var description: String { rawValue }
}

/// An error with an NEVPNConnectionError name, for `cancelTunnelWithError`
/// and start failures.
public struct TunnelError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        case overslept, noNetworkAvailable, unrecoverableNetworkChange, configurationFailed, serverAddressResolutionFailed,
             serverNotResponding, serverDead, authenticationFailed, clientCertificateInvalid, clientCertificateNotYetValid,
             clientCertificateExpired, pluginFailed, configurationNotFound, pluginDisabled, negotiationFailed,
             serverDisconnected, serverCertificateInvalid, serverCertificateNotYetValid, serverCertificateExpired
    }
    public let code: Code
    public let message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { "\(code.rawValue): \(message)" }
}

// MARK: the wire

struct Incoming: Decodable {
    var type: String
    var id: Int?
    var providerConfiguration: [String: String]?
    var serverAddress: String?
    var interface: String?
    var reason: String?
    var ok: Bool?
    var error: String?
    var name: String?
    var value: String?
}

struct Outgoing: Encodable {
    var type: String
    var id: Int? = nil
    var status: String? = nil
    var name: String? = nil
    var message: String? = nil
    var addresses: [String]? = nil
    var routes: [String]? = nil
    var excludedRoutes: [String]? = nil
    var dns: [String]? = nil
    var mtu: Int? = nil
}

/// JSON lines on the control socket.
final class ControlChannel {
    let fd: Int32
    var pending: [UInt8] = []
    static let maximumLineLength = 65536

    init(fd: Int32) { self.fd = fd }

    func send(_ m: Outgoing) {
        guard var bytes = try? JSONEncoder().encode(m) else { return }
        bytes.append(0x0A)
        var off = 0
        bytes.withUnsafeBytes { raw in
            while off < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + off, raw.count - off, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; exit(1) }
                off += n
            }
        }
    }

    func receive() -> ([Incoming], Bool) {
        var chunk = [UInt8](repeating: 0, count: 16384)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 { return ([], true) }
        if n < 0 { return ([], errno != EAGAIN && errno != EINTR) }
        pending += chunk[0..<n]
        var out: [Incoming] = []
        while let nl = pending.firstIndex(of: 0x0A) {
            let line = Array(pending[..<nl])
            pending.removeFirst(nl + 1)
            if let m = try? JSONDecoder().decode(Incoming.self, from: Data(line)) { out.append(m) }
        }
        if pending.count > Self.maximumLineLength { return (out, true) }
        return (out, false)
    }
}
