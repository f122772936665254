#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A WireGuard tunnel carried by wireguard-go on a utun the controller made.
public final class WireGuardTunnel {
    public struct Peer: Sendable {
        public let publicKey: String
        public let publicKeyHex: String
        public let endpoint: String
        public let endpointAddress: IPAddress
        public let keepalive: Int?
    }

    public typealias Failure = ProviderFailure

    let profileID: UUID
    let config: WireGuardConfiguration
    let system: TunnelSystem
    let log: (String) -> Void
    public let undo: UndoStack
    public private(set) var interface = ""
    public private(set) var ifindex: Int32 = 0
    public private(set) var providerPid: pid_t = 0
    /// The UAPI socket file made for this wireguard-go.
    var uapiFile: UAPISocketFile?
    public private(set) var peers: [Peer] = []
    public private(set) var settings = AppliedSettings()
    /// Sets up the settings applier as the profile asks (DNS, enforceRoutes).
    public var configureApplier: (SettingsApplier) -> Void = { _ in }
    /// The socket mark the kill switch lets out, when the profile sets no fwmark.
    public var killSwitchMark: UInt32?

    public init(profileID: UUID, config: WireGuardConfiguration, system: TunnelSystem, log: @escaping (String) -> Void) {
        self.profileID = profileID
        self.config = config
        self.system = system
        self.log = log
        undo = UndoStack(log: log)
    }

    /// Splits a default route so it overrides the existing default without
    /// replacing it (as wg-quick does with its own table).
    static func routePrefixes(_ allowed: CIDR) -> [String] {
        if allowed.prefixLength == 0 {
            return allowed.address.isIPv6 ? ["::/1", "8000::/1"] : ["0.0.0.0/1", "128.0.0.0/1"]
        }
        return [allowed.network.description]
    }

    static func resolve(_ endpoint: String) throws -> (String, IPAddress) {
        guard case .success(let e) = Endpoint.parse(endpoint) else {
            throw Failure(error: ConnectionError(.configurationFailed, "endpoint '\(endpoint)' is not host:port"), stopReason: .configurationFailed)
        }
        if let ip = IPAddress(e.host) { return (e.description, ip) }
        guard let ip = Resolver.firstAddress(e.host) else {
            throw Failure(error: ConnectionError(.serverAddressResolutionFailed, "cannot resolve '\(e.host)' (endpoint \(endpoint))"),
                          stopReason: .connectionFailed)
        }
        return (Endpoint(host: ip.description, port: e.port).description, ip)
    }

    /// Brings the tunnel up. On any failure, everything done so far is undone
    /// before the error is thrown.
    public func start(wireguardGo: String, logFD: Int32, privateKey: String,
                      presharedKeys: [String: String]) throws {
        do {
            try bringUp(wireguardGo: wireguardGo, logFD: logFD, privateKey: privateKey,
                        presharedKeys: presharedKeys)
        } catch {
            undo.unwind()
            if let f = error as? Failure { throw f }
            throw Failure(error: ConnectionError(.configurationFailed, "\(error)"), stopReason: .configurationFailed)
        }
    }

    func bringUp(wireguardGo: String, logFD: Int32, privateKey: String,
                 presharedKeys: [String: String]) throws {
        try resolvePeers()
        guard let privateHex = WireGuardKey.hex(privateKey) else {
            throw Failure(error: ConnectionError(.configurationFailed, "the private-key secret is not a WireGuard key"), stopReason: .configurationFailed)
        }
        let fwmark = try config.fwmark.map { text in
            guard let mark = Fwmark(text) else {
                throw Failure(error: ConnectionError(.configurationFailed, "fwmark '\(OpenVPNDirectives.shown(text))' is not off, a number or 0x-hex"),
                              stopReason: .configurationFailed)
            }
            return mark
        }
        // Routes to the endpoints and the excluded prefixes as they are before
        // the tunnel changes anything.
        let endpointRoutes = peers.map { system.route(to: $0.endpointAddress) }
        let excluded = config.excludedRoutes.compactMap(CIDR.init).map { ($0.network, system.route(to: $0.network.address)) }

        let (name, tunFD) = try createInterface()
        // The supervisor keeps its tun fd until the end: the interface then
        // outlives a wireguard-go that exits by itself, so that only a
        // deletion from outside makes it go while the tunnel runs, and the
        // two causes (the interface deleted, the control socket removed)
        // are told apart without a race.
        undo.push("close the tun of \(name)") { [system] in system.closeFD(tunFD) }
        try startWireGuardGo(wireguardGo, name: name, tunFD: tunFD, logFD: logFD)

        ifindex = try system.ifindex(name)
        let applier = SettingsApplier(interface: name, ifindex: ifindex, system: system, undo: undo, log: log)
        configureApplier(applier)
        var wanted = TunnelNetworkSettings()
        wanted.addresses = config.addresses.compactMap { CIDR($0)?.description }
        wanted.mtu = config.mtu ?? 1420
        wanted.dns = config.dns
        try applier.applyInterface(wanted)
        settings = applier.applied

        try configurePeers(privateHex: privateHex, fwmark: fwmark?.value ?? killSwitchMark, presharedKeys: presharedKeys)
        if config.table != "off" {
            wanted.table = config.table.flatMap { UInt32($0) } ?? 254
            addRoutes(to: &wanted, endpointRoutes: endpointRoutes, excluded: excluded)
            try applier.applyRoutes(wanted)
        }
        // The resolver last, once every address and route is in place.
        try applier.applyDNS(wanted)
        settings = applier.applied
        kickHandshake()
    }

