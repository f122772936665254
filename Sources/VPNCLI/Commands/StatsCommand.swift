#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

enum StatsCommand {
    static let spec = CommandSpec(
        name: "stats", abstract: L("Show interface counters (the kernel's, as in /proc/net/dev): tunnels and the links under them."),
        discussion: L("""
        These are interface counters, and estimates: tunnel counters count inner
        traffic, link counters include protocol overhead, and counters reset when an
        interface is recreated (reported as a reset, never as a negative rate).
        With no interface: the tunnel interfaces, the links with a default route
        (a veth or bridge too: the way out of a namespace) and the physical links
        (ethernet, wifi, cellular). VPNCTL_PROC_NET_DEV may point at another file to parse.
        """),
        examples: [
            "vpnctl stats",
            "vpnctl stats --profile office --watch",
            "vpnctl stats utun0 --json",
        ],
        options: [OptionSpec("profile", value: "profile", help: L("The tunnel interface of this profile, with this session's bytes.")),
                  OptionSpec("all", help: L("Every interface.")),
                  OptionSpec("prometheus", help: L("node_exporter textfile-collector format.")),
                  OptionSpec("watch", help: L("Sample repeatedly and show rates per second.")),
                  OptionSpec("interval", value: "seconds", help: L("With --watch: seconds between samples (default 1)."))],
        positionals: [PositionalSpec("interface", optional: true, variadic: true, help: L("Interfaces to show."))],
        run: run)

    typealias Row = StatsRow

    static func run(_ inv: Invocation) throws -> ExitCode {
        let args = inv.args
        if args.flag("prometheus") && inv.options.json {
            throw VPNError.usage(L("'--json' and '--prometheus' cannot be used together"), hint: L("See 'vpnctl help stats'."))
        }
        if args.flag("all") && (!args.positionals.isEmpty || args.value("profile") != nil) {
            throw VPNError.usage(L("'--all' cannot be combined with interfaces or '--profile'"), hint: L("See 'vpnctl help stats'."))
        }
        var interval = 1.0
        if let text = args.value("interval") {
            guard args.flag("watch") else { throw VPNError.usage(L("'--interval' needs '--watch'"), hint: L("See 'vpnctl help stats'.")) }
            guard let v = Double(text), v >= 0.05, v <= 3600 else {
                throw VPNError.usage(L("invalid value \(text.quotedForMessage) for '--interval <seconds>': expected a number from 0.05 to 3600"),
                                     hint: L("See 'vpnctl help stats'."))
            }
            interval = v
        }
        let path = inv.context.environment["VPNCTL_PROC_NET_DEV"].flatMap { $0.isEmpty ? nil : $0 } ?? ProcNetDev.defaultPath
        let useCase = StatsUseCase(sampler: KernelInterfaceSampler(procNetDevPath: path))
        let selection = try selection(inv)
        do {
            if args.flag("watch") { return try watch(inv, StatsWatch(useCase: useCase, selection: selection), interval: interval) }
            let snapshot = try useCase.snapshot(selection)
            if inv.options.json {
                printJSON(inv, snapshot.rows, sampledAt: snapshot.sampledAt, session: snapshot.session, interval: nil)
            } else if args.flag("prometheus") {
                inv.context.stdout.write(prometheus(snapshot.rows))
            } else {
                printTable(inv, snapshot.rows, session: snapshot.session, hidden: snapshot.hidden)
            }
            return .ok
        } catch let e as StatsError {
            throw error(e, inv)
        }
    }

    static func selection(_ inv: Invocation) throws -> StatsSelection {
        guard let name = inv.args.value("profile") else {
            var s = StatsSelection(interfaces: inv.args.positionals, all: inv.args.flag("all"), owners: runningProfiles(inv))
            if s.interfaces.isEmpty && !s.all { s.underlay = StatsSelection.defaultRouteLinks() }
            return s
        }
        let status = try inv.service.stats(name).status
        do {
            var s = try StatsUseCase.selection(for: status)
            s.interfaces = inv.args.positionals + s.interfaces
            return s
        } catch let e as StatsError {
            throw error(e, inv)
        }
    }

