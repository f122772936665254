import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Issue 29, item 10: a settings call is all or nothing, for every
/// provider. The resolver is touched only after every address and route
/// step succeeded; a failure undoes the call's earlier steps, newest first,
/// and leaves what earlier calls applied as it was.
@Suite struct SettingsTransactionTests {
    struct Bench {
        let dir = TempDir()
        let system = FakeTunnelSystem()
        let undo = UndoStack(log: { _ in })
        let applier: SettingsApplier
        let dns: TunnelDNS
        let file: String
        let original = "nameserver 192.168.0.1\n"
        final class Records { var list: [ResolverRecord?] = [] }
        let records = Records()

        init(enforce: Bool = false) throws {
            file = "\(dir.path)/resolv.conf"
            try original.write(toFile: file, atomically: true, encoding: .utf8)
            let records = self.records
            dns = TunnelDNS(id: UUID(), name: "office", profile: nil, runDirectory: dir.path, searchPath: nil,
                            log: { _ in }, onChange: { records.list.append($0) })
            dns.backend = .file
            dns.filePath = file
            applier = SettingsApplier(interface: "utun0", ifindex: 7, system: system, undo: undo, log: { _ in })
            applier.dns = dns
            if enforce { applier.enforcedTable = SettingsApplier.enforcedTable(ifindex: 7) }
        }

        var resolver: String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "<missing>" }
    }

    static func settings() -> TunnelNetworkSettings {
        var s = TunnelNetworkSettings()
        s.addresses = ["198.19.20.2/32", "fd19::2/128"]
        s.mtu = 1400
        s.routes = ["198.19.20.0/24", "198.19.21.0/24", "fd19:1::/64"]
        s.excludedRoutes = [.init(prefix: "198.18.0.1/32", ifindex: 2, gateway: "198.18.0.254")]
        s.dns = ["198.19.20.53"]
        return s
    }

    /// What a failure at each step undoes, newest first: every change the
    /// call made before it, and nothing of the DNS, which comes last.
    @Test(arguments: [
        ("addAddress fd19", ["deleteAddress 198.19.20.2/32"]),
        ("setMTU", ["deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"]),
        ("setUp", ["deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"]),
        ("addRoute 198.18.0.1/32", ["deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"]),
        ("addRoute 198.19.21.0/24", ["deleteRoute 198.19.20.0/24", "deleteRoute 198.18.0.1/32",
                                     "deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"]),
        ("addRoute fd19:1::/64", ["deleteRoute 198.19.21.0/24", "deleteRoute 198.19.20.0/24", "deleteRoute 198.18.0.1/32",
                                  "deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"]),
    ])
    func aFailureAtAnyStepUndoesTheCallNewestFirstAndNeverTouchesTheDNS(_ step: String, _ undone: [String]) throws {
        let b = try Bench()
        b.system.failAt = step
        #expect(throws: FakeTunnelSystem.Injected.self) { try b.applier.apply(Self.settings()) }
        let failed = try #require(b.system.calls.firstIndex { $0.hasPrefix(step) })
        #expect(Array(b.system.calls[(failed + 1)...].filter { !$0.hasPrefix("route ") }) == undone, "failing at \(step): \(b.system.calls)")
        #expect(b.resolver == b.original && b.records.list.isEmpty && b.dns.record == nil, "the DNS was touched failing at \(step)")
        #expect(b.undo.steps.isEmpty, "nothing of the failed call is left to undo")
        #expect(b.applier.applied == AppliedSettings(), "nothing is recorded as applied")
    }

    @Test func theDNSComesAfterEveryRouteAndItsFailureUndoesThem() throws {
        let b = try Bench(enforce: true)
        try b.applier.apply(Self.settings())
        let calls = b.system.calls
        #expect(b.resolver.hasSuffix("nameserver 198.19.20.53\n") && b.records.list.count == 1)
        #expect(calls.last?.hasPrefix("rule add to") == true, "the last system change is a route step; the DNS follows it: \(calls)")

        // The resolver refuses (its directory is gone): the routes go too.
        let c = try Bench()
        c.dns.filePath = "\(c.dir.path)/missing/resolv.conf"
        #expect(throws: (any Error).self) { try c.applier.apply(Self.settings()) }
        let undone = c.system.calls.drop { !$0.hasPrefix("addRoute fd19:1::/64") }.dropFirst().filter { !$0.hasPrefix("route ") }
        #expect(Array(undone) == ["deleteRoute fd19:1::/64", "deleteRoute 198.19.21.0/24", "deleteRoute 198.19.20.0/24",
                                  "deleteRoute 198.18.0.1/32", "deleteAddress fd19::2/128", "deleteAddress 198.19.20.2/32"])
        #expect(c.undo.steps.isEmpty && c.applier.applied == AppliedSettings())
    }

    /// A later call that fails puts back what it withdrew: the earlier
    /// settings stay as they were, DNS included, and their undo steps still work.
    @Test func aFailedReapplyLeavesTheEarlierSettingsAsTheyWere() throws {
        let b = try Bench()
        try b.applier.apply(Self.settings())
        let before = b.applier.applied, steps = b.undo.steps.count, resolver = b.resolver
        var next = Self.settings()
        next.addresses = ["198.19.20.3/32"]
        next.routes = ["198.19.20.0/24", "198.19.22.0/24"]
        next.mtu = 1300
        next.dns = ["198.19.20.54"]
        b.system.calls = []
        b.system.failAt = "addRoute 198.19.22.0/24"
        #expect(throws: FakeTunnelSystem.Injected.self) { try b.applier.apply(next) }
        #expect(b.system.calls.filter { !$0.hasPrefix("route ") } == [
            // withdrawn first, then the new ones, then the failure
            "deleteRoute 198.19.21.0/24", "deleteRoute fd19:1::/64",
            "deleteAddress 198.19.20.2/32", "deleteAddress fd19::2/128",
            "addAddress 198.19.20.3/32", "setMTU 1300", "setUp utun0",
            "addRoute 198.19.20.0/24 dev 7",  // asked again (the kernel's "exists" on this link is no error)
            "addRoute 198.19.22.0/24 dev 7",
            // undone, newest first
            "setMTU 1400", "deleteAddress 198.19.20.3/32",
            "addAddress fd19::2/128", "addAddress 198.19.20.2/32",
            "addRoute fd19:1::/64 dev 7", "addRoute 198.19.21.0/24 dev 7",
        ])
        #expect(b.applier.applied == before && b.undo.steps.count == steps && b.resolver == resolver)
        b.system.failAt = nil
        b.system.calls = []
        b.undo.unwind()
        #expect(b.system.calls.contains("deleteRoute 198.19.21.0/24") && b.system.calls.contains("deleteAddress 198.19.20.2/32"))
        #expect(b.resolver == b.original)
    }
}
