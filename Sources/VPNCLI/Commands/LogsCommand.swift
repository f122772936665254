import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// `vpnctl logs PROFILE [--follow] [--since TIME]`: the supervisor's and the
/// provider's log of one profile, without its path.
enum LogsCommand {
    static let spec = CommandSpec(
        name: "logs", abstract: L("Print a profile's tunnel log (the supervisor's and the provider's lines)."),
        discussion: L("""
        Each line starts with the time it was written (UTC). The log is kept under
        1 MiB: past that, the older part is kept as one earlier file, which is
        printed first. --since takes a time ago (30s, 10m, 2h, 1d, 1h30m) or an ISO
        8601 time (2026-12-02T03:04:05Z, 2026-12-02T04:04+01:00, or local time:
        '2026-12-02 03:04', 2026-12-02). --follow goes on printing new lines, also
        across a rotation, until interrupted. 'vpnctl remove' deletes the log.
        """),
        examples: [
            "vpnctl logs office",
            "vpnctl logs office --since 10m",
            "vpnctl logs office --follow",
        ],
        options: [OptionSpec("follow", short: "f", help: L("Go on printing lines as they are written, until interrupted.")),
                  OptionSpec("since", value: "time", help: L("Only lines written since then: 10m, 2h, 1d ago, or an ISO 8601 time."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Line: Encodable {
        let time: String?
        let message: String
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let profile: String
        let id: String
        let lines: [Line]
    }

    static func line(_ text: Substring) -> Line {
        guard let t = ProfileLog.time(of: text) else { return Line(time: nil, message: String(text)) }
        return Line(time: Timestamp.iso8601(t), message: String(text.dropFirst(24).drop { $0 == " " }))
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let reference = inv.args.positionals[0]
        var since: Date?
        if let text = inv.args.value("since") {
            guard let d = ProfileLog.since(text, now: Date()) else {
                throw VPNError.usage(L("invalid value \(text.abbreviated(100).quotedForMessage) for '--since <time>': expected a time ago (10m, 2h, 1d) or an ISO 8601 time (2026-12-02T03:04:05Z)"),
                                     hint: L("See 'vpnctl help logs'."))
            }
            since = d
        }
        if inv.args.flag("follow") {
            let events = CommandEvents(inv) { event in
                if case .logLine(let text) = event { print(inv, Substring(text)) }
                return inv.context.stdout.failure == nil
            }
            try inv.service.followLogs(reference, since: since, events)
            return .ok
        }
        let answer = try inv.service.logs(reference, since: since)
        if inv.options.json {
            inv.output.emit(Result(profile: answer.profile, id: answer.id.lowercasedString, lines: answer.lines.map { line(Substring($0)) }))
            return .ok
        }
        if answer.lines.isEmpty && !answer.hasLog {
            inv.output.note(L("'\(answer.profile)' has no log yet: it has not been started since the run directory was made"))
        }
        for l in answer.lines { print(inv, Substring(l)) }
        return .ok
    }

    static func print(_ inv: Invocation, _ text: Substring) {
        if inv.options.json { inv.output.emitLine(line(text)) } else { inv.output.line(String(text)) }
    }
}