    static func error(_ e: StatsError, _ inv: Invocation) -> VPNError {
        switch e {
        case .noSuchInterface(let name, let close):
            // `stats office` for `stats --profile office`: say so.
            if let manager = try? inv.loadedManager(), let profile = try? manager.profile(named: name) {
                return VPNError(.noSuchInterface, L("no interface named \(name.quotedForMessage); '\(profile.name)' is a profile"),
                                hint: L("for its tunnel: vpnctl stats --profile \(profile.name.shellQuoted)"))
            }
            return VPNError(.noSuchInterface, L("no interface named \(name.quotedForMessage)"),
                            hint: close.isEmpty ? "see them all with: vpnctl stats --all"
                                                : Suggest.question(close))
        case .notConnected(let profile, let status):
            return VPNError(.notConnected, L("'\(profile)' is \(status.displayName); it has no tunnel interface"),
                            hint: L("start it with: vpnctl start \(profile)"))
        }
    }

    /// --watch: sample, render, wait until the next sample is due.
    static func watch(_ inv: Invocation, _ watch: StatsWatch, interval: Double) throws -> ExitCode {
        var watch = watch
        let prometheusFormat = inv.args.flag("prometheus")
        let inPlace = inv.context.stdoutIsTerminal && !inv.options.json && !prometheusFormat
        var linesDrawn = 0
        while inv.context.stdout.checkOpen() {
            // Through the agent, asked again before each sample: revoking
            // the caller's access ends what they watch.
            if let profile = inv.args.value("profile"), let remote = inv.service as? RemoteService { _ = try remote.stats(profile) }
            let tick = try watch.next()
            let rows = tick.snapshot.rows
            if inv.options.json {
                printJSON(inv, rows, sampledAt: tick.snapshot.sampledAt, session: tick.snapshot.session, interval: interval)
            } else if prometheusFormat {
                inv.context.stdout.write(prometheus(rows) + "\n")
            } else if inPlace {
                if linesDrawn > 0 { inv.context.stdout.write("\u{1B}[\(linesDrawn)A\u{1B}[J") }
                linesDrawn = printWatchTable(inv, rows)
            } else {
                for r in rows {
                    let (rx, tx) = (rate(r.rxRate, tick.isFirst), rate(r.txRate, tick.isFirst))
                    let (totalRx, totalTx) = (humanBytes(r.counters.rxBytes), humanBytes(r.counters.txBytes))
                    let counts = r.resetDetected
                        ? L("rate rx \(rx)  tx \(tx)  total rx \(totalRx)  tx \(totalTx)  (counters reset: interface recreated)")
                        : L("rate rx \(rx)  tx \(tx)  total rx \(totalRx)  tx \(totalTx)")
                    inv.output.line("\(Timestamp.clock(Date()))  \(r.counters.name)  \(counts)")
                }
            }
            // Sampling is periodic by nature: wait until the next sample is due.
            let due = tick.at + Int64(interval * 1000)
            while monotonicMilliseconds() < due && inv.context.stdout.checkOpen() {
                _ = pollReadable([], orHangupOf: inv.context.stdout.descriptor, timeoutMs: Int32(max(1, due - monotonicMilliseconds())))
            }
        }
        return .ok
    }

    /// Which profile runs on which interface, from the run directory.
    static func runningProfiles(_ inv: Invocation) -> [String: String] {
        guard FileSystem.exists(inv.options.runDirectory), let manager = try? inv.loadedManager() else { return [:] }
        return StatsUseCase.owners(of: manager.profiles, controller: inv.controller)
    }

    static func rate(_ r: Double?, _ first: Bool) -> String {
        guard let r else { return first ? "-" : L("reset") }
        return humanBytes(wholeRate(r)) + "/s"
    }

