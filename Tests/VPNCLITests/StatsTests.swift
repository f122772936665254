import Foundation
import Testing
@testable import VPNCLI

@Suite struct StatsTests {
    func run(_ args: String..., terminal: Bool = false) -> Harness.Result {
        let h = Harness()
        h.environment = ["VPNCTL_PROC_NET_DEV": h.fixture("procnetdev/wide.txt")]
        h.terminal = terminal
        return h.run(args)
    }

    @Test func jsonMatchesTheSchema() throws {
        let r = run("stats", "--all", "--json")
        #expect(r.code == 0, "\(r.stderr)")
        let d = jsonObject(r.stdout)
        #expect(Set(d.keys) == ["schemaVersion", "estimate", "interfaces", "sampledAt"])
        #expect(d["estimate"] as? Bool == true)
        let ifs = try #require(d["interfaces"] as? [[String: Any]])
        #expect(ifs.count == 4)
        let keys: Set<String> = ["name", "ifindex", "class", "rxBytes", "rxPackets", "rxErrors", "rxDropped",
                                 "txBytes", "txPackets", "txErrors", "txDropped", "resetDetected"]
        for i in ifs { #expect(Set(i.keys) == keys) }
        #expect(ifs[0]["rxBytes"] as? UInt64 == UInt64.max)
        #expect(ifs[0]["class"] as? String == "wifi")
        #expect(ifs[3]["class"] as? String == "cellular")
    }

    @Test func defaultShowsTunnelsAndLinksOnlyWithTheFooter() {
        let r = run("stats")
        #expect(r.code == 0)
        #expect(r.stdout.contains("wlp2s0"))
        #expect(r.stdout.contains("16.0 EiB"))
        #expect(!r.stdout.contains("veth-a.b"))
        // The footer is for a person: on stderr, at a terminal only, so a pipe reads just the table.
        #expect(!r.stdout.contains("estimates") && !r.stderr.contains("estimates"))
        let atTerminal = run("stats", terminal: true)
        #expect(atTerminal.stderr.contains("Interface counters (the kernel's, as in /proc/net/dev), and estimates"))
        #expect(atTerminal.stdout == r.stdout)
    }

    @Test func unknownInterfaceListsSimilarNames() {
        let r = run("stats", "eth0.10")
        #expect(r.code == 13)
        #expect(r.stderr == "vpnctl: no interface named 'eth0.10'\nhint: did you mean 'eth0.100'?\n")
    }

    @Test func aProfileNameIsPointedToProfile() {
        let h = Harness()
        h.environment = ["VPNCTL_PROC_NET_DEV": h.fixture("procnetdev/wide.txt")]
        h.run("import", h.fixture("wg/office.conf"))
        let r = h.run("stats", "office")
        #expect(r.code == 13)
        #expect(r.stderr == "vpnctl: no interface named 'office'; 'office' is a profile\nhint: for its tunnel: vpnctl stats --profile office\n")
    }

    /// Every sample has a TYPE, names and labels are valid, values are integers.
    @Test func prometheusFormatIsValid() throws {
        let r = run("stats", "--all", "--prometheus")
        #expect(r.code == 0)
        var typed = Set<String>()
        let sample = try Regex(#"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*)\} ([0-9]+)$"#)
        var samples = 0
        for line in r.stdout.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(parts.count == 4 && parts[3] == "counter")
                typed.insert(String(parts[2]))
            } else if line.hasPrefix("# HELP ") {
                continue
            } else {
                let m = try #require(try sample.wholeMatch(in: String(line)), "bad sample line: \(line)")
                #expect(typed.contains(String(m.output[1].substring!)), "sample before its TYPE: \(line)")
                #expect(String(m.output[1].substring!).hasSuffix("_total"))
                samples += 1
            }
        }
        #expect(samples == 8 * 4)
        #expect(r.stdout.contains(#"vpnctl_interface_receive_bytes_total{interface="wlp2s0",class="wifi"} 18446744073709551615"#))
    }

    @Test func usageErrors() {
        #expect(run("stats", "--json", "--prometheus").code == 2)
        #expect(run("stats", "--interval", "2").stderr.hasPrefix("vpnctl: '--interval' needs '--watch'"))
        #expect(run("stats", "--watch", "--interval", "0").code == 2)
        #expect(run("stats", "--all", "eth0").code == 2)
    }

    /// A name that is not printable ASCII leaves the fast path: JSON still
    /// parses, and what a terminal must not see raw is escaped.
    @Test func jsonWithUnusualNamesStillParses() throws {
        let h = Harness()
        h.environment = ["VPNCTL_PROC_NET_DEV": h.write("dev.txt", """
            Inter-|   Receive
             face |bytes
            wlé0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
            a"b: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
            x\u{202E}y: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16

            """)]
        let r = h.run(["stats", "--all", "--json"])
        #expect(r.code == 0, "\(r.stderr)")
        let ifs = try #require(jsonObject(r.stdout)["interfaces"] as? [[String: Any]])
        #expect(ifs.map { $0["name"] as? String } == ["wlé0", "a\"b", "x\u{202E}y"])
        #expect(!r.stdout.contains("\u{202E}"))
        #expect(r.stdout.hasSuffix("}\n") && r.stdout.filter { $0 == "\n" }.count == 1)
    }

    @Test func humanUnits() {
        #expect(StatsCommand.humanBytes(0) == "0 B")
        #expect(StatsCommand.humanBytes(1023) == "1023 B")
        #expect(StatsCommand.humanBytes(1536) == "1.5 KiB")
        #expect(StatsCommand.humanBytes(1_503_238_554) == "1.4 GiB")
    }
}

/// A counter that jumps by nearly 2^64 between two samples once trapped
/// (exit 132) in `stats --watch`'s rate (issue 29, item 12's audit).
@Suite struct StatsRateRangeTests {
    @Test func aRatePastUInt64sRangeIsTheLargestNotATrap() {
        #expect(StatsCommand.wholeRate(1.8446744073709552e19 * 10) == UInt64.max)
        #expect(StatsCommand.wholeRate(.infinity) == UInt64.max)
        #expect(StatsCommand.wholeRate(.nan) == 0)
        #expect(StatsCommand.wholeRate(-5) == 0)
        #expect(StatsCommand.wholeRate(1234.4) == 1234)
        #expect(StatsCommand.rate(1.8446744073709552e19 * 10, false).hasSuffix("/s"))
    }
}
