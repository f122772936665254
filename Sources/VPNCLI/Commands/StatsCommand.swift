#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

enum StatsCommand {
    static let spec = CommandSpec(
        name: "stats", abstract: "Show interface counters from /proc/net/dev: tunnels and the links under them.",
        discussion: """
        These are interface counters, and estimates: tunnel counters count inner
        traffic, link counters include protocol overhead, and counters reset when an
        interface is recreated (reported as a reset, never as a negative rate).
        With no interface: the tunnel interfaces and the underlying links (ethernet,
        wifi, cellular). VPNCTL_PROC_NET_DEV may point at another file to parse.
        """,
        options: [OptionSpec("profile", value: "profile", help: "The tunnel interface of this profile, with this session's bytes."),
                  OptionSpec("all", help: "Every interface."),
                  OptionSpec("prometheus", help: "node_exporter textfile-collector format."),
                  OptionSpec("watch", help: "Sample repeatedly and show rates per second."),
                  OptionSpec("interval", value: "seconds", help: "With --watch: seconds between samples (default 1).")],
        positionals: [PositionalSpec("interface", optional: true, variadic: true, help: "Interfaces to show.")],
        run: run)

    struct Row {
        let counters: InterfaceCounters
        let facts: InterfaceFacts.Facts
        var profile: String?
        var resetDetected = false
        var rxRate: Double? = nil
        var txRate: Double? = nil
    }

    struct Session {
        let profile: String
        let interface: String
        let rxBytes: UInt64?
        let txBytes: UInt64?
        let since: Date?
        let resetDetected: Bool
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let args = inv.args
        if args.flag("prometheus") && inv.options.json {
            throw VPNError.usage("'--json' and '--prometheus' cannot be used together", hint: "See 'vpnctl help stats'.")
        }
        if args.flag("all") && (!args.positionals.isEmpty || args.value("profile") != nil) {
            throw VPNError.usage("'--all' cannot be combined with interfaces or '--profile'", hint: "See 'vpnctl help stats'.")
        }
        var interval = 1.0
        if let text = args.value("interval") {
            guard args.flag("watch") else { throw VPNError.usage("'--interval' needs '--watch'", hint: "See 'vpnctl help stats'.") }
            guard let v = Double(text), v >= 0.05, v <= 3600 else {
                throw VPNError.usage("invalid value \(text.quotedForMessage) for '--interval <seconds>': expected a number from 0.05 to 3600",
                                     hint: "See 'vpnctl help stats'.")
            }
            interval = v
        }
        let path = inv.context.environment["VPNCTL_PROC_NET_DEV"].flatMap { $0.isEmpty ? nil : $0 } ?? ProcNetDev.defaultPath
        let facts = InterfaceFacts()
        var wanted = args.positionals
        var profileTarget: (Profile, DerivedStatus)? = nil
        var owners: [String: String] = [:]
        if let name = args.value("profile") {
            let manager = try inv.loadedManager()
            let profile = try manager.profile(named: name)
            let status = try inv.controller.derive(profile)
            guard status.isActive, let interface = status.interface else {
                throw VPNError(.notConnected, "'\(profile.name)' is \(status.status.name); it has no tunnel interface",
                               hint: "start it with: vpnctl start \(profile.name)")
            }
            wanted.append(interface)
            owners[interface] = profile.name
            profileTarget = (profile, status)
        } else {
            owners = runningProfiles(inv)
        }

        // A few named interfaces are fetched one by one over netlink: the same
        // kernel counters, without making the kernel print all of /proc/net/dev
        // (20 ms with 10,000 interfaces) to read one line of it.
        let fetchByName = !wanted.isEmpty && wanted.count <= 8 && path == ProcNetDev.defaultPath
        let netlink = fetchByName ? try? NetlinkRouteSocket() : nil

        func sample() throws -> [InterfaceCounters] {
            if let netlink {
                var found: [InterfaceCounters] = []
                for name in wanted {
                    if let c = try? netlink.counters(named: name) { found.append(c.counters) }
                }
                if found.count == wanted.count { return found }
            }
            do { return try ProcNetDev.read(path: path) } catch let e as ProcNetDev.ParseError {
                throw VPNError(.failure, "\(path): \(e)")
            } catch {
                throw VPNError(.failure, "\(error)")
            }
        }

        // While watching, a named interface may vanish for a moment (deleted
        // and recreated): that sample skips it, and its return is a reset.
        func select(_ all: [InterfaceCounters], tolerateMissing: Bool = false) throws -> [Row] {
            if !wanted.isEmpty {
                var byName: [String: InterfaceCounters] = [:]
                for c in all { byName[c.name] = c }
                return try wanted.compactMap { name in
                    guard let c = byName[name] else {
                        if tolerateMissing { return nil }
                        let close = Suggest.closest(to: name, among: all.map(\.name), limit: 3)
                        throw VPNError(.configurationUnknown, "no interface named \(name.quotedForMessage)",
                                       hint: close.isEmpty ? "see them all with: vpnctl stats --all"
                                                           : "did you mean \(close.map { "'\($0)'" }.joined(separator: ", "))?")
                    }
                    return Row(counters: c, facts: facts.facts(name), profile: owners[name])
                }
            }
            let showAll = args.flag("all")
            return all.compactMap { c in
                let f = facts.facts(c.name)
                guard showAll || [.tunnel, .ethernet, .wifi, .cellular].contains(f.kind) else { return nil }
                return Row(counters: c, facts: f, profile: owners[c.name])
            }
        }

