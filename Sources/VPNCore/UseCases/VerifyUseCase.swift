#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What `verify` probes: HOST:PORT (a TCP connect) or http://HOST[:PORT]/PATH
/// (a GET after the connect).
public struct ProbeTarget: Equatable, Sendable {
    public let host: String
    public let port: Int
    /// The HTTP path; nil for a bare TCP connect.
    public let path: String?

    public enum ParseError: Error, Equatable, Sendable {
        case httpsUnsupported
        case invalid
    }

    public static func parse(_ text: String) throws(ParseError) -> ProbeTarget {
        var rest = Substring(text)
        var defaultPort: Int? = nil
        var isURL = false
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7); defaultPort = 80; isURL = true }
        else if rest.hasPrefix("https://") { throw .httpsUnsupported }
        let hostPort = rest.prefix { $0 != "/" }
        let path = isURL ? String(rest.dropFirst(hostPort.count)) : nil
        if case .success(let e) = Endpoint.parse(String(hostPort)) {
            return ProbeTarget(host: e.host, port: e.port, path: path.map { $0.isEmpty ? "/" : $0 })
        }
        if let port = defaultPort, !hostPort.isEmpty, !hostPort.contains(":") {
            return ProbeTarget(host: String(hostPort), port: port, path: path.map { $0.isEmpty ? "/" : $0 })
        }
        throw .invalid
    }
}

/// One step of the proof, with what it found.
public struct VerifyCheck: Codable, Equatable, Sendable {
    public let name: String
    public let ok: Bool
    public let detail: String

    public init(name: String, ok: Bool, detail: String) {
        self.name = name
        self.ok = ok
        self.detail = detail
    }
}

public enum VerifyVerdict: String, Codable, Sendable {
    case pathProven = "path proven"
    case configuredOnly = "configured only"
    case notConnected = "not connected"
    case probeFailed = "probe failed"

    /// The documented exit code: 0 proven, 12 not (or not provably) through
    /// the tunnel, 4 the probe failed.
    public var exitCode: ExitCode {
        switch self {
        case .pathProven: return .ok
        case .configuredOnly, .notConnected: return .notConnected
        case .probeFailed: return .connectionFailed
        }
    }
}

public struct VerifyReport: Codable, Equatable, Sendable {
    public let verdict: VerifyVerdict
    public let checks: [VerifyCheck]

    /// The same report with one more line that changes no verdict.
    public func noting(_ check: VerifyCheck) -> VerifyReport {
        VerifyReport(verdict: verdict, checks: checks + [check])
    }
}

/// What `verify` asks of the system; a fake answers in tests.
public protocol VerifySystem {
    /// The link's index and whether it is up; nil when there is none.
    func link(named name: String) throws -> (index: Int32, isUp: Bool)?
    func linkName(index: Int32) -> String?
    /// The kernel's route to `address` (RTM_GETROUTE); nil when there is none.
    func route(to address: IPAddress) throws -> RouteDecision?
    func resolve(_ host: String) -> IPAddress?
    func probe(_ target: ProbeTarget, address: IPAddress, timeoutMs: Int32) -> (ok: Bool, detail: String)
    /// Asks the DNS server `server` for `name`, and nobody else.
    func dnsQuery(_ server: IPAddress, name: String, timeoutMs: Int32) -> (ok: Bool, detail: String)
}

extension VerifySystem {
    public func dnsQuery(_ server: IPAddress, name: String, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        DNSQuery.ask(server, name: name, timeoutMs: timeoutMs)
    }
}

/// `verify`: proves the path, not the label. (1) the tunnel's interface
/// exists with the recorded ifindex and is up, (2) the kernel routes the
/// probe's address through it, (3) the probe answers.
public struct VerifyUseCase {
    public let system: VerifySystem

    public init(system: VerifySystem = KernelVerifySystem()) {
        self.system = system
    }

    /// With `dnsName`, also (4) the tunnel's DNS server in effect is routed
    /// through the tunnel and (5) it answers `dnsName`.
    /// `probeOffTunnel`: whether to probe when the route does not use the
    /// tunnel (to show the probe works, just not through it). The agent
    /// says no for its users: a root probe to where a user chooses, off
    /// their tunnel, would be a connection they could not make themselves.
    public func verify(_ status: DerivedStatus, probe: ProbeTarget, timeoutSeconds: Int, dnsName: String? = nil,
                       probeOffTunnel: Bool = true) throws -> VerifyReport {
        var checks: [VerifyCheck] = []
        guard status.status == .connected || status.status == .reasserting, let name = status.interface,
              let link = try system.link(named: name), link.index == status.record?.ifindex else {
            checks.append(VerifyCheck(name: "interface", ok: false, detail: L("'\(status.name)' is \(status.status.displayName); no tunnel interface")))
            return VerifyReport(verdict: .notConnected, checks: checks)
        }
        checks.append(VerifyCheck(name: "interface", ok: link.isUp, detail: link.isUp ? L("\(name) (ifindex \(link.index)) is up") : L("\(name) (ifindex \(link.index)) is down")))
        if !link.isUp { return VerifyReport(verdict: .configuredOnly, checks: checks) }

        guard let address = IPAddress(probe.host) ?? system.resolve(probe.host) else {
            checks.append(VerifyCheck(name: "route", ok: false, detail: L("cannot resolve \(probe.host)")))
            return VerifyReport(verdict: .probeFailed, checks: checks)
        }
        let route = try system.route(to: address)
        let via = route.map { system.linkName(index: $0.outputInterfaceIndex) ?? "ifindex \($0.outputInterfaceIndex)" }
        let routeOK = route?.outputInterfaceIndex == link.index
        checks.append(VerifyCheck(name: "route", ok: routeOK, detail: Self.leaves("\(address)", via: via, tunnel: routeOK ? nil : name)))

        if !routeOK && !probeOffTunnel {
            checks.append(VerifyCheck(name: "probe", ok: false, detail: L("not run: the route does not use the tunnel")))
            return VerifyReport(verdict: .configuredOnly, checks: checks)
        }
        let result = system.probe(probe, address: address, timeoutMs: Int32(timeoutSeconds * 1000))
        checks.append(VerifyCheck(name: "probe", ok: result.ok, detail: result.detail))
        var verdict: VerifyVerdict = !routeOK ? .configuredOnly : (result.ok ? .pathProven : .probeFailed)
        if let dnsName, verdict == .pathProven {
            verdict = try verifyDNS(status, name: dnsName, link: link.index, interface: name, timeoutSeconds: timeoutSeconds, &checks)
        }
        return VerifyReport(verdict: verdict, checks: checks)
    }

