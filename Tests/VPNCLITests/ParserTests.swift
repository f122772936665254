import Foundation
import Testing
@testable import VPNCLI
import VPNCore

@Suite struct ParserTests {
    static let table: [([String], Int32, String)] = [
        (["lst"], 2, "vpnctl: Unknown command 'lst'; did you mean 'list'?\nhint: See 'vpnctl help'.\n"),
        (["list", "--x"], 2, "vpnctl: Unknown option '--x'\nhint: See 'vpnctl help list'.\n"),
        (["list", "-q"], 2, "vpnctl: Unknown option '-q'\nhint: See 'vpnctl help list'.\n"),
        (["list", "y"], 2, "vpnctl: Unexpected argument 'y'\nhint: See 'vpnctl help list'.\n"),
        (["show"], 2, "vpnctl: Missing expected argument '<profile>'\nhint: See 'vpnctl help show'.\n"),
        (["import", "a.conf", "--name"], 2, "vpnctl: Missing value for '--name <name>'\nhint: See 'vpnctl help import'.\n"),
        (["import", "a.conf", "--name", "--json"], 2, "vpnctl: Missing value for '--name <name>'\nhint: See 'vpnctl help import'.\n"),
        (["import", "a.conf", "--name", "a", "--name", "b"], 2, "vpnctl: Option '--name' given more than once\nhint: See 'vpnctl help import'.\n"),
        (["list", "--json", "--json"], 2, "vpnctl: Option '--json' given more than once\nhint: See 'vpnctl help list'.\n"),
        (["list", "--json=yes"], 2, "vpnctl: Option '--json' takes no value\nhint: See 'vpnctl help list'.\n"),
        (["secret"], 2, "vpnctl: 'secret' needs a subcommand: set, list, remove\nhint: See 'vpnctl help secret'.\n"),
        (["secret", "get", "x"], 2, "vpnctl: Unknown subcommand of 'secret' 'get'; did you mean 'set'?\nhint: See 'vpnctl help secret'.\n"),
        (["secret", "set", "office"], 2, "vpnctl: Missing expected argument '<name>'\nhint: See 'vpnctl help secret set'.\n"),
        (["--config-dir"], 2, "vpnctl: Missing value for '--config-dir <dir>'\nhint: See 'vpnctl help'.\n"),
        (["help", "frobnicate"], 2, "vpnctl: No help for unknown command 'frobnicate'\nhint: See 'vpnctl help'.\n"),
        (["help", "stat"], 2, "vpnctl: No help for unknown command 'stat'; did you mean 'stats', 'start' or 'status'?\nhint: See 'vpnctl help'.\n"),
        (["stat"], 2, "vpnctl: Unknown command 'stat'; did you mean 'stats', 'start' or 'status'?\nhint: See 'vpnctl help'.\n"),
        (["start", "office", "--timout", "5"], 2, "vpnctl: Unknown option '--timout'; did you mean '--timeout'?\nhint: See 'vpnctl help start'.\n"),
        (["list", "--confg-dir", "/tmp"], 2, "vpnctl: Unknown option '--confg-dir'; did you mean '--config-dir'?\nhint: See 'vpnctl help list'.\n"),
        (["start", "office", "--timeout", "soon"], 2, "vpnctl: invalid value 'soon' for '--timeout <seconds>': expected a whole number of seconds (1–86400)\nhint: See 'vpnctl help start'.\n"),
        (["start", "office", "--wait", "--no-wait"], 2, "vpnctl: '--wait' and '--no-wait' cannot be used together\nhint: See 'vpnctl help start'.\n"),
        (["stop"], 2, "vpnctl: Missing expected argument '<profile>' (or --all)\nhint: See 'vpnctl help stop'.\n"),
        (["verify", "office"], 2, "vpnctl: Missing required option '--probe <url|host:port>'\nhint: See 'vpnctl help verify'.\n"),
        (["status", "--count", "2"], 2, "vpnctl: '--count' needs '--watch'\nhint: See 'vpnctl help status'.\n"),
        (["shw", "x"], 2, "vpnctl: Unknown command 'shw'; did you mean 'show'?\nhint: See 'vpnctl help'.\n"),
        (["show", "nope"], 9, "vpnctl: no profile named 'nope'\nhint: there are no profiles yet; add one with: vpnctl import FILE\n"),
    ]

    @Test(arguments: table)
    func errorsHaveExactMessagesAndCodes(argv: [String], code: Int32, stderr: String) {
        let h = Harness()
        let r = h.run(argv)
        #expect(r.code == code)
        #expect(r.stderr == stderr)
        if argv.contains("--json") {
            #expect((jsonObject(r.stdout)["error"] as? [String: Any])?["code"] as? Int == Int(code))
        } else {
            #expect(r.stdout == "")
        }
    }

    @Test func prefixesAreNotAccepted() {
        let r = Harness().run("imp", "x")
        #expect(r.code == 2)
        #expect(r.stderr.hasPrefix("vpnctl: Unknown command 'imp'; did you mean 'import'?"))
    }

    @Test func parsesOptionsAnywhereAndEqualsForm() throws {
        let parser = ArgumentParser(root: VPNCLI.root)
        guard case .run(let spec, let args) = try parser.parse(["--json", "import", "--name=office", "f.conf", "--config-dir", "/x"]) else {
            Issue.record("expected run"); return
        }
        #expect(spec.name == "import")
        #expect(args.flag("json"))
        #expect(args.value("name") == "office")
        #expect(args.value("config-dir") == "/x")
        #expect(args.positionals == ["f.conf"])
        guard case .run(_, let dashed) = try parser.parse(["show", "--", "-weird"]) else { Issue.record("expected run"); return }
        #expect(dashed.positionals == ["-weird"])
    }

