import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore

/// `vpnctl ondemand`, `stop`'s pause and `show`'s rules, on a store of their own.
@Suite struct OnDemandCommandTests {
    /// office with the trusted-network rules (not enabled yet).
    func harness(rules: String = #"[{"action":"disconnect","dnsSearchDomains":["corp.example"]},{"action":"connect","interfaceType":"ethernet"},{"action":"ignore"}]"#) -> Harness {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        h.editor = { path in
            var profile = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            profile["onDemand"] = ["enabled": false, "rules": try JSONSerialization.jsonObject(with: Data(rules.utf8))]
            try JSONSerialization.data(withJSONObject: profile).write(to: URL(fileURLWithPath: path))
        }
        return h
    }

    @Test func enableNeedsRules() {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        let r = h.run("ondemand", "enable", "office")
        #expect(r.code == ExitCode.configurationInvalid.rawValue)
        #expect(r.stderr.contains("'office' has no on-demand rules"))
    }

    @Test func enableShowPauseResumeDisable() throws {
        let h = harness()
        let edit = h.run("edit", "office")
        try #require(edit.code == 0, "\(edit.stderr)")
        #expect(h.run("ondemand", "enable", "office").stdout == "on-demand enabled for 'office'\n")
        #expect(h.run("ondemand", "enable", "office").stdout == "on-demand is already enabled for 'office'\n")
        let show = h.run("show", "office").stdout
        #expect(show.contains("on demand:   on (3 rules)"))
        #expect(show.contains("on-demand rule 1: disconnect if search domain corp.example\non-demand rule 2: connect if ethernet\non-demand rule 3: ignore (always)\n"))
        #expect(h.run("ondemand", "pause", "office").stdout == "on-demand paused for 'office'; the tunnel is left as it is\n")
        let status = h.run("ondemand", "status", "--json")
        #expect(try JSONKeyOrderTests.objectsKeepSortedKeys(status.stdout))
        #expect(status.stdout.contains(#""paused":true"#) && status.stdout.contains(#""enabled":true"#))
        #expect(h.run("ondemand", "status").stdout.contains("office  paused     3      disconnected"))
        #expect(h.run("status").stdout.contains("office: on-demand paused (vpnctl ondemand resume office)"))
        #expect(h.run("ondemand", "resume", "office").stdout == "on-demand resumed for 'office'\n")
        #expect(h.run("ondemand", "resume", "office").stdout == "on-demand was not paused for 'office'\n")
        // A stop pauses (the tunnel is not running: the pause still holds).
        let stop = h.run("stop", "office")
        #expect(stop.stderr.contains("on-demand paused for 'office': the agent will not start it (vpnctl ondemand resume office, or start)"))
        #expect(OnDemandPauses(runDirectory: h.runDir).isPaused(try #require(UUID(uuidString: jsonID(h)))))
        #expect(h.run("ondemand", "disable", "office", "--json").stdout.contains(#""enabled":false"#))
        // Disabled: a stop no longer pauses anything new.
        _ = h.run("ondemand", "resume", "office")
        #expect(!h.run("stop", "office").stderr.contains("on-demand paused"))
    }

    func jsonID(_ h: Harness) -> String {
        let out = h.run("show", "office", "--json").stdout
        guard let r = out.range(of: #""id":""#) else { return "" }
        return String(out[r.upperBound...].prefix(36))
    }

    @Test func testPrintsRuleByRuleAndTheDecision() throws {
        let h = harness()
        try #require(h.run("edit", "office").code == 0)
        let r = h.run("ondemand", "test", "office")
        #expect(r.code == 0)
        #expect(r.stdout.hasPrefix("network: "))
        #expect(r.stdout.contains("rule 1 (disconnect): "))
        #expect(r.stdout.contains("decision: rule "))
        #expect(r.stderr.contains("on-demand is disabled for 'office'"))
        let json = h.run("ondemand", "test", "office", "--json").stdout
        #expect(try JSONKeyOrderTests.objectsKeepSortedKeys(json))
        #expect(json.contains(#""decidingRule":"#) && json.contains(#""warnings":[]"#))
    }

    @Test func warningsOnEditAndEvaluateConnectionRefused() throws {
        let h = harness(rules: #"[{"action":"connect","probeURL":"http://10.0.0.1/"}]"#)
        let edit = h.run("edit", "office")
        #expect(edit.code == 0)
        #expect(edit.stderr.contains("warning: onDemand.rules[0]: the last rule has conditions"))
        let h2 = harness(rules: #"[{"action":"evaluateConnection","dnsSearchDomains":["corp.example"]}]"#)
        let refused = h2.run("edit", "office")
        #expect(refused.code == ExitCode.configurationInvalid.rawValue)
        #expect(refused.stderr.contains("evaluateConnection needs a per-connection hook that Linux does not give"))
    }
}
