import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Answers from a script, one sample per call, and records what was asked.
final class FakeSampler: InterfaceSampler {
    var samples: [[InterfaceSample]]
    var calls: [String] = []
    var supportsNamed = true

    init(_ samples: [[InterfaceSample]]) { self.samples = samples }

    func next() -> [InterfaceSample] { samples.count > 1 ? samples.removeFirst() : samples[0] }

    func sampleAll() throws -> [InterfaceSample] {
        calls.append("all")
        return next()
    }

    func sample(named names: [String]) throws -> [InterfaceSample]? {
        calls.append("named \(names.joined(separator: ","))")
        guard supportsNamed else { return nil }
        return next().filter { names.contains($0.counters.name) }
    }
}

func sample(_ name: String, _ index: Int32?, _ kind: InterfaceClass, rx: UInt64 = 0, tx: UInt64 = 0) -> InterfaceSample {
    InterfaceSample(counters: InterfaceCounters(name: name, rxBytes: rx, rxPackets: rx / 100, rxErrors: 0, rxDropped: 0,
                                                txBytes: tx, txPackets: tx / 100, txErrors: 0, txDropped: 0),
                    facts: InterfaceFacts.Facts(ifindex: index, kind: kind))
}

@Suite struct StatsUseCaseTests {
    let host = [sample("lo", 1, .loopback), sample("eth0", 2, .ethernet, rx: 1000), sample("veth1", 3, .virtual),
                sample("utun0", 4, .tunnel, rx: 500, tx: 700), sample("wlan0", 5, .wifi)]

    @Test func defaultShowsTunnelsAndTheLinksUnderThemWithOwners() throws {
        let u = StatsUseCase(sampler: FakeSampler([host]))
        let s = try u.snapshot(StatsSelection(owners: ["utun0": "office"]))
        #expect(s.rows.map(\.counters.name) == ["eth0", "utun0", "wlan0"])
        #expect(s.rows.map(\.profile) == [nil, "office", nil])
        #expect(s.session == nil)
        let all = try u.snapshot(StatsSelection(all: true))
        #expect(all.rows.count == 5)
    }

    /// Issue 36, item 9: a veth that carries the default route is the link
    /// under the tunnel (a namespace's, a container's way out), so it is
    /// shown; an empty table names what it left out.
    @Test func aVirtualLinkWithTheDefaultRouteIsShownAndTheRestIsNamed() throws {
        let u = StatsUseCase(sampler: FakeSampler([host]))
        var selection = StatsSelection()
        selection.underlay = StatsSelection.defaultRouteLinks([
            KernelRoute(destination: [0, 0, 0, 0], prefixLength: 0, interface: "veth1", hasGateway: true),
            KernelRoute(destination: [198, 18, 0, 0], prefixLength: 24, interface: "eth0", hasGateway: false),
        ])
        #expect(selection.underlay == ["veth1"])
        let s = try u.snapshot(selection)
        #expect(s.rows.map(\.counters.name) == ["eth0", "veth1", "utun0", "wlan0"])
        #expect(s.hidden == ["lo"])
        let namespace = StatsUseCase(sampler: FakeSampler([[sample("lo", 1, .loopback), sample("veth2", 2, .virtual)]]))
        let empty = try namespace.snapshot(StatsSelection())
        #expect(empty.rows.isEmpty && empty.hidden == ["lo", "veth2"])
    }

    @Test func namedInterfacesAreFetchedByNameWhenAllExist() throws {
        let fake = FakeSampler([host])
        let s = try StatsUseCase(sampler: fake).snapshot(StatsSelection(interfaces: ["utun0", "eth0"]))
        #expect(s.rows.map(\.counters.name) == ["utun0", "eth0"])
        #expect(fake.calls == ["named utun0,eth0"])
    }