    /// Each peer's key checked and its endpoint resolved, once.
    func resolvePeers() throws {
        for p in config.peers {
            guard let hex = WireGuardKey.hex(p.publicKey) else {
                throw Failure(error: ConnectionError(.configurationFailed, "peer public key is not a WireGuard key"), stopReason: .configurationFailed)
            }
            let (endpoint, ip) = try WireGuardTunnel.resolve(p.endpoint ?? "")
            peers.append(Peer(publicKey: p.publicKey, publicKeyHex: hex, endpoint: endpoint, endpointAddress: ip, keepalive: p.persistentKeepalive))
        }
    }

    /// A new tun, named as the profile asks or the first free utunN, marked
    /// as this profile's; its removal is the first undo step.
    func createInterface() throws -> (name: String, tunFD: Int32) {
        if let name = config.interfaceName, system.interfaceExists(name) {
            throw Failure(error: ConnectionError(.configurationFailed, "interface \(name) already exists; vpnctl only creates new interfaces"),
                          stopReason: .configurationFailed)
        }
        guard let name = config.interfaceName ?? InterfaceNames.chooseFree(system) else {
            throw Failure(error: ConnectionError(.configurationFailed, "no free utunN name"), stopReason: .configurationFailed)
        }
        let tunFD: Int32
        do {
            tunFD = try system.createTun(name)
        } catch let e as TunError {
            // Created by someone else since the check: theirs, not ours to touch.
            throw Failure(error: ConnectionError(.configurationFailed, "\(e)"), stopReason: .configurationFailed)
        }
        interface = name
        log("[#] tun \(name) created")
        undo.push("delete link \(name)") { [system] in
            try system.deleteLink(name)
            self.log("[#] link \(name) deleted")
        }
        do { try system.markLink(name, InterfaceMark.of(profileID)) } catch { system.closeFD(tunFD); throw error }
        return (name, tunFD)
    }

    /// wireguard-go on the tun and a UAPI socket made here (fds 3 and 4), and
    /// its first UAPI answer: it has started, and has set its own MTU, which
    /// ours must come after.
    func startWireGuardGo(_ wireguardGo: String, name: String, tunFD: Int32, logFD: Int32) throws {
        let uapiFD = try system.listenUAPI(name)
        let file = system.uapiSocketFile(name)
        uapiFile = file
        undo.push("remove \(KernelTunnelSystem.uapiPath(name))") { [system] in system.removeUAPI(name, ifStill: file) }
        defer { system.closeFD(uapiFD) }
        providerPid = try system.spawnProvider(wireguardGo, [wireguardGo, "-f", name],
                                               environment: ["WG_TUN_FD": "3", "WG_UAPI_FD": "4",
                                                             "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"],
                                               passFDs: [tunFD, uapiFD], logFD: logFD)
        let pid = providerPid
        log("[#] \(wireguardGo) -f \(name) (pid \(pid))")
        undo.push("stop wireguard-go \(pid)") { [system] in
            system.stopProvider(pid)
            self.log("[#] wireguard-go \(pid) stopped")
        }
        _ = try uapi("get=1\n\n")
    }

