import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Recorded networks the rules are matched against.
enum Networks {
    static let office = NetworkSnapshot(primary: .init(name: "eth0", ifindex: 2, type: .ethernet),
                                        searchDomains: ["corp.example"], dnsServers: ["198.18.40.53"])
    static let home = NetworkSnapshot(primary: .init(name: "wlan0", ifindex: 3, type: .wifi, ssid: "Home"),
                                      searchDomains: ["home.arpa"], dnsServers: ["192.168.1.1", "fd00::1"])
    static let cafe = NetworkSnapshot(primary: .init(name: "wlan0", ifindex: 3, type: .wifi, ssid: "Cafe"), dnsServers: ["10.0.0.1"])
    static let phone = NetworkSnapshot(primary: .init(name: "wwan0", ifindex: 4, type: .cellular), dnsServers: ["100.64.0.1"])
    static let offline = NetworkSnapshot(primary: nil)
}

@Suite struct OnDemandEvaluatorTests {
    let noProbe: (String) -> ProbeResult = { _ in Issue.record("no probe expected"); return .failed("unexpected") }

    /// The issue's rule set: trusted office network off, everything else on.
    let trusted: [OnDemandRule] = [
        OnDemandRule(action: .disconnect, dnsSearchDomains: ["corp.example"]),
        OnDemandRule(action: .connect, interfaceType: .ethernet),
        OnDemandRule(action: .connect, interfaceType: .wifi),
        OnDemandRule(action: .ignore),
    ]

    @Test func firstMatchingRuleDecides() {
        let e = OnDemandEvaluator.evaluate(trusted, on: Networks.office, probe: noProbe)
        #expect(e.decidingRule == 1 && e.decision == .disconnect)
        #expect(e.rules.map(\.evaluated) == [true, false, false, false])
        #expect(e.reason == "search domain corp.example")
    }

    @Test func reasonNamesTheMatchAndWhyEarlierRulesFailed() {
        var lab = Networks.office
        lab.searchDomains = ["lab.example"]
        let e = OnDemandEvaluator.evaluate(trusted, on: lab, probe: noProbe)
        #expect(e.decidingRule == 2 && e.decision == .connect)
        #expect(e.reason == "ethernet, search domain not corp.example")
        #expect(StartOrigin(rule: 2, reason: e.reason).text == "on-demand rule 2: ethernet, search domain not corp.example")
    }

    @Test func everyConditionOfARuleMustHold() {
        let rule = OnDemandRule(action: .connect, interfaceType: .wifi, ssids: ["Cafe"], dnsServerAddresses: ["10.*"])
        #expect(OnDemandEvaluator.evaluate([rule], on: Networks.cafe, probe: noProbe).decidingRule == 1)
        let e = OnDemandEvaluator.evaluate([rule], on: Networks.home, probe: noProbe)
        #expect(e.decidingRule == nil && e.decision == nil)
        #expect(e.rules[0].conditions.map(\.matched) == [true, false, false])
        #expect(e.rules[0].conditions[1].text == "SSID Home, not Cafe")
        #expect(e.rules[0].conditions[2].text == "DNS server not 10.*")
        #expect(e.reason == "no rule matched")
    }

    @Test func interfaceTypes() {
        func decide(_ t: OnDemandRule.InterfaceType, _ n: NetworkSnapshot) -> Bool {
            OnDemandEvaluator.evaluate([OnDemandRule(action: .connect, interfaceType: t)], on: n, probe: noProbe).decidingRule == 1
        }
        #expect(decide(.ethernet, Networks.office) && !decide(.ethernet, Networks.home))
        #expect(decide(.wifi, Networks.home) && !decide(.wifi, Networks.phone))
        #expect(decide(.cellular, Networks.phone) && !decide(.cellular, Networks.office))
        #expect(decide(.any, Networks.phone) && decide(.any, Networks.home))
        // No default route: no interface type matches, not even any.
        #expect(!decide(.any, Networks.offline) && !decide(.ethernet, Networks.offline))
        let e = OnDemandEvaluator.evaluate([OnDemandRule(action: .connect, interfaceType: .wifi)], on: Networks.office, probe: noProbe)
        #expect(e.rules[0].conditions[0].text == "ethernet, not wifi")
    }