    /// A rate as a whole number of bytes: a counter that jumped by nearly
    /// 2^64 between samples (a file, or a driver, that says so) gives a rate
    /// past UInt64's range, which a plain conversion traps on.
    static func wholeRate(_ r: Double) -> UInt64 {
        let x = r.rounded()
        guard x > 0 else { return 0 }
        return x >= 18_446_744_073_709_551_615.0 ? UInt64.max : UInt64(x)
    }

    static func humanBytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        if n < 1024 { return "\(n) B" }
        var v = Double(n)
        var u = 0
        while v >= 1024 && u < units.count - 1 { v /= 1024; u += 1 }
        let tenths = Int((v * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[u])"
    }

    static var footer: String { L("""
        Interface counters (the kernel's, as in /proc/net/dev), and estimates: tunnel counters count inner traffic,
        link counters include protocol overhead, and counters reset when an interface is recreated.
        """) }

    static func printTable(_ inv: Invocation, _ rows: [Row], session: StatsSession?, hidden: [String] = []) {
        if rows.isEmpty {
            let left = hidden.filter { $0 != "lo" }
            inv.output.note(left.isEmpty ? L("no tunnel, and no link with a default route or of a physical class (ethernet, wifi, cellular)")
                : L("no tunnel, and no link with a default route or of a physical class; not shown: \(left.prefix(6).joined(separator: ", "))\(left.count > 6 ? ", …" : ""): vpnctl stats --all"))
        } else {
            inv.output.table([L("INTERFACE"), L("CLASS"), "RX", "TX", L("RX PKTS"), L("TX PKTS"), L("ERRORS"), L("DROPS")], rows.map { r in
                let c = r.counters
                return [c.name + (r.profile.map { " (\($0))" } ?? ""), r.facts.kind.rawValue, humanBytes(c.rxBytes), humanBytes(c.txBytes),
                        "\(c.rxPackets)", "\(c.txPackets)", "\(c.rxErrors &+ c.txErrors)", "\(c.rxDropped &+ c.txDropped)"]
            })
        }
        if let s = session {
            inv.output.line("")
            if s.resetDetected {
                inv.output.line(L("this session (\(s.profile)): unknown: \(s.interface) was recreated since the session connected"))
            } else if let rx = s.rxBytes, let tx = s.txBytes {
                inv.output.line(L("this session (\(s.profile), since \(s.since.map(Timestamp.iso8601) ?? "?")): rx \(humanBytes(rx))  tx \(humanBytes(tx))"))
                if let total = rows.first(where: { $0.counters.name == s.interface })?.counters,
                   total.rxBytes > rx || total.txBytes > tx {
                    inv.output.line("  " + L("(\(s.interface)'s totals above also count rx \(humanBytes(total.rxBytes &- rx))  tx \(humanBytes(total.txBytes &- tx)) from before this session connected)"))
                }
            }
        }
        // For a person at a terminal, on stderr: `stats | awk` reads only the table.
        if inv.context.stderrIsTerminal && !rows.isEmpty {
            inv.output.note("\n" + footer)
        }
    }

    static func printWatchTable(_ inv: Invocation, _ rows: [Row]) -> Int {
        inv.output.table([L("INTERFACE"), L("CLASS"), "RX/S", "TX/S", "RX", "TX"], rows.map { r in
            [r.counters.name, r.facts.kind.rawValue, rate(r.rxRate, r.rxRate == nil && !r.resetDetected), rate(r.txRate, r.txRate == nil && !r.resetDetected),
             humanBytes(r.counters.rxBytes), humanBytes(r.counters.txBytes)]
        })
        inv.output.line(L("(estimates from /proc/net/dev; Ctrl-C to stop)"))
        return rows.count + 2
    }

    /// Written by hand into bytes: with 10,000 interfaces JSONEncoder, and
    /// even string interpolation, would cost more than reading /proc/net/dev.
    static func json(_ rows: [Row], sampledAt: Date, session: StatsSession?, interval: Double?) -> String {
        jsonBytes(rows, sampledAt: sampledAt, session: session, interval: interval).string
    }