        func session(_ rows: [Row]) -> Session? {
            guard let (profile, status) = profileTarget, let row = rows.first(where: { $0.counters.name == status.interface }) else { return nil }
            let r = status.record
            let reset = r?.ifindex != row.facts.ifindex
                || (r?.rxBytesAtConnect ?? 0) > row.counters.rxBytes || (r?.txBytesAtConnect ?? 0) > row.counters.txBytes
            return Session(profile: profile.name, interface: row.counters.name,
                           rxBytes: reset ? nil : r?.rxBytesAtConnect.map { row.counters.rxBytes - $0 },
                           txBytes: reset ? nil : r?.txBytesAtConnect.map { row.counters.txBytes - $0 },
                           since: status.connectedSince, resetDetected: reset)
        }

        if !args.flag("watch") {
            let rows = try select(try sample())
            let now = Date()
            if inv.options.json {
                inv.output.line(json(rows, sampledAt: now, session: session(rows), interval: nil))
            } else if args.flag("prometheus") {
                inv.context.stdout.write(prometheus(rows))
            } else {
                printTable(inv, rows, session: session(rows))
            }
            return .ok
        }

        // --watch: sample, compare with the previous sample, print, sleep.
        var previous: [String: (ifindex: Int32?, c: InterfaceCounters, at: Int64)] = [:]
        var first = true
        let inPlace = inv.context.stdoutIsTerminal && !inv.options.json && !args.flag("prometheus")
        var linesDrawn = 0
        while inv.context.stdout.checkOpen() {
            let at = monotonicMilliseconds()
            var rows = try select(try sample(), tolerateMissing: !first)
            facts.forget()
            for i in rows.indices {
                let c = rows[i].counters
                if let p = previous[c.name] {
                    let reset = p.ifindex != rows[i].facts.ifindex || c.rxBytes < p.c.rxBytes || c.txBytes < p.c.txBytes
                        || c.rxPackets < p.c.rxPackets || c.txPackets < p.c.txPackets
                    rows[i].resetDetected = reset
                    let seconds = Double(at - p.at) / 1000
                    if !reset && seconds > 0 {
                        rows[i].rxRate = Double(c.rxBytes - p.c.rxBytes) / seconds
                        rows[i].txRate = Double(c.txBytes - p.c.txBytes) / seconds
                    }
                }
                previous[c.name] = (rows[i].facts.ifindex, c, at)
            }
            if inv.options.json {
                inv.output.line(json(rows, sampledAt: Date(), session: session(rows), interval: interval))
            } else if args.flag("prometheus") {
                inv.context.stdout.write(prometheus(rows) + "\n")
            } else if inPlace {
                if linesDrawn > 0 { inv.context.stdout.write("\u{1B}[\(linesDrawn)A\u{1B}[J") }
                linesDrawn = printWatchTable(inv, rows)
            } else {
                for r in rows {
                    inv.output.line("\(Timestamp.clock(Date()))  \(r.counters.name)  rx \(rate(r.rxRate, first))  tx \(rate(r.txRate, first))"
                                    + "  rx \(humanBytes(r.counters.rxBytes))  tx \(humanBytes(r.counters.txBytes))"
                                    + (r.resetDetected ? "  (counters reset: interface recreated)" : ""))
                }
            }
            first = false
            // Sampling is periodic by nature: wait until the next sample is due.
            let due = at + Int64(interval * 1000)
            while monotonicMilliseconds() < due && inv.context.stdout.checkOpen() {
                _ = pollReadable([], orHangupOf: inv.context.stdout.descriptor, timeoutMs: Int32(max(1, due - monotonicMilliseconds())))
            }
        }
        return .ok
    }

    /// Which profile runs on which interface, from the run directory.
    static func runningProfiles(_ inv: Invocation) -> [String: String] {
        guard FileSystem.exists(inv.options.runDirectory), let manager = try? inv.loadedManager() else { return [:] }
        var owners: [String: String] = [:]
        for p in manager.profiles {
            if let d = try? inv.controller.derive(p), d.isActive, let i = d.interface { owners[i] = p.name }
        }
        return owners
    }

