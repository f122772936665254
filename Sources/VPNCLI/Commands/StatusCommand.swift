#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

enum StatusCommand {
    static let spec = CommandSpec(
        name: "status", abstract: L("Show the status of every profile, or of one; --watch prints each transition."),
        discussion: L("""
        Status is derived every time from the runtime record and the live system: a
        record that says connected while its supervisor is dead reads disconnected,
        with its error. --watch is event-driven (inotify and pidfds): it also reports
        transitions it did not cause, such as a stop from another shell or a crash.
        The DNS column is the DNS in effect and its backend; a profile with a kill
        switch gets a line saying whether it is on or blocking (tunnel down).
        """),
        examples: [
            "vpnctl status",
            "vpnctl status office --json",
            "vpnctl status --watch",
        ],
        options: [OptionSpec("watch", help: L("Print every transition as it happens (millisecond timestamps).")),
                  OptionSpec("count", value: "n", help: L("With --watch: exit after n transitions."))],
        positionals: [PositionalSpec("profile", optional: true, help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let reference = inv.args.positionals.first
        if inv.args.flag("watch") { return try watch(inv, reference) }
        if inv.args.value("count") != nil { throw VPNError.usage(L("'--count' needs '--watch'"), hint: L("See 'vpnctl help status'.")) }
        let report = try inv.service.status(reference)
        if inv.options.json {
            var w = JSONWriter(capacity: 128 + 700 * report.profiles.count)
            w.object { w in
                w.key("profiles")
                w.array { w in for p in report.profiles { StatusJSON(status: p.status).write(to: &w) } }
                w.member("schemaVersion", 1)
            }
            inv.output.json(&w)
            return .ok
        }
        let statuses = report.profiles.map(\.status)
        if statuses.isEmpty {
            inv.output.note(report.restricted ? L("no profiles for you: none names you or a group of yours in its policy")
                                              : L("no profiles; add one with: vpnctl import FILE"))
            return .ok
        }
        if inv.context.stdoutIsTerminal {
            printForPeople(inv, statuses)
            retryingLines(inv, statuses)
            bypassLines(inv, statuses)
            onDemandLines(inv, report.profiles)
            return .ok
        }
        let table = pipeTable(statuses)
        inv.output.table(table.header, table.rows)
        // The kill switch, said in words where it matters.
        for d in statuses {
            guard let k = d.killSwitch else { continue }
            switch k {
            case .on: inv.output.line(L("\(d.name): on"))
            case .blocking:
                inv.output.line(L("\(d.name): blocking: kill switch active, tunnel down (vpnctl stop \(d.name) lets traffic out again)"))
            case .missing:
                inv.output.line(L("\(d.name): MISSING: the kill switch's nftables table is gone (a firewall reload?); nothing is blocked (vpnctl stop, then start \(d.name), puts it back)"))
            }
        }
        for d in statuses { if let note = d.resolver?.note { inv.output.line(L("\(d.name): DNS: \(note)")) } }
        for d in statuses {
            guard let r = d.staleResolver else { continue }
            inv.output.line(L("\(d.name): DNS: the dead tunnel's DNS is still in place (\(DerivedStatus.text(of: r))): names go to its servers; restore it with: vpnctl stop \(d.name.shellQuoted)"))
        }
        retryingLines(inv, statuses)
        bypassLines(inv, statuses)
        onDemandLines(inv, report.profiles)
        return .ok
    }

    /// A persistent tunnel whose server has not answered: what it waits for,
    /// and that it keeps trying (its status alone, connecting, would not say why).
    static func retryingLines(_ inv: Invocation, _ statuses: [DerivedStatus]) {
        for d in statuses {
            guard let why = d.retrying else { continue }
            inv.output.line(L("\(d.name): persistent, not connected yet: \(why); it keeps trying (vpnctl stop \(d.name.shellQuoted) ends it)"))
        }
    }

    /// Routes that pull traffic off a tunnel (the TunnelVision class), said
    /// whether the kill switch blocks what they carry or it leaks.
    static func bypassLines(_ inv: Invocation, _ statuses: [DerivedStatus]) {
        for d in statuses {
            for r in d.bypassRoutes {
                if d.killSwitch == .on {
                    inv.output.line(L("\(d.name): route \(r) takes traffic off the tunnel; the kill switch blocks it"))
                } else {
                    inv.output.line(L("\(d.name): route \(r) takes traffic off the tunnel: it leaks outside the tunnel (delete the route, or set includeAllNetworks or enforceRoutes)"))
                }
            }
        }
    }

    /// Who started an active tunnel when no command did, and which
    /// profiles' on-demand is paused.
    static func onDemandLines(_ inv: Invocation, _ rows: [ProfileStatus]) {
        for row in rows {
            let d = row.status
            if d.isActive, let o = d.record?.startedBy { inv.output.line(L("\(d.name): \(d.status.displayName), on-demand rule \(o.rule): \(o.reason)")) }
            if let note = row.onDemandNote, !row.onDemandPaused { inv.output.line(L("\(d.name): on-demand: \(note)")) }
            if row.onDemandPaused, row.onDemandEnabled {
                inv.output.line(L("\(d.name): on-demand paused (vpnctl ondemand resume \(d.name))"))
            }
        }
    }

    struct WatchLine: Encodable {
        let time: String
        let id: String
        let name: String
        let status: String
        let previous: String
        let interface: String?
        let error: ConnectionError?

        /// The error is `lastDisconnectError`, as in `status --json`: one name for one concept.
        enum Keys: String, CodingKey { case time, id, name, status, previous, interface, error = "lastDisconnectError" }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(time, forKey: .time)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(status, forKey: .status)
            try c.encode(previous, forKey: .previous)
            try c.encodeOrNull(interface, forKey: .interface)
            try c.encodeOrNull(error, forKey: .error)
        }
    }

    /// The table for pipes: ISO 8601 times, every error in full, and the
    /// DNS and ACTIVITY columns when a tunnel has something to say there.
    static func pipeTable(_ statuses: [DerivedStatus]) -> (header: [String], rows: [[String]]) {
        let showDNS = DerivedStatus.showsDNS(statuses)
        let showActivity = statuses.contains { $0.activity != nil }
        let header = [L("NAME"), L("STATUS"), L("INTERFACE"), L("SINCE")] + (showDNS ? ["DNS"] : []) + (showActivity ? [L("ACTIVITY")] : [])
            + [L("LAST ERROR")]
        return (header, statuses.map { d in
            [d.name, d.status.displayName, d.interface ?? "-", d.connectedSince.map(Timestamp.iso8601) ?? "-"]
                + (showDNS ? [d.dnsCell] : [])
                + (showActivity ? [activityCell(d.activity) { Timestamp.iso8601($0) }] : [])
                + [d.lastDisconnectError.map { "\($0.name): \($0.message)" } ?? "-"]
        })
    }

    /// The ACTIVITY cell: "handshake 12 s ago, rx 1.2 KiB, tx 3.4 KiB" (the
    /// handshake only from a provider that reports them), "-" without a tunnel.
    static func activityCell(_ a: TunnelActivity?, handshakeTime: (Date) -> String) -> String {
        guard let a else { return "-" }
        let (rx, tx) = (StatsCommand.humanBytes(a.rxBytes), StatsCommand.humanBytes(a.txBytes))
        guard a.reportsHandshakes else { return L("rx \(rx), tx \(tx)") }
        guard let handshake = a.latestHandshake else { return L("no handshake yet, rx \(rx), tx \(tx)") }
        return L("handshake \(handshakeTime(handshake)), rx \(rx), tx \(tx)")
    }

    /// At a terminal: times relative to now (local time with --verbose), a
    /// tunnel's newest handshake and transfer, the status word coloured, and
    /// the last error shortened to fit the width (in full in `show`, in
    /// pipes and in --json).
    static func printForPeople(_ inv: Invocation, _ statuses: [DerivedStatus]) {
        let now = Date()
        var activity: [UUID: String] = [:]
        for d in statuses where d.activity != nil {
            activity[d.id] = activityCell(d.activity) { Timestamp.ago($0, now: now) }
        }
        // Columns with nothing to say are left out at a terminal.
        let showDNS = DerivedStatus.showsDNS(statuses)
        let showActivity = !activity.isEmpty
        let showError = statuses.contains { $0.lastDisconnectError != nil }
        let header = [L("NAME"), L("STATUS"), L("INTERFACE"), L("SINCE")] + (showDNS ? ["DNS"] : []) + (showActivity ? [L("ACTIVITY")] : [])
            + (showError ? [L("LAST ERROR")] : [])
        let rows = statuses.map { d -> [StyledCell] in
            let since = d.connectedSince.map { inv.options.verbose ? Timestamp.local($0) : Timestamp.ago($0, now: now) } ?? "-"
            let error = d.lastDisconnectError.map { "\($0.name): \($0.message)" }
            return [StyledCell(d.name), StyledCell(d.status.displayName, colour(d)), StyledCell(d.interface ?? "-"), StyledCell(since)]
                + (showDNS ? [StyledCell(d.dnsCell)] : [])
                + (showActivity ? [StyledCell(activity[d.id] ?? "-")] : [])
                + (showError ? [StyledCell(error ?? "-", error == nil || d.stopReason == .userInitiated ? nil : "31")] : [])
        }
        // The error first (show has it in full), then the activity, the DNS, the name.
        let last = header.count - 1
        let shrinking = (showError ? [last] : []) + (showActivity ? [showError ? last - 1 : last] : []) + (showDNS ? [4] : []) + [0]
        inv.output.table(header, styled: rows, width: inv.context.terminalWidth, shrinking: shrinking)
    }

    /// Green when connected, yellow on the way, red when it ended in an error.
    static func colour(_ d: DerivedStatus) -> String? {
        switch d.status {
        case .connected: return "32"
        case .connecting, .reasserting, .disconnecting: return "33"
        default: return d.lastDisconnectError != nil && d.stopReason != .userInitiated ? "31" : nil
        }
    }

    /// Renders each transition the service's watch reports, until `--count`
    /// of them or until the reader of stdout goes away.
    static func watch(_ inv: Invocation, _ reference: String?) throws -> ExitCode {
        var limit = Int.max
        if let c = inv.args.value("count") {
            guard let n = Int(c), n > 0 else { throw VPNError.usage(L("invalid value \(c.quotedForMessage) for '--count <n>'"), hint: L("See 'vpnctl help status'.")) }
            limit = n
        }
        let stdout = inv.context.stdout
        var printed = 0
        let events = CommandEvents(inv) { event in
            switch event {
            case .watching(let count):
                if !inv.options.json {
                    inv.output.note(count == 1 ? L("watching 1 profile; Ctrl-C to stop") : L("watching \(count) profiles; Ctrl-C to stop"))
                }
            case .transition(let t):
                emit(inv, t)
                printed += 1
            default:
                break
            }
            return printed < limit && stdout.failure == nil
        }
        try inv.service.watch(reference, events)
        return .ok
    }

    static func emit(_ inv: Invocation, _ t: StatusTransition) {
        if inv.options.json {
            inv.output.emitLine(WatchLine(time: Timestamp.iso8601(t.time), id: t.id.lowercasedString, name: t.name,
                                      status: t.status, previous: t.previous, interface: t.interface, error: t.error))
        } else {
            var s = "\(Timestamp.clock(t.time))  \(t.name)  \(VPNStatus.displayName(of: t.previous)) -> \(VPNStatus.displayName(of: t.status))"
            if let interface = t.interface { s += "  \(interface)" }
            if let error = t.error { s += "  \(error.name): \(error.message)" }
            inv.output.line(s)
        }
    }
}