    /// One JSON line on stdout. When every name is printable ASCII (any
    /// name but a hostile one), the line goes out in 64 KiB pieces as it is
    /// written: the terminal escaping that `Output.line` does would scan
    /// 3 MB for 10,000 interfaces to change nothing, and the whole line
    /// would be copied three times on its way out.
    static func printJSON(_ inv: Invocation, _ rows: [Row], sampledAt: Date, session: StatsSession?, interval: Double?) {
        let plain = rows.allSatisfy { ByteWriter.isPrintableASCII($0.counters.name) && ByteWriter.isPrintableASCII($0.profile ?? "") }
            && ByteWriter.isPrintableASCII(session?.profile ?? "")
        // One snapshot at a terminal is indented; --watch lines stay compact.
        if interval == nil && inv.context.stdoutIsTerminal {
            return inv.output.json(json(rows, sampledAt: sampledAt, session: session, interval: interval))
        }
        guard plain else { return inv.output.line(json(rows, sampledAt: sampledAt, session: session, interval: interval)) }
        let stdout = inv.context.stdout
        var w = jsonBytes(rows, sampledAt: sampledAt, session: session, interval: interval, flush: { stdout.write($0) })
        w.byte(0x0A)
        w.flush()
    }

    static func jsonBytes(_ rows: [Row], sampledAt: Date, session: StatsSession?, interval: Double?,
                          flush: ((String) -> Void)? = nil) -> ByteWriter {
        var w = ByteWriter(capacity: flush == nil ? 200 + rows.count * 280 : ByteWriter.piece + 1024, sink: flush)
        // Keys in sorted order, as every other command writes them.
        w.lit("{\"estimate\":true,\"interfaces\":[")
        for (i, r) in rows.enumerated() {
            let c = r.counters
            if i > 0 { w.byte(UInt8(ascii: ",")) }
            w.lit("{\"class\":\""); w.raw(r.facts.kind.rawValue); w.byte(UInt8(ascii: "\""))
            w.lit(",\"ifindex\":"); if let x = r.facts.ifindex { w.number(UInt64(max(0, x))) } else { w.lit("null") }
            w.lit(",\"name\":"); w.quoted(c.name)
            if let p = r.profile { w.lit(",\"profile\":"); w.quoted(p) }
            w.lit(r.resetDetected ? ",\"resetDetected\":true" : ",\"resetDetected\":false")
            w.lit(",\"rxBytes\":"); w.number(c.rxBytes)
            if interval != nil {
                w.lit(",\"rxBytesPerSecond\":"); if let x = r.rxRate { w.number(wholeRate(x)) } else { w.lit("null") }
            }
            w.lit(",\"rxDropped\":"); w.number(c.rxDropped)
            w.lit(",\"rxErrors\":"); w.number(c.rxErrors)
            w.lit(",\"rxPackets\":"); w.number(c.rxPackets)
            w.lit(",\"txBytes\":"); w.number(c.txBytes)
            if interval != nil {
                w.lit(",\"txBytesPerSecond\":"); if let x = r.txRate { w.number(wholeRate(x)) } else { w.lit("null") }
            }
            w.lit(",\"txDropped\":"); w.number(c.txDropped)
            w.lit(",\"txErrors\":"); w.number(c.txErrors)
            w.lit(",\"txPackets\":"); w.number(c.txPackets)
            w.byte(UInt8(ascii: "}"))
            w.flushIfFull()
        }
        w.byte(UInt8(ascii: "]"))
        if let interval { w.raw(",\"intervalSeconds\":\(interval)") }
        w.lit(",\"sampledAt\":\"")
        w.raw(Timestamp.iso8601(sampledAt))
        w.lit("\",\"schemaVersion\":1")
        if let x = session {
            w.lit(",\"session\":{\"interface\":"); w.quoted(x.interface)
            w.lit(",\"profile\":"); w.quoted(x.profile)
            w.lit(x.resetDetected ? ",\"resetDetected\":true" : ",\"resetDetected\":false")
            w.lit(",\"rxBytes\":"); if let v = x.rxBytes { w.number(v) } else { w.lit("null") }
            w.lit(",\"since\":"); if let d = x.since { w.quoted(Timestamp.iso8601(d)) } else { w.lit("null") }
            w.lit(",\"txBytes\":"); if let v = x.txBytes { w.number(v) } else { w.lit("null") }
            w.byte(UInt8(ascii: "}"))
        }
        w.byte(UInt8(ascii: "}"))
        return w
    }

