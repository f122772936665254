import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Compares `text` with the golden file `fixtures/<name>`; with
/// VPNCTL_UPDATE_GOLDEN=1 it writes the file instead (then review the diff).
func expectGolden(_ text: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let url = Fixtures.root.appendingPathComponent("fixtures/\(name)")
    if ProcessInfo.processInfo.environment["VPNCTL_UPDATE_GOLDEN"] == "1" {
        try text.write(to: url, atomically: true, encoding: .utf8)
        return
    }
    #expect(text == (try Fixtures.text(name)), sourceLocation: sourceLocation)
}

@Suite struct KillSwitchRulesTests {
    let id = UUID(uuidString: "3B1A80FA-B61E-4B56-B0BD-19E883798DFA")!

    @Test func tableNameIsTheProfileIdWithoutDashes() {
        #expect(KillSwitchRules.tableName(id) == "vpnctl_3b1a80fab61e4b56b0bd19e883798dfa")
    }

    @Test func includeAllNetworksBeforeTheInterfaceExists() throws {
        let r = KillSwitchRules(table: KillSwitchRules.tableName(id), profile: "office", includeAll: true, marks: [0x766e])
        try expectGolden(r.render(), "killswitch/include-all-no-interface.nft")
    }

    @Test func includeAllNetworksWithTheTunnelAndLocalNetworks() throws {
        let r = KillSwitchRules(table: KillSwitchRules.tableName(id), profile: "office", includeAll: true, tunnelInterface: "utun0",
                                marks: [0x1234], localSubnets: ["192.168.0.0/24", "2001:db8:0:1::/64", "fe80::/10"])
        try expectGolden(r.render(), "killswitch/include-all-local.nft")
    }

    @Test func enforceRoutesAloneDropsOnlyTheTunnelsRoutesElsewhere() throws {
        let r = KillSwitchRules(table: KillSwitchRules.tableName(id), profile: "office", includeAll: false, tunnelInterface: "utun3",
                                marks: [0x766e], enforcedRoutes: ["10.0.0.0/8", "fd00::/8"])
        try expectGolden(r.render(), "killswitch/enforce-routes.nft")
    }

    @Test func aProfileNameCannotBreakOutOfTheComment() {
        let r = KillSwitchRules(table: "vpnctl_x", profile: "evil\n}\ntable ip x {", includeAll: true)
        let lines = try! r.render().split(separator: "\n")
        #expect(lines[0].hasPrefix("# vpnctl kill switch"))
        #expect(lines[1] == "table inet vpnctl_x")
    }

    @Test func removalCreatesThenDeletesSoItNeverFails() {
        #expect(KillSwitchRules.removal("vpnctl_x") == "table inet vpnctl_x\ndelete table inet vpnctl_x\n")
    }

}

/// Records the scripts; fails the run whose number is `failAt` (1-based).
final class RecordingFirewall: FirewallPort {
    var scripts: [String] = []
    var failAt: Int? = nil
    func run(_ script: String) throws {
        scripts.append(script)
        if scripts.count == failAt { throw VPNError(.failure, "nft failed (test)") }
    }
    func tableExists(_ table: String) -> Bool { false }
}

@Suite struct KillSwitchTests {
    func profile(excludeLocal: Bool = false) -> Profile {
        var p = sampleProfile("office")
        p.includeAllNetworks = true
        p.excludeLocalNetworks = excludeLocal
        return p
    }

    @Test func inPlaceBeforeTheInterfaceThenWidenedThenRemoved() throws {
        let fw = RecordingFirewall()
        var lines: [String] = []
        let ks = KillSwitch(profile: profile(), firewall: fw, log: { lines.append($0) }, localNetworks: { _ in ["10.1.0.0/16"] })
        try ks.install()
        #expect(fw.scripts.count == 1)
        #expect(!fw.scripts[0].contains("oifname \"utun"))
        #expect(fw.scripts[0].contains("policy drop"))
        #expect(!fw.scripts[0].contains("10.1.0.0/16"), "local networks only with excludeLocalNetworks")
        ks.update(interface: "utun0", routes: ["0.0.0.0/1"])
        #expect(fw.scripts.count == 2 && fw.scripts[1].contains("oifname \"utun0\" accept"))
        ks.update(interface: "utun0", routes: ["0.0.0.0/1"])
        #expect(fw.scripts.count == 2, "nothing changed: no new transaction")
        try ks.remove()
        #expect(fw.scripts.last == KillSwitchRules.removal(ks.rules.table))
        #expect(!ks.installed)
    }