    @Test(arguments: [("up", "start"), ("connect", "start"), ("down", "stop"), ("disconnect", "stop"),
                      ("delete", "remove"), ("rm", "remove")])
    func aliasesRunTheirCommandUnderItsName(alias: String, name: String) throws {
        let parser = ArgumentParser(root: VPNCLI.root)
        guard case .run(let spec, let args) = try parser.parse([alias, "office"]) else { Issue.record("expected run"); return }
        #expect(spec.name == name)
        #expect(args.command == [name], "hints and help name the command, not the alias")
        let help = Harness().run("help", alias)
        #expect(help.stdout.contains("USAGE: vpnctl \(name) "))
        #expect(help.stdout.contains("ALIASES: "))
        #expect(Harness().run("help").stdout.contains("(also: \(parser.spec(for: [name])!.aliases.joined(separator: ", ")))"))
    }

    @Test func versionIsACommandToo() throws {
        #expect(try { if case .version = try ArgumentParser(root: VPNCLI.root).parse(["version"]) { return true }; return false }())
        let r = Harness().run("version")
        #expect(r.code == 0)
        #expect(r.stdout.hasPrefix("vpnctl "))
    }

    @Test(arguments: [["help"], ["--help"], ["-h"], []])
    func rootHelpGoesToStdout(argv: [String]) {
        let r = Harness().run(argv)
        #expect(r.code == 0)
        #expect(r.stdout.hasPrefix("OVERVIEW: "))
        #expect(r.stdout.contains("EXIT CODES:"))
        #expect(r.stderr == "")
    }

    @Test(arguments: VPNCLI.commands.map(\.name))
    func everyCommandHasHelpThreeWays(name: String) {
        let a = Harness().run("help", name), b = Harness().run(name, "--help"), c = Harness().run(name, "-h")
        #expect(a.code == 0 && b.code == 0 && c.code == 0)
        #expect(a.stdout == b.stdout && b.stdout == c.stdout)
        #expect(a.stdout.contains("vpnctl \(name)"))
    }

    @Test func version() {
        let r = Harness().run("--version")
        #expect(r.code == 0)
        #expect(r.stdout == "vpnctl \(vpnctlVersion)\n")
    }

    @Test func jsonErrorsAreAlsoOnStdout() {
        let r = Harness().run("show", "nope", "--json")
        #expect(r.code == 9)
        let error = jsonObject(r.stdout)["error"] as? [String: Any]
        #expect(jsonObject(r.stdout)["schemaVersion"] as? Int == 1)
        #expect(error?["code"] as? Int == 9)
        #expect(error?["name"] as? String == "configurationUnknown")
        #expect(error?["message"] as? String == "no profile named 'nope'")
        #expect(r.stderr.hasPrefix("vpnctl: no profile named 'nope'"))
    }

    @Test func usageErrorWithJSONIsJSON() {
        let r = Harness().run("list", "--bogus", "--json")
        #expect(r.code == 2)
        #expect((jsonObject(r.stdout)["error"] as? [String: Any])?["name"] as? String == "usage")
    }
}

@Suite struct JSONOutputTests {
    /// The hand-built status JSON must match what JSONEncoder writes for the same value.
    @Test func handBuiltStatusMatchesEncoder() throws {
        var d = DerivedStatus(id: UUID(), name: "o\"ffice\n", status: .disconnected, supervisorAlive: false)
        d.lastDisconnectError = ConnectionError(.serverNotResponding, "no handshake from \"peer\"")
        d.stopReason = .connectionFailed
        d.connectedSince = Date(timeIntervalSince1970: 1_764_430_000.5)
        d.interface = "utun0"
        let byHand = StatusJSON(status: d).jsonText
        let byEncoder = Output.encodeJSON(StatusJSON(status: d))
        #expect(byHand == byEncoder)
        let empty = DerivedStatus(id: UUID(), name: "x", status: .connected, supervisorAlive: true)
        #expect(StatusJSON(status: empty).jsonText == Output.encodeJSON(StatusJSON(status: empty)))

        // Every member filled: a resolver, the kill switch, who started it, a retry.
        var record = RuntimeRecord(id: UUID(), name: "full", status: .connecting)
        var resolver = ResolverRecord(backend: "systemd-resolved")
        resolver.servers = ["198.18.5.1", "198.18.5.2"]
        resolver.matchDomains = ["corp.example"]
        resolver.interface = "utun4"
        resolver.reason = "resolv.conf is resolved's stub"
        record.resolver = resolver
        record.killSwitch = KillSwitchRecord(table: "vpnctl_ks", netns: nil)
        record.startedBy = StartOrigin(rule: 2, reason: "on ethernet \"eth0\"")
        record.persistent = true
        record.retrying = "no handshake from 198.18.0.1:51820"
        record.reconnects = 3
        var full = DerivedStatus(id: record.id, name: "full", status: .connecting, interface: "utun4", supervisorAlive: true)
        full.record = record
        full.bypassRoutes = ["198.18.0.1/32"]
        full.activity = TunnelActivity(latestHandshake: nil, reportsHandshakes: true, rxBytes: 0, txBytes: 92)
        #expect(StatusJSON(status: full).jsonText == Output.encodeJSON(StatusJSON(status: full)))
        // A dead supervisor's resolver is staleResolver.
        full.supervisorAlive = false
        full.status = .disconnected
        #expect(StatusJSON(status: full).jsonText == Output.encodeJSON(StatusJSON(status: full)))
    }
}