    static func rate(_ r: Double?, _ first: Bool) -> String {
        guard let r else { return first ? "-" : "reset" }
        return humanBytes(UInt64(r.rounded())) + "/s"
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

    static let footer = """
        Interface counters (the kernel's, as in /proc/net/dev), and estimates: tunnel counters count inner traffic,
        link counters include protocol overhead, and counters reset when an interface is recreated.
        """

    static func printTable(_ inv: Invocation, _ rows: [Row], session: Session?) {
        if rows.isEmpty {
            inv.output.note("no tunnel or link interfaces; see every interface with: vpnctl stats --all")
        } else {
            inv.output.table(["INTERFACE", "CLASS", "RX", "TX", "RX PKTS", "TX PKTS", "ERRORS", "DROPS"], rows.map { r in
                let c = r.counters
                return [c.name + (r.profile.map { " (\($0))" } ?? ""), r.facts.kind.rawValue, humanBytes(c.rxBytes), humanBytes(c.txBytes),
                        "\(c.rxPackets)", "\(c.txPackets)", "\(c.rxErrors &+ c.txErrors)", "\(c.rxDropped &+ c.txDropped)"]
            })
        }
        if let s = session {
            inv.output.line("")
            if s.resetDetected {
                inv.output.line("this session (\(s.profile)): unknown: \(s.interface) was recreated since the session connected")
            } else if let rx = s.rxBytes, let tx = s.txBytes {
                inv.output.line("this session (\(s.profile), since \(s.since.map(Timestamp.iso8601) ?? "?")): rx \(humanBytes(rx))  tx \(humanBytes(tx))")
            }
        }
        inv.output.line("")
        inv.output.line(footer)
    }

    static func printWatchTable(_ inv: Invocation, _ rows: [Row]) -> Int {
        inv.output.table(["INTERFACE", "CLASS", "RX/S", "TX/S", "RX", "TX"], rows.map { r in
            [r.counters.name, r.facts.kind.rawValue, rate(r.rxRate, r.rxRate == nil && !r.resetDetected), rate(r.txRate, r.txRate == nil && !r.resetDetected),
             humanBytes(r.counters.rxBytes), humanBytes(r.counters.txBytes)]
        })
        inv.output.line("(estimates from /proc/net/dev; Ctrl-C to stop)")
        return rows.count + 2
    }

    /// Written by hand into bytes: with 10,000 interfaces JSONEncoder, and
    /// even string interpolation, would cost more than reading /proc/net/dev.
    static func json(_ rows: [Row], sampledAt: Date, session: Session?, interval: Double?) -> String {
        var w = ByteWriter(capacity: 200 + rows.count * 280)
        w.raw("{\"schemaVersion\":1,\"estimate\":true,\"sampledAt\":\"")
        w.raw(Timestamp.iso8601(sampledAt))
        w.raw("\"")
        if let interval { w.raw(",\"intervalSeconds\":\(interval)") }
        w.raw(",\"interfaces\":[")
        for (i, r) in rows.enumerated() {
            let c = r.counters
            if i > 0 { w.byte(UInt8(ascii: ",")) }
            w.raw("{\"name\":"); w.quoted(c.name)
            w.raw(",\"ifindex\":"); if let x = r.facts.ifindex { w.number(UInt64(max(0, x))) } else { w.raw("null") }
            w.raw(",\"class\":\""); w.raw(r.facts.kind.rawValue); w.byte(UInt8(ascii: "\""))
            if let p = r.profile { w.raw(",\"profile\":"); w.quoted(p) }
            w.raw(",\"rxBytes\":"); w.number(c.rxBytes)
            w.raw(",\"rxPackets\":"); w.number(c.rxPackets)
            w.raw(",\"rxErrors\":"); w.number(c.rxErrors)
            w.raw(",\"rxDropped\":"); w.number(c.rxDropped)
            w.raw(",\"txBytes\":"); w.number(c.txBytes)
            w.raw(",\"txPackets\":"); w.number(c.txPackets)
            w.raw(",\"txErrors\":"); w.number(c.txErrors)
            w.raw(",\"txDropped\":"); w.number(c.txDropped)
            w.raw(r.resetDetected ? ",\"resetDetected\":true" : ",\"resetDetected\":false")
            if interval != nil {
                w.raw(",\"rxBytesPerSecond\":"); if let x = r.rxRate { w.number(UInt64(max(0, x.rounded()))) } else { w.raw("null") }
                w.raw(",\"txBytesPerSecond\":"); if let x = r.txRate { w.number(UInt64(max(0, x.rounded()))) } else { w.raw("null") }
            }
            w.byte(UInt8(ascii: "}"))
        }
        w.byte(UInt8(ascii: "]"))
        if let x = session {
            w.raw(",\"session\":{\"profile\":"); w.quoted(x.profile)
            w.raw(",\"interface\":"); w.quoted(x.interface)
            w.raw(",\"rxBytes\":"); if let v = x.rxBytes { w.number(v) } else { w.raw("null") }
            w.raw(",\"txBytes\":"); if let v = x.txBytes { w.number(v) } else { w.raw("null") }
            w.raw(",\"since\":"); if let d = x.since { w.quoted(Timestamp.iso8601(d)) } else { w.raw("null") }
            w.raw(x.resetDetected ? ",\"resetDetected\":true}" : ",\"resetDetected\":false}")
        }
        w.byte(UInt8(ascii: "}"))
        return w.string
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

/// Appends JSON pieces to a byte buffer.
struct ByteWriter {
    var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ b: UInt8) { bytes.append(b) }
    mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }

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