    @Test func ssidNeverMatchesOffWiFi() {
        var wired = Networks.office
        wired.primary?.ssid = "Home"
        let e = OnDemandEvaluator.evaluate([OnDemandRule(action: .connect, ssids: ["Home"])], on: wired, probe: noProbe)
        #expect(e.decidingRule == nil)
        #expect(e.rules[0].conditions[0].text == "not on Wi-Fi (SSID Home)")
        var unknown = Networks.home
        unknown.primary?.ssid = nil
        #expect(OnDemandEvaluator.evaluate([OnDemandRule(action: .connect, ssids: ["Home"])], on: unknown, probe: noProbe).decidingRule == nil)
    }

    @Test func aRuleWithoutConditionsAlwaysMatches() {
        let e = OnDemandEvaluator.evaluate([OnDemandRule(action: .ignore), OnDemandRule(action: .connect)], on: Networks.offline, probe: noProbe)
        #expect(e.decidingRule == 1 && e.decision == .ignore)
        #expect(e.reason == "no conditions")
    }

    @Test func probeMatchesOnlyOn200AndOnlyWhenTheRestHolds() {
        var asked: [String] = []
        let probe: (String) -> ProbeResult = { url in
            asked.append(url)
            return url.contains("ok") ? .ok : url.contains("portal") ? .redirect(302, location: "http://login") : .failed("refused")
        }
        let rules = [OnDemandRule(action: .connect, interfaceType: .cellular, probeURL: "http://ok.example/"),
                     OnDemandRule(action: .disconnect, probeURL: "http://portal.example/"),
                     OnDemandRule(action: .connect, probeURL: "http://ok.example/")]
        let e = OnDemandEvaluator.evaluate(rules, on: Networks.office, probe: probe)
        // Rule 1's interface type failed, so its probe was not sent.
        #expect(asked == ["http://portal.example/", "http://ok.example/"])
        #expect(e.decidingRule == 3)
        #expect(e.rules[0].conditions[1].text == "probe http://ok.example/ not sent")
        #expect(e.rules[1].conditions[0].text == "probe http://portal.example/ redirected (302 to http://login)")
        #expect(e.dependsOnProbe)
        #expect(!OnDemandEvaluator.evaluate(trusted, on: Networks.office, probe: noProbe).dependsOnProbe)
    }

    @Test func domainWildcards() {
        #expect(DomainPattern.matches("corp.example", "corp.example"))
        #expect(DomainPattern.matches("corp.example", "CORP.example."))
        #expect(!DomainPattern.matches("corp.example", "eu.corp.example"))
        #expect(DomainPattern.matches("*.corp.example", "eu.corp.example"))
        #expect(DomainPattern.matches("*.corp.example", "a.b.corp.example"))
        #expect(!DomainPattern.matches("*.corp.example", "corp.example"))
        #expect(!DomainPattern.matches("*.corp.example", "evilcorp.example"))
        #expect(DomainPattern.matches("*", "anything.example"))
        let e = OnDemandEvaluator.evaluate([OnDemandRule(action: .disconnect, dnsSearchDomains: ["*.example"])], on: Networks.office, probe: noProbe)
        #expect(e.reason == "search domain corp.example")
    }

    @Test func addressWildcards() {
        #expect(AddressPattern.matches("198.18.40.53", "198.18.40.53"))
        #expect(AddressPattern.matches("198.18.*", "198.18.40.53"))
        #expect(!AddressPattern.matches("198.18.*", "198.19.40.53"))
        #expect(AddressPattern.matches("*.53", "198.18.40.53"))
        #expect(AddressPattern.matches("FD00:*", "fd00::1"))
        #expect(AddressPattern.matches("*", "10.0.0.1"))
        #expect(!AddressPattern.matches("10.0.0.1", "10.0.0.10"))
    }
}

@Suite struct OnDemandBackoffTests {
    /// A fake clock: milliseconds that only the test moves.
    final class FakeClock { var nowMs: Int64 = 1_000_000 }

    @Test func stepsDoubleFromOneSecondToFiveMinutes() {
        let steps = (1...12).map { OnDemandBackoff.stepMs(failures: $0) }
        #expect(steps == [1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000, 300000])
        #expect(OnDemandBackoff.stepMs(failures: 1000) == 300_000)
    }

