import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// The system as a verify test wants it; records each question asked.
final class FakeVerifySystem: VerifySystem {
    var links: [String: (index: Int32, isUp: Bool)] = ["utun0": (7, true), "eth0": (2, true)]
    var routeIndex: Int32? = 7
    var resolves: [String: IPAddress] = [:]
    var probeResult = (ok: true, detail: "TCP connect to 198.19.0.1:80 in 1 ms")
    var calls: [String] = []

    func link(named name: String) throws -> (index: Int32, isUp: Bool)? {
        calls.append("link \(name)")
        return links[name]
    }

    func linkName(index: Int32) -> String? { links.first { $0.value.index == index }?.key }

    func route(to address: IPAddress) throws -> RouteDecision? {
        calls.append("route \(address)")
        return routeIndex.map { RouteDecision(outputInterfaceIndex: $0, gateway: nil) }
    }

    func resolve(_ host: String) -> IPAddress? {
        calls.append("resolve \(host)")
        return resolves[host]
    }

    func probe(_ target: ProbeTarget, address: IPAddress, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        calls.append("probe \(address):\(target.port) \(target.path ?? "-") \(timeoutMs)")
        return probeResult
    }
}

@Suite struct VerifyUseCaseTests {
    func status(_ s: VPNStatus, ifindex: Int32 = 7) -> DerivedStatus {
        var r = RuntimeRecord(id: UUID(), name: "office", status: s)
        r.interface = "utun0"
        r.ifindex = ifindex
        return DerivedStatus(id: r.id, name: "office", status: s, interface: "utun0", supervisorAlive: true, record: r)
    }

    let probe = ProbeTarget(host: "198.19.0.1", port: 80, path: "/")

    @Test func allThreeChecksPassProveThePath() throws {
        let fake = FakeVerifySystem()
        let r = try VerifyUseCase(system: fake).verify(status(.connected), probe: probe, timeoutSeconds: 2)
        #expect(r.verdict == .pathProven && r.verdict.exitCode == .ok)
        #expect(r.checks.map(\.name) == ["interface", "route", "probe"] && r.checks.allSatisfy(\.ok))
        #expect(r.checks[1].detail == "198.19.0.1 leaves through utun0")
        #expect(fake.calls == ["link utun0", "route 198.19.0.1", "probe 198.19.0.1:80 / 2000"])
    }

    @Test func aRouteThroughAnotherLinkIsConfiguredOnlyEvenWhenTheProbeAnswers() throws {
        let fake = FakeVerifySystem()
        fake.routeIndex = 2
        let r = try VerifyUseCase(system: fake).verify(status(.connected), probe: probe, timeoutSeconds: 1)
        #expect(r.verdict == .configuredOnly && r.verdict.exitCode == .notConnected)
        #expect(r.checks[1] == VerifyCheck(name: "route", ok: false, detail: "198.19.0.1 leaves through eth0, not utun0"))
        // For a user of the agent, no root probe goes anywhere but through their tunnel.
        let calls = fake.calls.count
        let user = try VerifyUseCase(system: fake).verify(status(.connected), probe: probe, timeoutSeconds: 1, probeOffTunnel: false)
        #expect(user.verdict == .configuredOnly)
        #expect(user.checks.last == VerifyCheck(name: "probe", ok: false, detail: "not run: the route does not use the tunnel"))
        #expect(!fake.calls[calls...].contains { $0.hasPrefix("probe") })
        fake.routeIndex = nil
        let none = try VerifyUseCase(system: fake).verify(status(.connected), probe: probe, timeoutSeconds: 1)
        #expect(none.checks[1].detail == "198.19.0.1 has no route")
    }

    @Test func aFailedProbeOverTheTunnelIsProbeFailed() throws {
        let fake = FakeVerifySystem()
        fake.probeResult = (false, "connect to 198.19.0.1:80: timed out after 1000 ms")
        let r = try VerifyUseCase(system: fake).verify(status(.reasserting), probe: probe, timeoutSeconds: 1)
        #expect(r.verdict == .probeFailed && r.verdict.exitCode == .connectionFailed)
    }

    @Test func notConnectedStopsAtTheInterface() throws {
        for (s, ifindex) in [(VPNStatus.disconnected, Int32(7)), (.connecting, 7), (.connected, 99)] {
            let fake = FakeVerifySystem()
            let r = try VerifyUseCase(system: fake).verify(status(s, ifindex: ifindex), probe: probe, timeoutSeconds: 1)
            #expect(r.verdict == .notConnected && r.checks.count == 1 && !r.checks[0].ok)
            #expect(!fake.calls.contains { $0.hasPrefix("probe") })
        }
        let down = FakeVerifySystem()
        down.links["utun0"] = (7, false)
        let r = try VerifyUseCase(system: down).verify(status(.connected), probe: probe, timeoutSeconds: 1)
        #expect(r.verdict == .configuredOnly && r.checks[0].detail == "utun0 (ifindex 7) is down")
    }

    @Test func aNameThatDoesNotResolveIsProbeFailed() throws {
        let fake = FakeVerifySystem()
        let r = try VerifyUseCase(system: fake).verify(status(.connected), probe: ProbeTarget(host: "intranet.invalid", port: 80, path: nil),
                                                       timeoutSeconds: 1)
        #expect(r.verdict == .probeFailed && r.checks.last?.detail == "cannot resolve intranet.invalid")
        #expect(fake.calls == ["link utun0", "resolve intranet.invalid"])
    }

    @Test(arguments: [
        ("http://198.19.0.1", ProbeTarget(host: "198.19.0.1", port: 80, path: "/")),
        ("http://198.19.0.1:8080/health", ProbeTarget(host: "198.19.0.1", port: 8080, path: "/health")),
        ("198.19.0.1:22", ProbeTarget(host: "198.19.0.1", port: 22, path: nil)),
        ("http://intranet/x", ProbeTarget(host: "intranet", port: 80, path: "/x")),
    ])
    func probesParse(text: String, expected: ProbeTarget) throws {
        #expect(try ProbeTarget.parse(text) == expected)
    }

    @Test func badProbesAreNamed() {
        #expect(throws: ProbeTarget.ParseError.httpsUnsupported) { try ProbeTarget.parse("https://x") }
        #expect(throws: ProbeTarget.ParseError.invalid) { try ProbeTarget.parse("justahost") }
        #expect(throws: ProbeTarget.ParseError.invalid) { try ProbeTarget.parse("http://") }
    }
}