    /// The key, listen port, fwmark and peers, in one UAPI set.
    func configurePeers(privateHex: String, fwmark: UInt32?, presharedKeys: [String: String]) throws {
        let request = WireGuardUAPI.setRequest(
            privateKeyHex: privateHex, listenPort: config.listenPort,
            fwmark: fwmark,
            peers: zip(config.peers, peers).map { p, resolved in
                WireGuardUAPI.PeerConfig(publicKeyHex: resolved.publicKeyHex,
                                         presharedKeyHex: p.presharedKeySecret.flatMap { presharedKeys[$0] }.flatMap(WireGuardKey.hex),
                                         endpoint: resolved.endpoint, keepalive: p.persistentKeepalive,
                                         allowedIPs: p.allowedIPs.compactMap { CIDR($0)?.network.description })
            })
        try WireGuardUAPI.parseSet(try uapi(request))
        log("[#] wireguard-go configured: \(peers.count) peer\(peers.count == 1 ? "" : "s") (\(peers.map(\.endpoint).joined(separator: ", ")))")
    }

    /// The allowed IPs as routes, and what must stay outside: an endpoint
    /// inside the allowed IPs would be routed into its own tunnel, and
    /// excluded prefixes must stay out; both keep the route they had.
    func addRoutes(to wanted: inout TunnelNetworkSettings, endpointRoutes: [RouteDecision?], excluded: [(CIDR, RouteDecision?)]) {
        let allAllowed = config.peers.flatMap { $0.allowedIPs.compactMap(CIDR.init) }
        for (peer, before) in zip(peers, endpointRoutes) {
            guard allAllowed.contains(where: { $0.contains(peer.endpointAddress) }), let before else { continue }
            wanted.excludedRoutes.append(.init(prefix: "\(peer.endpointAddress)/\(peer.endpointAddress.isIPv6 ? 128 : 32)",
                                               ifindex: before.outputInterfaceIndex,
                                               gateway: before.gateway.flatMap { IPAddress(bytes: $0)?.description }))
        }
        for (prefix, before) in excluded {
            guard let before else { continue }
            wanted.excludedRoutes.append(.init(prefix: prefix.description, ifindex: before.outputInterfaceIndex,
                                               gateway: before.gateway.flatMap { IPAddress(bytes: $0)?.description }))
        }
        var seen = Set<String>()
        wanted.routes = allAllowed.flatMap(WireGuardTunnel.routePrefixes).filter { seen.insert($0).inserted }
    }

    /// WireGuard starts a handshake only when it has something to send.
    /// Raising a peer's keepalive from 0 sends one at once.
    public func kickHandshake() {
        for p in peers {
            _ = try? uapi(WireGuardUAPI.keepaliveRequest(publicKeyHex: p.publicKeyHex, seconds: 0))
            _ = try? uapi(WireGuardUAPI.keepaliveRequest(publicKeyHex: p.publicKeyHex, seconds: p.keepalive.flatMap { $0 > 0 ? $0 : nil } ?? 25))
        }
    }

    /// Puts the profile's own keepalive back once the handshake is done.
    public func restoreKeepalive() {
        for p in peers where (p.keepalive ?? 0) == 0 {
            _ = try? uapi(WireGuardUAPI.keepaliveRequest(publicKeyHex: p.publicKeyHex, seconds: 0))
        }
    }

    public func uapi(_ request: String) throws -> String {
        // Another program's socket at our path would answer for its own tunnel.
        if let lost = uapiSocketLoss { throw ProviderFailure(.pluginFailed, lost, .providerFailed) }
        return try system.uapi(interface, request)
    }

    /// Why wireguard-go lost its control socket, or nil while the socket at
    /// its path is still the one made for it. wireguard-go watches that file
    /// and ends its tunnel when it goes, so a clean-up script or a
    /// `wireguard-go` of the same name in another namespace ends this one.
    public var uapiSocketLoss: String? {
        guard let made = uapiFile else { return nil }
        let path = KernelTunnelSystem.uapiPath(interface)
        switch system.uapiSocketFile(interface) {
        case made: return nil
        case nil: return "its control socket \(path) was removed by another program (wireguard-go ends its tunnel when that file goes)"
        default: return "its control socket \(path) was replaced by another program's (wireguard-go ends its tunnel when its file goes)"
        }
    }

    public func status() throws -> [WireGuardUAPI.PeerStatus] {
        try WireGuardUAPI.parseGet(try uapi("get=1\n\n"))
    }

    public func stop() {
        undo.unwind()
    }
}