    @Test func aFailedUpdateLeavesTheClosedTableAndSaysSo() throws {
        let fw = RecordingFirewall()
        fw.failAt = 2
        var lines: [String] = []
        var failures: [String] = []
        let ks = KillSwitch(profile: profile(), firewall: fw, log: { lines.append($0) })
        ks.onFailure = { failures.append($0) }
        try ks.install()
        ks.update(interface: "utun0", routes: [])
        #expect(ks.installed)
        #expect(lines.contains { $0.contains("traffic stays blocked") })
        #expect(failures.count == 1, "a table that cannot follow the tunnel is the tunnel's failure")
    }

    @Test func excludeLocalNetworksAsksTheSystemWithoutTheTunnel() throws {
        let fw = RecordingFirewall()
        var asked: [String?] = []
        var nets = ["198.18.0.0/24"]
        let ks = KillSwitch(profile: profile(excludeLocal: true), firewall: fw, log: { _ in },
                            localNetworks: { asked.append($0); return nets })
        try ks.install()
        ks.update(interface: "utun2", routes: [])
        #expect(asked == [nil, "utun2"])
        #expect(fw.scripts[1].contains("ip daddr 198.18.0.0/24 accept"))
        ks.refreshLocalNetworks()
        #expect(fw.scripts.count == 2, "the same networks: no new transaction")
        nets = ["192.168.1.0/24"]
        ks.refreshLocalNetworks()
        #expect(fw.scripts.count == 3 && fw.scripts[2].contains("ip daddr 192.168.1.0/24 accept"), "a new network: the table follows")
    }

    @Test func theProvidersOwnMarkReplacesTheDefault() throws {
        let fw = RecordingFirewall()
        let ks = KillSwitch(profile: profile(), firewall: fw, log: { _ in })
        #expect(ks.mark == KillSwitch.defaultMark)
        try ks.install()
        try ks.useMark(0xca6c)
        #expect(fw.scripts.count == 2 && fw.scripts[1].contains("meta mark 0xca6c accept"))
    }

    @Test func removalFromAnotherNamespaceIsRefused() {
        var ran = false
        let id = UUID()
        let (done, removed) = KillSwitch.remove(KillSwitchRecord(table: KillSwitchRules.tableName(id), netns: "net:[1]"), id: id) {
            ran = true
            return RecordingFirewall()
        }
        #expect(!removed && !ran)
        #expect(done.contains("network namespace net:[1]"))
    }

    @Test func aRecordNamingAnotherTableIsNotObeyed() {
        var ran = false
        let (done, removed) = KillSwitch.remove(KillSwitchRecord(table: "filter\nflush ruleset", netns: nil), id: UUID()) {
            ran = true
            return RecordingFirewall()
        }
        #expect(!removed && !ran)
        #expect(done.contains("not this profile's"))
    }
}

@Suite struct TunnelDNSTests {
    @Test func theProfilesServersReplaceTheProvidersAndDomainsAddUp() throws {
        let c = try TunnelDNSConfig.merge(provider: ["10.0.0.53", "corp.example", "fd00::53"],
                                      profile: DNSSettings(servers: ["10.9.9.9"], searchDomains: ["lab.example"], matchDomains: ["int.example"]))
        #expect(c == TunnelDNSConfig(servers: ["10.9.9.9"], searchDomains: ["corp.example", "lab.example"], matchDomains: ["int.example"]))
        #expect(try TunnelDNSConfig.merge(provider: ["10.0.0.53", "fd00::53"], profile: nil).servers == ["10.0.0.53", "fd00::53"])
        #expect(try TunnelDNSConfig.merge(provider: [], profile: nil).isEmpty)
    }