    @Test func jitterStaysBetweenHalfAndAllOfTheStep() {
        let clock = FakeClock()
        var low = OnDemandBackoff(), high = OnDemandBackoff()
        for n in 1...10 {
            let step = OnDemandBackoff.stepMs(failures: n)
            #expect(low.failed(atMs: clock.nowMs, random: { 0 }) == step / 2)
            #expect(high.failed(atMs: clock.nowMs, random: { 0.999999 }) <= step)
            #expect(high.notBeforeMs - clock.nowMs >= step * 99 / 100)
        }
    }

    @Test func noStartBeforeTheDelayAndResetOnANetworkChange() {
        let clock = FakeClock()
        var b = OnDemandBackoff()
        #expect(b.allows(atMs: clock.nowMs))
        b.failed(atMs: clock.nowMs, random: { 0.5 })   // 750 ms
        b.failed(atMs: clock.nowMs, random: { 0.5 })   // 1500 ms
        #expect(b.failures == 2)
        clock.nowMs += 1499
        #expect(!b.allows(atMs: clock.nowMs))
        clock.nowMs += 1
        #expect(b.allows(atMs: clock.nowMs))
        b.failed(atMs: clock.nowMs, random: { 0.5 })
        #expect(!b.allows(atMs: clock.nowMs))
        b.reset()
        #expect(b.failures == 0 && b.allows(atMs: clock.nowMs))
    }

    /// A dead server for an hour: starts are few, not a storm.
    @Test func anHourOfFailuresIsAFewDozenStarts() {
        let clock = FakeClock()
        let end = clock.nowMs + 3_600_000
        var b = OnDemandBackoff()
        var starts = 0
        while clock.nowMs < end {
            if b.allows(atMs: clock.nowMs) { starts += 1; b.failed(atMs: clock.nowMs, random: { 0 }) }
            clock.nowMs += 100
        }
        #expect(starts > 10 && starts < 40)
    }
}