    /// The DNS in effect (the resolver record) is the tunnel's, reached through
    /// the tunnel, and it answers.
    func verifyDNS(_ status: DerivedStatus, name: String, link: Int32, interface: String, timeoutSeconds: Int,
                   _ checks: inout [VerifyCheck]) throws -> VerifyVerdict {
        guard let r = status.resolver, let server = r.servers.compactMap(IPAddress.init).first else {
            checks.append(VerifyCheck(name: "dns", ok: false, detail: L("no DNS server of the tunnel is in effect (the profile and the provider give none)")))
            return .configuredOnly
        }
        let route = try system.route(to: server)
        let via = route.map { system.linkName(index: $0.outputInterfaceIndex) ?? "ifindex \($0.outputInterfaceIndex)" }
        let routeOK = route?.outputInterfaceIndex == link
        checks.append(VerifyCheck(name: "dns route", ok: routeOK,
                                  detail: Self.leaves("\(server) (\(r.backend))", via: via, tunnel: routeOK ? nil : interface, dns: true)))
        if !routeOK { return .configuredOnly }
        let answer = system.dnsQuery(server, name: name, timeoutMs: Int32(timeoutSeconds * 1000))
        checks.append(VerifyCheck(name: "dns", ok: answer.ok, detail: answer.detail))
        return answer.ok ? .pathProven : .probeFailed
    }

    /// The route check's detail, one whole sentence for each case:
    /// "10.0.0.1 leaves through utun0", "... through eth0, not utun0",
    /// "... leaves through no interface (no route)". `tunnel` is the
    /// tunnel's interface when the route does not use it.
    static func leaves(_ address: String, via: String?, tunnel: String?, dns: Bool = false) -> String {
        switch (via, tunnel, dns) {
        case (nil, _, false): return L("\(address) has no route")
        case (nil, _, true): return L("the tunnel's DNS server \(address) has no route")
        case (let via?, nil, false): return L("\(address) leaves through \(via)")
        case (let via?, nil, true): return L("the tunnel's DNS server \(address) leaves through \(via)")
        case (let via?, let tunnel?, false): return L("\(address) leaves through \(via), not \(tunnel)")
        case (let via?, let tunnel?, true): return L("the tunnel's DNS server \(address) leaves through \(via), not \(tunnel)")
        }
    }
}

/// The live system: rtnetlink for links and routes, getaddrinfo, a TCP probe.
public struct KernelVerifySystem: VerifySystem {
    /// Include-mode app rules: routes are looked up, and the probe sent, with
    /// the rules' mark (what a matched program's packets carry).
    public var mark: UInt32?

    public init(mark: UInt32? = nil) { self.mark = mark }

    public func link(named name: String) throws -> (index: Int32, isUp: Bool)? {
        let link: LinkRecord?
        do { link = try LinkDump.link(named: name, counters: false) } catch { throw KernelVerifySystem.mapped(error) }
        return link.map { ($0.ifindex, $0.flags & UInt32(IFF_UP) != 0) }
    }

    public func linkName(index: Int32) -> String? {
        (try? NetlinkRouteSocket().linkInfo(index: index))??.name
    }

    public func route(to address: IPAddress) throws -> RouteDecision? {
        do { return try RouteLookup.route(to: address.bytes, mark: mark) } catch { throw KernelVerifySystem.mapped(error) }
    }

    public func resolve(_ host: String) -> IPAddress? { Resolver.firstAddress(host) }

    public func probe(_ target: ProbeTarget, address: IPAddress, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        TCPProbe.run(address: address, port: target.port, httpPath: target.path, host: target.host, timeoutMs: timeoutMs, mark: mark)
    }

    /// A refused netlink request is a permission problem (exit 11), not a failure.
    static func mapped(_ error: Error) -> Error {
        let e = VPNError.from(error)
        return e.code == .permissionDenied ? e : error
    }
}