    @Test func resolvConfKeepsTheOriginalsOptionsAndAtMostThreeServers() throws {
        let original = "# from DHCP\nnameserver 192.168.0.1\nsearch home.example\noptions edns0 trust-ad\n"
        let c = TunnelDNSConfig(servers: ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"], searchDomains: ["corp.example"],
                                matchDomains: ["int.example"])
        try expectGolden(ResolvConf.render(c, profile: "office", original: original), "resolvconf/servers-search-match.conf")
    }

    @Test func searchDomainsAloneKeepTheOriginalServers() throws {
        let original = "nameserver 192.168.0.1\nnameserver 192.168.0.2\n"
        try expectGolden(ResolvConf.render(TunnelDNSConfig(searchDomains: ["corp.example"]), profile: "office", original: original),
                         "resolvconf/search-only.conf")
    }

    func stack(_ dir: TempDir, _ file: String) -> ResolvConfStack {
        ResolvConfStack(runDirectory: dir.path, path: file, netns: "net:[4026531840]")
    }

    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing>" }

    @Test func twoTunnelsTheMostRecentWinsAndTheOriginalComesBackInPlace() throws {
        let dir = TempDir()
        let file = "\(dir.path)/resolv.conf"
        try "nameserver 192.168.0.1\n".write(toFile: file, atomically: true, encoding: .utf8)
        var before = stat(); stat(file, &before)
        let a = UUID(), b = UUID()
        let s = stack(dir, file)
        try s.push(id: a) { _ in "nameserver 10.0.0.1\n" }
        try s.push(id: b) { _ in "nameserver 10.0.1.1\n" }
        #expect(read(file) == "nameserver 10.0.1.1\n")
        #expect(try s.pop(id: b) != nil)
        #expect(read(file) == "nameserver 10.0.0.1\n")
        try s.push(id: b) { _ in "nameserver 10.0.1.1\n" }
        _ = try s.pop(id: a)
        #expect(read(file) == "nameserver 10.0.1.1\n", "a tunnel below the top leaves the file alone")
        _ = try s.pop(id: b)
        #expect(read(file) == "nameserver 192.168.0.1\n")
        var after = stat(); stat(file, &after)
        #expect(before.st_ino == after.st_ino, "rewritten in place, never renamed over")
        #expect(!FileManager.default.fileExists(atPath: s.statePath))
        #expect(try s.pop(id: a) == nil)
    }

    @Test func aFileSomeoneElseChangedIsLeftAlone() throws {
        let dir = TempDir()
        let file = "\(dir.path)/resolv.conf"
        try "nameserver 192.168.0.1\n".write(toFile: file, atomically: true, encoding: .utf8)
        let a = UUID()
        let s = stack(dir, file)
        try s.push(id: a) { _ in "nameserver 10.0.0.1\n" }
        try "nameserver 172.16.0.1\n".write(toFile: file, atomically: false, encoding: .utf8)
        #expect(try s.pop(id: a)?.contains("changed by someone else") == true)
        #expect(read(file) == "nameserver 172.16.0.1\n")
    }

    @Test func theAppliersUndoStepRestoresTheFile() throws {
        let dir = TempDir()
        let file = "\(dir.path)/resolv.conf"
        try "nameserver 192.168.0.1\n".write(toFile: file, atomically: true, encoding: .utf8)
        var records: [ResolverRecord?] = []
        let dns = TunnelDNS(id: UUID(), name: "office", profile: DNSSettings(matchDomains: ["corp.example"]), runDirectory: dir.path,
                            searchPath: nil, log: { _ in }, onChange: { records.append($0) })
        dns.backend = .file
        dns.filePath = file
        let system = FakeTunnelSystem()
        let undo = UndoStack(log: { _ in })
        let applier = SettingsApplier(interface: "utun0", ifindex: 2, system: system, undo: undo, log: { _ in })
        applier.dns = dns
        var s = TunnelNetworkSettings()
        s.dns = ["10.0.0.53"]
        try applier.apply(s)
        try applier.apply(s)
        #expect(read(file).hasSuffix("\nnameserver 10.0.0.53\n"), "match domains are not search domains")
        #expect(records.count == 1, "applied again unchanged: nothing new")
        #expect(records.first??.note?.contains("split DNS") == true)
        undo.unwind()
        #expect(read(file) == "nameserver 192.168.0.1\n")
        #expect(records.last! == nil)
    }
}