@Suite struct OnDemandFactsTests {
    @Test func classificationFromKernelFacts() {
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: "veth", wireless: false, devtype: nil) == .ethernet)
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: nil, wireless: false, devtype: nil) == .ethernet)
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: "bridge", wireless: false, devtype: "bridge") == .ethernet)
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: nil, wireless: true, devtype: "wlan") == .wifi)
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: nil, wireless: false, devtype: "wwan") == .cellular)
        #expect(OnDemandLinkClass.classify(arphrd: 519, kind: nil, wireless: false, devtype: nil) == .cellular)
        #expect(OnDemandLinkClass.classify(arphrd: 65534, kind: "tun", wireless: false, devtype: nil) == .other)
        #expect(OnDemandLinkClass.classify(arphrd: 1, kind: "tun", wireless: false, devtype: nil) == .other)
    }

    @Test func defaultRoutesFromProcNet() {
        let v4 = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        veth0\t00000000\t0128A8C6\t0003\t0\t0\t100\t00000000\t0\t0\t0
        utun0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0
        veth0\t0028A8C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
        wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0
        """
        let routes = DefaultRoutes.parseIPv4(v4)
        #expect(routes.map(\.interface) == ["veth0", "utun0", "wlan0"])
        #expect(DefaultRoutes.primary(routes, ignore: { $0.hasPrefix("utun") }) == "veth0")
        #expect(DefaultRoutes.primary(routes, ignore: { $0 != "wlan0" }) == "wlan0")
        let v6 = """
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth1
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
        fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
        """
        #expect(DefaultRoutes.parseIPv6(v6) == [DefaultRoutes.Route(interface: "eth1", metric: 1024)])
    }

    @Test func resolverFacts() {
        let f = ResolvConfFacts.parse("# comment\nnameserver 198.18.40.53\nsearch corp.example lab.example # trailing\nnameserver fd00::53\noptions edns0\n")
        #expect(f.searchDomains == ["corp.example", "lab.example"])
        #expect(f.servers == ["198.18.40.53", "fd00::53"])
        #expect(ResolvConfFacts.parse("domain corp.example\nnameserver 1.1.1.1").searchDomains == ["corp.example"])
        #expect(ResolvConfFacts.parse("").searchDomains == [])
    }

    @Test func probeAnswers() {
        #expect(HTTPProbe.parse(Array("HTTP/1.1 200 OK\r\nContent-Length: 0".utf8)) == .ok)
        #expect(HTTPProbe.parse(Array("HTTP/1.0 302 Found\r\nLocation: http://portal/\r\n".utf8)) == .redirect(302, location: "http://portal/"))
        #expect(HTTPProbe.parse(Array("HTTP/1.1 204 No Content".utf8)) == .status(204))
        #expect(HTTPProbe.parse(Array("SSH-2.0-OpenSSH".utf8)) == .failed("not an HTTP answer"))
        #expect(HTTPProbe.probe("https://intranet.example/") == .unsupported("is https, which vpnctl does not probe yet (the condition never matches)"))
        #expect(ProbeURL("http://198.19.40.1:8080/ok?x=1") == ProbeURL("http://198.19.40.1:8080/ok?x=1"))
        #expect(ProbeURL("http://198.19.40.1:8080/ok")?.port == 8080)
        #expect(ProbeURL("http://[fd00::1]/")?.host == "fd00::1")
        #expect(ProbeURL("http://host")?.path == "/")
        #expect(ProbeURL("http://") == nil && ProbeURL("ftp://x/") == nil && ProbeURL("http://h:99999/") == nil)
        #expect(ProbeURL.host(of: "https://user@intranet.example:8443/x") == "intranet.example")
    }
}

@Suite struct OnDemandValidationTests {
    let validator = ProfileValidator(secretExists: { _ in true })

    func profile(_ rules: [OnDemandRule]) -> Profile {
        var p = sampleProfile("office")
        p.onDemand = OnDemand(enabled: true, rules: rules)
        return p
    }

    @Test func evaluateConnectionIsRefusedWithTheWayOut() {
        let problems = validator.problems(in: profile([OnDemandRule(action: .evaluateConnection, dnsSearchDomains: ["corp.example"])]))
        #expect(problems == ["onDemand.rules[0].action: evaluateConnection needs a per-connection hook that Linux does not give; "
                             + "use connect with dnsSearchDomains (or dnsServerAddresses) conditions instead"])
    }

    @Test func badConditionValuesAreNamed() {
        let problems = validator.problems(in: profile([OnDemandRule(action: .connect, ssids: [""], dnsSearchDomains: ["bad domain", "*.ok.example"],
                                                                    dnsServerAddresses: ["10.0.0.*", "nope!"], probeURL: "http://:80/")]))
        #expect(problems == [
            "onDemand.rules[0].probeURL: 'http://:80/' is not a URL vpnctl can probe (http://host[:port]/path)",
            "onDemand.rules[0].dnsSearchDomains: 'bad domain' is not a domain name (or *.domain)",
            "onDemand.rules[0].dnsServerAddresses: 'nope!' is not an address (or a pattern with *)",
            "onDemand.rules[0].ssids: '' is not an SSID (1–32 bytes)",
        ])
    }

    @Test func lastRuleWithConditionsIsAWarning() {
        let w = validator.warnings(in: profile([OnDemandRule(action: .connect, interfaceType: .ethernet)]))
        #expect(w == ["onDemand.rules[0]: the last rule has conditions: when no rule matches, on-demand does nothing "
                      + "(end with a rule without conditions, e.g. {\"action\": \"ignore\"})"])
        #expect(validator.warnings(in: profile([OnDemandRule(action: .connect, interfaceType: .ethernet), OnDemandRule(action: .ignore)])) == [])
        #expect(validator.warnings(in: sampleProfile("plain")) == [])
    }

    @Test func probeInsideTheTunnelOrAtTheServerIsAWarning() {
        var p = profile([OnDemandRule(action: .connect, probeURL: "http://10.0.0.1/health"),
                         OnDemandRule(action: .connect, probeURL: "http://198.18.0.1:8080/"),
                         OnDemandRule(action: .ignore, probeURL: "https://intranet.example/"),
                         OnDemandRule(action: .ignore)])
        guard case .wireguard(var w) = p.protocol else { Issue.record("not wireguard"); return }
        w.peers[0].allowedIPs = ["10.0.0.0/24"]
        w.peers[0].endpoint = "198.18.0.1:51820"
        p.protocol = .wireguard(w)
        #expect(validator.problems(in: p) == [])
        #expect(validator.warnings(in: p) == [
            "onDemand.rules[0].probeURL: 10.0.0.1 is inside the tunnel's route 10.0.0.0/24: the probe can only answer through the tunnel, so it cannot tell whether the tunnel is needed",
            "onDemand.rules[1].probeURL: 198.18.0.1 is the VPN server itself: it answers whether or not the tunnel is needed, so the rule never tells networks apart",
            "onDemand.rules[2].probeURL: https probes are not supported yet: the condition never matches (use http://)",
        ])
    }

    @Test func newConditionsRoundTripThroughTheStore() throws {
        let p = profile([OnDemandRule(action: .connect, interfaceType: .wifi, ssids: ["Cafe"], dnsSearchDomains: ["*.corp.example"],
                                      dnsServerAddresses: ["10.*"], probeURL: "http://198.18.40.1/")])
        let bytes = Array(try JSONEncoder().encode(p))
        let (back, unknown) = try Profile.parseStrictly(bytes)
        #expect(unknown.isEmpty)
        #expect(back.onDemand == p.onDemand)
    }
}

@Suite struct ProbeStreakTests {
    func evaluation(_ action: OnDemandRule.Action, probe: ProbeResult) -> OnDemandEvaluation {
        OnDemandEvaluator.evaluate([OnDemandRule(action: action, probeURL: "http://portal.example/"), OnDemandRule(action: .connect)],
                                   on: Networks.office, probe: { _ in probe })
    }

    @Test func aProbeThatAlwaysAnswersIsNotedAfterThirtySeconds() {
        var s = ProbeStreaks()
        var now: Int64 = 5_000
        #expect(s.record(evaluation(.disconnect, probe: .ok), nowMs: now) == nil)
        now += 29_999
        #expect(s.record(evaluation(.disconnect, probe: .ok), nowMs: now) == nil)
        now += 1
        #expect(s.record(evaluation(.disconnect, probe: .ok), nowMs: now)
                == "rule 1's probe has answered at every evaluation for 30 s or more: the rule always matches, so no later rule starts the tunnel")
        // One failure starts the count over.
        #expect(s.record(evaluation(.disconnect, probe: .failed("refused")), nowMs: now) == nil)
        #expect(s.record(evaluation(.disconnect, probe: .ok), nowMs: now + 10_000) == nil)
    }

    @Test func aConnectRuleWithAnAnsweringProbeIsNoPitfall() {
        var s = ProbeStreaks()
        _ = s.record(evaluation(.connect, probe: .ok), nowMs: 0)
        #expect(s.record(evaluation(.connect, probe: .ok), nowMs: 60_000) == nil)
    }
}

@Suite struct WirelessSSIDTests {
    @Test func ssidFromAnNL80211Answer() {
        // NL80211_CMD_NEW_INTERFACE: ifindex 3, ifname wlan0, SSID "Cafe Wi-Fi".
        let answer = WirelessSSID.message(type: 0x1c, command: 7, version: 1,
                                          attributes: [(3, [3, 0, 0, 0]), (4, Array("wlan0".utf8) + [0]), (52, Array("Cafe Wi-Fi".utf8))])
        #expect(WirelessSSID.ssid(inAnswer: answer) == "Cafe Wi-Fi")
        // Not associated: no SSID attribute.
        #expect(WirelessSSID.ssid(inAnswer: WirelessSSID.message(type: 0x1c, command: 7, version: 1, attributes: [(3, [3, 0, 0, 0])])) == nil)
        // An error answer (NLMSG_ERROR) or a truncated one has no attributes.
        #expect(WirelessSSID.attributes([2, 0, 0, 0, 2, 0] + [UInt8](repeating: 0, count: 30)).isEmpty)
        #expect(WirelessSSID.attributes(Array(answer.prefix(23))).isEmpty || WirelessSSID.ssid(inAnswer: Array(answer.prefix(23))) == nil)
    }

    @Test func loopbackHasNoSSID() {
        #expect(WirelessSSID.ssid(ifindex: 1) == nil)
    }
}

@Suite struct ProbeResultLineTests {
    @Test func theWorkersLinesReadBack() {
        let all: [ProbeResult] = [.ok, .status(204), .redirect(302, location: "http://portal/"), .redirect(301, location: nil),
                                  .failed("connect: connection refused"), .unsupported("is https")]
        for r in all { #expect(ProbeResult(line: Substring(r.line)) == r, "\(r)") }
        #expect(ProbeResult.failed("a\tb\nc").line == "failed\t0\ta b c")
        #expect(ProbeResult(line: "nonsense") == nil && ProbeResult(line: "ok\tx\t") == nil)
    }
}