    static let metrics: [(String, String, (InterfaceCounters) -> UInt64)] = [
        ("receive_bytes_total", "Bytes received", { $0.rxBytes }),
        ("receive_packets_total", "Packets received", { $0.rxPackets }),
        ("receive_errors_total", "Receive errors", { $0.rxErrors }),
        ("receive_drop_total", "Received packets dropped", { $0.rxDropped }),
        ("transmit_bytes_total", "Bytes transmitted", { $0.txBytes }),
        ("transmit_packets_total", "Packets transmitted", { $0.txPackets }),
        ("transmit_errors_total", "Transmit errors", { $0.txErrors }),
        ("transmit_drop_total", "Transmitted packets dropped", { $0.txDropped }),
    ]

    /// The node_exporter textfile-collector format.
    static func prometheus(_ rows: [Row]) -> String {
        var s = ""
        for (suffix, help, value) in metrics {
            let name = "vpnctl_interface_\(suffix)"
            s += "# HELP \(name) \(help) by the interface, from /proc/net/dev (an estimate; resets when the interface is recreated).\n"
            s += "# TYPE \(name) counter\n"
            for r in rows {
                s += "\(name){interface=\"\(label(r.counters.name))\",class=\"\(r.facts.kind.rawValue)\""
                if let p = r.profile { s += ",profile=\"\(label(p))\"" }
                s += "} \(value(r.counters))\n"
            }
        }
        return s
    }

    static func label(_ v: String) -> String {
        var out = ""
        for ch in v.escapingControls(keepLineBreaks: false) {
            switch ch {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(ch)
            }
        }
        return out
    }
}

/// Appends JSON pieces to a byte buffer; with a sink, hands it on in pieces.
struct ByteWriter {
    var bytes: [UInt8]
    let sink: ((String) -> Void)?
    static let piece = 64 << 10

    init(capacity: Int, sink: ((String) -> Void)? = nil) {
        bytes = []
        bytes.reserveCapacity(capacity)
        self.sink = sink
    }

    mutating func flushIfFull() {
        if sink != nil && bytes.count >= ByteWriter.piece { flush() }
    }

    mutating func flush() {
        guard let sink, !bytes.isEmpty else { return }
        sink(string)
        bytes.removeAll(keepingCapacity: true)
    }

    static func isPrintableASCII(_ s: String) -> Bool {
        s.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    mutating func byte(_ b: UInt8) { bytes.append(b) }
    mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }
    mutating func lit(_ s: StaticString) { s.withUTF8Buffer { bytes.append(contentsOf: $0) } }

    mutating func number(_ v: UInt64) {
        if v == 0 { bytes.append(0x30); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var n = v, count = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while n > 0 { buf[count] = UInt8(n % 10) + 0x30; n /= 10; count += 1 }
            for i in stride(from: count - 1, through: 0, by: -1) { bytes.append(buf[i]) }
        }
    }

    mutating func quoted(_ s: String) {
        var needsEscape = false
        for b in s.utf8 where b < 0x20 || b == 0x22 || b == 0x5C || b >= 0x7F { needsEscape = true; break }
        if !needsEscape {
            bytes.append(0x22); bytes.append(contentsOf: s.utf8); bytes.append(0x22)
            return
        }
        var out = ""
        JSONValue.quote(s, into: &out)
        bytes.append(contentsOf: out.utf8)
    }

    var string: String { String(decoding: bytes, as: UTF8.self) }
}