@Suite struct NetworkPolicyValidationTests {
    @Test func problemsNameTheirFields() {
        var p = sampleProfile("office")
        p.excludeLocalNetworks = true
        p.dnsSettings = DNSSettings(servers: ["not-an-ip"], searchDomains: ["bad domain"], matchDomains: ["ok.example"])
        let problems = ProfileValidator(secretExists: { _ in true }).problems(in: p)
        #expect(problems.contains("excludeLocalNetworks: only has a meaning with includeAllNetworks (set both, or neither)"))
        #expect(problems.contains("dnsSettings.servers: 'not-an-ip' is not an IP address"))
        #expect(problems.contains("dnsSettings.searchDomains: 'bad domain' is not a domain name"))
        #expect(!problems.contains { $0.contains("ok.example") })
    }

    @Test func theNewFieldsRoundTripAndAreLeftOutWhenUnset() throws {
        var p = sampleProfile("office")
        let plain = String(decoding: try JSONEncoder().encode(p), as: UTF8.self)
        #expect(!plain.contains("includeAllNetworks") && !plain.contains("dnsSettings"))
        p.includeAllNetworks = true
        p.excludeLocalNetworks = true
        p.enforceRoutes = true
        p.dnsSettings = DNSSettings(servers: ["10.0.0.53"], matchDomains: ["corp.example"])
        let again = try Profile.parse(Array(try JSONEncoder().encode(p)))
        #expect(again == p)
    }
}

@Suite struct DNSQueryTests {
    @Test func theQueryIsOneQuestionWithRecursionDesired() {
        #expect(DNSQuery.message(id: 0x1234, name: "a.corp.example") ==
                [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 4] + Array("corp".utf8) + [7] + Array("example".utf8)
                + [0, 0, 1, 0, 1])
        #expect(DNSQuery.message(id: 1, name: "a..b") == nil)
        #expect(DNSQuery.message(id: 1, name: String(repeating: "x", count: 64)) == nil)
    }

    @Test func answersAreReadWithCompressedNames() {
        let q = DNSQuery.message(id: 7, name: "corp.example")!
        let question = Array(q[12...])
        let answer: [UInt8] = [0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 19, 0, 1]
        let ok: [UInt8] = [0, 7, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + question + answer
        #expect(DNSQuery.parse(ok, id: 7) == .addresses(["198.19.0.1"]))
        #expect(DNSQuery.parse(ok, id: 8) == .malformed, "another query's answer")
        let nx: [UInt8] = [0, 7, 0x81, 0x83, 0, 1, 0, 0, 0, 0, 0, 0] + question
        #expect(DNSQuery.parse(nx, id: 7) == .failed(rcode: 3))
        #expect(DNSQuery.parse(Array(ok.prefix(ok.count - 2)), id: 7) == .malformed, "cut short")
    }
}

final class DNSVerifySystem: VerifySystem {
    var routes: [String: Int32] = [:]
    var asked: [String] = []
    var answer = (ok: true, detail: "intranet.corp.example is 198.19.0.1")
    func link(named name: String) throws -> (index: Int32, isUp: Bool)? { name == "utun0" ? (7, true) : nil }
    func linkName(index: Int32) -> String? { index == 7 ? "utun0" : "eth0" }
    func route(to address: IPAddress) throws -> RouteDecision? {
        RouteDecision(outputInterfaceIndex: routes[address.description] ?? 7, gateway: nil)
    }
    func resolve(_ host: String) -> IPAddress? { nil }
    func probe(_ target: ProbeTarget, address: IPAddress, timeoutMs: Int32) -> (ok: Bool, detail: String) { (true, "ok") }
    func dnsQuery(_ server: IPAddress, name: String, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        asked.append("\(server) \(name)")
        return answer
    }
}

@Suite struct VerifyDNSTests {
    func status(dns: [String]?) -> DerivedStatus {
        var r = RuntimeRecord(id: UUID(), name: "office", status: .connected)
        r.interface = "utun0"
        r.ifindex = 7
        if let dns {
            var res = ResolverRecord(backend: "resolv.conf")
            res.servers = dns
            r.resolver = res
        }
        return DerivedStatus(id: r.id, name: "office", status: .connected, interface: "utun0", supervisorAlive: true, record: r)
    }
    let probe = ProbeTarget(host: "198.19.0.1", port: 80, path: "/")

