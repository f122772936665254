import FoundationEssentials
import VPNCore
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
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        var since: Date?
        if let text = inv.args.value("since") {
            guard let d = ProfileLog.since(text, now: Date()) else {
                throw VPNError.usage(L("invalid value \(text.abbreviated(100).quotedForMessage) for '--since <time>': expected a time ago (10m, 2h, 1d) or an ISO 8601 time (2026-12-02T03:04:05Z)"),
                                     hint: L("See 'vpnctl help logs'."))
            }
            since = d
        }
        let follow = inv.args.flag("follow")
        let path = inv.controller.runtime.logPath(profile.id)
        var earlier: [UInt8] = []
        do {
            earlier = try FileSystem.readFileIfPresent(path + ".1", limit: ProfileLog.maximumSize) ?? []
        } catch {
            throw VPNError.from(error)
        }
        let tail = LogTail(path: path)
        let current = try readLines(tail)
        let text = String(decoding: earlier, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        lines += current.map { Substring($0) }
        let shown = ProfileLog.lines(lines, since: since)
        if inv.options.json && !follow {
            inv.output.emit(Result(profile: profile.name, id: profile.id.lowercasedString, lines: shown.map(line)))
            return .ok
        }
        if shown.isEmpty && lines.isEmpty && !follow && !FileSystem.exists(path) {
            inv.output.note(L("'\(profile.name)' has no log yet: it has not been started since the run directory was made"))
        }
        for l in shown { print(inv, l, follow: follow) }
        guard follow else { return .ok }
        let watch: FileWatch
        do { watch = try FileWatch(path) } catch {
            throw VPNError(.failure, L("cannot follow the log of '\(profile.name)': \(error)"),
                           hint: L("start it once ('vpnctl start \(profile.name.shellQuoted)'); then its log can be followed"))
        }
        let stdout = inv.context.stdout
        while true {
            if let revoked = inv.context.recheckAccess?() { throw revoked }
            guard stdout.checkOpen(), stdout.failure == nil else { break }
            if !pollReadable([watch.fd], orHangupOf: stdout.descriptor, timeoutMs: 1000).isEmpty { _ = watch.drain() }
            for l in try readLines(tail) { print(inv, Substring(l), follow: true) }
        }
        return .ok
    }

    static func readLines(_ tail: LogTail) throws -> [String] {
        do { return try tail.read() } catch { throw VPNError.from(error) }
    }

    static func print(_ inv: Invocation, _ text: Substring, follow: Bool) {
        if inv.options.json { inv.output.emitLine(line(text)) } else { inv.output.line(String(text)) }
    }
}
