#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

enum VerifyCommand {
    static let spec = CommandSpec(
        name: "verify", abstract: L("Prove that traffic to a probe really goes through the tunnel."),
        discussion: L("""
        Checks (1) the interface exists and is up, (2) the kernel's route to the
        probe leaves through this tunnel's interface (RTM_GETROUTE), and (3) a TCP
        connect (HOST:PORT) or an HTTP GET (URL) to the probe succeeds.
        Exit 0: path proven. Exit 12: configured only (the route or the probe does
        not go through the tunnel, or the tunnel is not connected). Exit 4: the probe failed.
        With --dns NAME also (4) the tunnel's DNS server in effect is routed through
        the tunnel and (5) it answers NAME (a query sent to that server alone).
        """),
        examples: [
            "vpnctl verify office",
            "vpnctl verify office --probe http://198.19.0.1:8080/",
        ],
        options: [OptionSpec("probe", value: "url|host:port", help: L("A resource reachable only through the tunnel.")),
                  OptionSpec("dns", value: "name", help: L("Also prove that NAME resolves through the tunnel's DNS server.")),
                  OptionSpec("timeout", value: "seconds", help: L("Probe timeout (default 5)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Check: Encodable {
        let name: String
        let ok: Bool
        let detail: String
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let profile: String
        let probe: String
        let verdict: String
        let checks: [Check]
    }

    static func parseProbe(_ text: String) throws -> ProbeTarget {
        do {
            return try ProbeTarget.parse(text)
        } catch .httpsUnsupported {
            throw VPNError.usage(L("https probes are not supported; use http:// or HOST:PORT (a TCP connect proves the path too)"))
        } catch {
            throw VPNError.usage(L("invalid probe \(text.quotedForMessage): expected http://HOST[:PORT]/PATH or HOST:PORT"), hint: L("See 'vpnctl help verify'."))
        }
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        guard let probeText = inv.args.value("probe") else {
            throw VPNError.usage(L("Missing required option '--probe <url|host:port>'"), hint: L("See 'vpnctl help verify'."))
        }
        _ = try parseProbe(probeText)
        let timeout = try inv.timeoutSeconds(default: 5)
        let reference = inv.args.positionals[0]
        let answer = try Spinner(for: inv, when: true).during(L("verifying '\(reference)' with \(probeText)")) {
            try inv.service.verify(reference, probe: probeText, dns: inv.args.value("dns"), timeout: timeout)
        }
        let checks = answer.report.checks.map { Check(name: $0.name, ok: $0.ok, detail: $0.detail) }
        if inv.options.json {
            inv.output.emit(Result(profile: answer.profile, probe: probeText, verdict: answer.report.verdict.rawValue, checks: checks))
        } else {
            for c in checks { inv.output.line("\(c.ok ? "[ok]  " : "[FAIL]") \(checkLine(c.name, c.detail))") }
            inv.output.line(L("verdict: \(verdictText(answer.report.verdict))"))
        }
        return answer.report.verdict.exitCode
    }

    /// A check's line for people: its name and what it found (JSON keeps
    /// the English key, `name`).
    static func checkLine(_ name: String, _ detail: String) -> String {
        switch name {
        case "interface": return L("interface: \(detail)")
        case "route": return L("route: \(detail)")
        case "probe": return L("probe: \(detail)")
        case "dns route": return L("DNS route: \(detail)")
        case "dns": return L("DNS: \(detail)")
        default: return "\(name): \(detail)"
        }
    }

    /// The verdict for people (JSON keeps the raw value).
    static func verdictText(_ verdict: VerifyVerdict) -> String {
        switch verdict {
        case .pathProven: return L("path proven")
        case .configuredOnly: return L("configured only")
        case .notConnected: return L("not connected")
        case .probeFailed: return L("probe failed")
        }
    }
}