    @Test func aMissingNameFallsBackToEveryInterfaceAndSuggestsCloseOnes() {
        let fake = FakeSampler([host])
        #expect(throws: StatsError.noSuchInterface("eth1", similar: ["eth0", "veth1"])) {
            try StatsUseCase(sampler: fake).snapshot(StatsSelection(interfaces: ["eth1"]))
        }
        #expect(fake.calls == ["named eth1", "all"])
    }

    @Test func aProfileThatIsNotUpHasNoInterface() {
        let d = DerivedStatus(id: UUID(), name: "office", status: .disconnected, supervisorAlive: false)
        #expect(throws: StatsError.notConnected(profile: "office", status: .disconnected)) {
            try StatsUseCase.selection(for: d)
        }
    }

    func connected(ifindex: Int32, rxAtConnect: UInt64, txAtConnect: UInt64) -> DerivedStatus {
        var r = RuntimeRecord(id: UUID(), name: "office", status: .connected)
        r.interface = "utun0"
        r.ifindex = ifindex
        r.rxBytesAtConnect = rxAtConnect
        r.txBytesAtConnect = txAtConnect
        return DerivedStatus(id: r.id, name: "office", status: .connected, interface: "utun0",
                             connectedSince: Date(timeIntervalSince1970: 0), supervisorAlive: true, record: r)
    }

    @Test func sessionBytesAreSinceConnectUnlessTheInterfaceWasRecreated() throws {
        let u = StatsUseCase(sampler: FakeSampler([host]))
        let s = try u.snapshot(try StatsUseCase.selection(for: connected(ifindex: 4, rxAtConnect: 100, txAtConnect: 200)))
        #expect(s.rows.map(\.profile) == ["office"])
        #expect(s.session?.rxBytes == 400 && s.session?.txBytes == 500 && s.session?.resetDetected == false)
        let recreated = try u.snapshot(try StatsUseCase.selection(for: connected(ifindex: 9, rxAtConnect: 100, txAtConnect: 200)))
        #expect(recreated.session?.rxBytes == nil && recreated.session?.resetDetected == true)
        let wentBack = try u.snapshot(try StatsUseCase.selection(for: connected(ifindex: 4, rxAtConnect: 900, txAtConnect: 0)))
        #expect(wentBack.session?.resetDetected == true)
    }

    @Test func watchTurnsSamplesIntoRatesAndRecreationIntoAReset() throws {
        let fake = FakeSampler([
            [sample("utun0", 4, .tunnel, rx: 1000, tx: 0)],
            [sample("utun0", 4, .tunnel, rx: 3000, tx: 500)],
            [],                                               // deleted for a moment
            [sample("utun0", 7, .tunnel, rx: 10, tx: 10)],    // recreated
            [sample("utun0", 7, .tunnel, rx: 510, tx: 10)],
        ])
        fake.supportsNamed = false
        var w = StatsWatch(useCase: StatsUseCase(sampler: fake), selection: StatsSelection(interfaces: ["utun0"]))
        var now: Int64 = 0
        w.clock = { now }
        let first = try w.next()
        #expect(first.isFirst && first.snapshot.rows[0].rxRate == nil && !first.snapshot.rows[0].resetDetected)
        now = 500
        let second = try w.next()
        #expect(!second.isFirst && second.snapshot.rows[0].rxRate == 4000 && second.snapshot.rows[0].txRate == 1000)
        now = 1000
        #expect(try w.next().snapshot.rows.isEmpty)
        now = 1500
        let recreated = try w.next()
        #expect(recreated.snapshot.rows[0].resetDetected && recreated.snapshot.rows[0].rxRate == nil)
        now = 2500
        let after = try w.next()
        #expect(!after.snapshot.rows[0].resetDetected && after.snapshot.rows[0].rxRate == 500)
    }

    @Test func theFirstSampleOfAWatchStillNamesAMissingInterface() {
        var w = StatsWatch(useCase: StatsUseCase(sampler: FakeSampler([[]])), selection: StatsSelection(interfaces: ["utun0"]))
        #expect(throws: StatsError.self) { try w.next() }
    }
}
