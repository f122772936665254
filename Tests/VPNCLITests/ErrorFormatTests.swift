import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

/// The shape of every error on stderr: `vpnctl: <what>` on the first line
/// (what scripts match), then only lines that start with a known prefix:
/// `  - ` (a problem, or a further line of the message) or `hint: `.
@Suite struct ErrorFormatTests {
    static let prefixes = ["  - ", "hint: "]

    /// The lines of stderr after the first that carry no known prefix.
    static func unprefixed(_ stderr: String) -> [String] {
        stderr.split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
            .filter { !$0.isEmpty }
            .filter { line in !prefixes.contains { line.hasPrefix($0) } }.map(String.init)
    }

    static let wgQuick = """
        [Interface]
        PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
        Address = 10.0.0.2/32
        [Peer]
        PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
        AllowedIPs = 0.0.0.0/0
        Endpoint = 198.18.0.1:51820
        """

    /// Failing commands of every kind that touch nothing outside the
    /// harness's directories: the parser's errors, commands' usage errors,
    /// unknown names, import and create problems, remedies.
    @Test func everyLineAfterTheFirstHasAPrefix() {
        let h = Harness()
        let good = h.write("office.conf", Self.wgQuick)
        #expect(h.run("import", good, "--name", "office").code == 0)
        #expect(h.run("import", good, "--name", "off").code == 0)
        #expect(h.run("disable", "off").code == 0)
        let bad = h.write("bad.conf", "[Interface]\nPrivateKey = nope\nAddress = 10.0.0.2/99\nFoo = bar\n[Peer]\nAllowedIPs = 0.0.0.0/0\n")
        let ovpn = h.write("bad.ovpn", "client\nremote\nscript-security 2\nup /bin/x\n")
        let notes = h.write("notes.txt", "hello\n")
        let json = h.write("bad.json", "{ \"x\": ")
        let mobileconfig = h.write("bad.mobileconfig", "<?xml version=\"1.0\"?><plist><dict><key>PayloadContent</key><array/></dict></plist>")
        try? FileManager.default.createDirectory(atPath: h.root + "/fleet", withIntermediateDirectories: true)
        _ = h.write("fleet/a.conf", "[Interface]\nPrivateKey = nope\n")
        _ = h.write("fleet/b.ovpn", "client\nremote\n")
        h.environment["VPNCTL_PROC_NET_DEV"] = h.write("dev", """
            Inter-|   Receive                                                |  Transmit
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
                lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0
            """)
        let commands: [[String]] = [
            ["lst"], ["stat"], ["help", "stat"], ["list", "--x"], ["list", "-q"], ["show"], ["list", "y"], ["secret"],
            ["secret", "get", "x"], ["start", "office", "--timeout", "soon"], ["start", "office", "--wait", "--no-wait"],
            ["status", "--count", "2"], ["verify", "office"], ["list", "--color=sometimes"], ["list", "--no-color", "--color=always"],
            ["completion", "tcsh"], ["can", "bogus", "office"], ["stop"], ["stats", "--all", "lo"],
            ["show", "nope"], ["export", "nope"], ["export", "office", "--format", "nope"], ["logs", "nope"], ["remove", "nope"],
            ["import", "/dev/null"], ["import", h.root + "/missing.conf"], ["import", notes], ["import", bad], ["import", ovpn],
            ["import", mobileconfig], ["import", good, "--name", "office"], ["apply", h.root + "/fleet"],
            ["create", "x", "ikev2"], ["create", "x", "wireguard"], ["create", "x", "openvpn", "--remote", "a"], ["create", "x", "bogus"],
            ["create", "x", "ikev2", "--auth", "nope", "--server", "a", "--remote-id", "b"],
            ["create", "x", "wireguard", "--generate-key", "--address", "10.0.0.2/32", "--peer-public-key", "x",
             "--allowed-ips", "0.0.0.0/0", "--endpoint", "198.18.0.1:51820"],
            ["secret", "set", "office", "nope"], ["secret", "set", "office", "privat-key"], ["secret", "remove", "office", "extra"],
            ["edit", "office", "--from", json], ["edit", "office", "--from", notes], ["edit", "office", "--rebase"],
            ["trust", "add", notes], ["trust", "remove", "abcd"], ["stats", "nope0"], ["ondemand", "enable", "office"],
        ]
        var sawProblems = false, sawHint = false, sawUsageHint = false
        for argv in commands {
            let r = h.run(argv)
            let what = argv.joined(separator: " ")
            #expect(r.code != 0, "\(what) did not fail")
            #expect(r.stdout.isEmpty, "\(what): stdout \(r.stdout)")
            #expect(r.stderr.hasPrefix("vpnctl: ") && r.stderr.hasSuffix("\n"), "\(what): \(r.stderr)")
            #expect(Self.unprefixed(r.stderr).isEmpty, "\(what): lines without a prefix: \(Self.unprefixed(r.stderr))\n\(r.stderr)")
            sawProblems = sawProblems || r.stderr.contains("\n  - ")
            sawHint = sawHint || r.stderr.contains("\nhint: ")
            sawUsageHint = sawUsageHint || (r.code == ExitCode.usage.rawValue && r.stderr.contains("\nhint: See 'vpnctl help"))
        }
        #expect(sawProblems && sawHint && sawUsageHint, "the table lost the errors it is for")
    }

    /// The first line and the exit code are what scripts rely on: they stay,
    /// and --json still puts the whole error on stdout.
    @Test func theFirstLineAndTheCodeStay() {
        let h = Harness()
        let r = h.run("start", "office", "--timeout", "soon")
        #expect(r.code == ExitCode.usage.rawValue)
        #expect(r.stderr == "vpnctl: invalid value 'soon' for '--timeout <seconds>': expected a whole number of seconds (1–86400)\n"
                + "hint: See 'vpnctl help start'.\n")
        let j = h.run("show", "nope", "--json")
        #expect(j.code == ExitCode.configurationUnknown.rawValue)
        #expect(j.stderr == "vpnctl: no profile named 'nope'\nhint: there are no profiles yet; add one with: vpnctl import FILE\n")
        let error = jsonObject(j.stdout)["error"] as? [String: Any]
        #expect(error?["message"] as? String == "no profile named 'nope'" && error?["hint"] as? String != nil)
    }

    /// Line breaks inside a message (a program's output, as nft's), a
    /// problem or a hint start a line with the prefix of their part;
    /// empty lines are left out.
    @Test func lineBreaksInsideAnErrorKeepThePrefix() {
        let e = VPNError(.failure, "nft -f failed (exit 1): Error: syntax error\nadd rule inet x y\n        ^^^\n\n",
                         hint: "first\n\nsecond", problems: ["one\ntwo", "", "  nested"])
        #expect(Output.errorLines(e, hint: e.hint) == [
            "nft -f failed (exit 1): Error: syntax error",
            "  - add rule inet x y", "  -         ^^^",
            "  - one", "  - two", "  -   nested",
            "hint: first", "hint: second",
        ])
        #expect(Output.errorLines(VPNError(.usage, "x"), hint: nil) == ["x"])
        #expect(Output.errorLines(VPNError(.usage, ""), hint: "h") == ["", "hint: h"])
        let sink = BufferSink()
        Output(context: Context(environment: [:], stdout: BufferSink(), stderr: sink), json: false, color: false).error(e)
        #expect(sink.text.hasPrefix("vpnctl: nft -f failed") && Self.unprefixed(sink.text).isEmpty, "\(sink.text)")
    }
}