    @Test func theTunnelsServerThroughTheTunnelAnswers() throws {
        let fake = DNSVerifySystem()
        let r = try VerifyUseCase(system: fake).verify(status(dns: ["198.19.0.53"]), probe: probe, timeoutSeconds: 2, dnsName: "intranet.corp.example")
        #expect(r.verdict == .pathProven)
        #expect(r.checks.map(\.name) == ["interface", "route", "probe", "dns route", "dns"])
        #expect(fake.asked == ["198.19.0.53 intranet.corp.example"])
    }

    @Test func aServerOutsideTheTunnelIsConfiguredOnlyAndIsNotAsked() throws {
        let fake = DNSVerifySystem()
        fake.routes["198.19.0.53"] = 2
        let r = try VerifyUseCase(system: fake).verify(status(dns: ["198.19.0.53"]), probe: probe, timeoutSeconds: 2, dnsName: "x.example")
        #expect(r.verdict == .configuredOnly)
        #expect(r.checks.last?.detail.contains("leaves through eth0, not utun0") == true)
        #expect(fake.asked.isEmpty)
    }

    @Test func noAnswerIsAFailedProbeAndNoDNSIsConfiguredOnly() throws {
        let fake = DNSVerifySystem()
        fake.answer = (false, "198.19.0.53 answered x.example with NXDOMAIN")
        #expect(try VerifyUseCase(system: fake).verify(status(dns: ["198.19.0.53"]), probe: probe, timeoutSeconds: 2, dnsName: "x.example").verdict == .probeFailed)
        #expect(try VerifyUseCase(system: fake).verify(status(dns: nil), probe: probe, timeoutSeconds: 2, dnsName: "x.example").verdict == .configuredOnly)
        #expect(try VerifyUseCase(system: fake).verify(status(dns: nil), probe: probe, timeoutSeconds: 2).verdict == .pathProven, "without --dns: as before")
    }
}

@Suite struct EnforceRoutesTests {
    @Test func theTunnelsRoutesGoIntoTheirOwnTableWithARuleAndComeOutAgain() throws {
        let system = FakeTunnelSystem()
        let undo = UndoStack(log: { _ in })
        let applier = SettingsApplier(interface: "utun0", ifindex: 2, system: system, undo: undo, log: { _ in })
        applier.enforcedTable = SettingsApplier.enforcedTable(ifindex: 2)
        #expect(applier.enforcedTable == 0x766e_0002)
        var s = TunnelNetworkSettings()
        s.routes = ["0.0.0.0/1", "128.0.0.0/1"]
        s.excludedRoutes = [.init(prefix: "198.18.0.1/32", ifindex: 3, gateway: "198.18.0.254")]
        try applier.applyRoutes(s)
        #expect(system.calls == [
            "addRoute 198.18.0.1/32 dev 3 via 198.18.0.254", "addRoute 0.0.0.0/1 dev 2", "addRoute 128.0.0.0/1 dev 2",
            // the same again in the tunnel's own table, then the rules to it
            "addRoute 198.18.0.1/32 dev 3 via 198.18.0.254",
            "addRoute 0.0.0.0/1 dev 2", "rule add to 0.0.0.0/1 table 1986920450 pref 5208",
            "addRoute 128.0.0.0/1 dev 2", "rule add to 128.0.0.0/1 table 1986920450 pref 5208",
        ])
        #expect(applier.applied.enforcedRoutes == ["0.0.0.0/1", "128.0.0.0/1"])
        // A push without one of them withdraws its rule; the rest unwinds newest first.
        s.routes = ["0.0.0.0/1"]
        system.calls = []
        try applier.apply(s)
        #expect(system.calls.contains("rule del to 128.0.0.0/1 table 1986920450 pref 5208"))
        system.calls = []
        undo.unwind()
        #expect(system.calls.filter { $0.hasPrefix("rule") } == ["rule del to 0.0.0.0/1 table 1986920450 pref 5208"])
        #expect(applier.applied.enforcedTable == nil && applier.applied.enforcedRoutes.isEmpty)
    }
}
