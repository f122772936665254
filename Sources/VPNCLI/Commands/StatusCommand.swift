#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

enum StatusCommand {
    static let spec = CommandSpec(
        name: "status", abstract: "Show the status of every profile, or of one; --watch prints each transition.",
        discussion: """
        Status is derived every time from the runtime record and the live system: a
        record that says connected while its supervisor is dead reads disconnected,
        with its error. --watch is event-driven (inotify and pidfds): it also reports
        transitions it did not cause, such as a stop from another shell or a crash.
        """,
        options: [OptionSpec("watch", help: "Print every transition as it happens (millisecond timestamps)."),
                  OptionSpec("count", value: "n", help: "With --watch: exit after n transitions.")],
        positionals: [PositionalSpec("profile", optional: true, help: "The profile's name or UUID.")],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        var profiles = manager.profiles
        if let name = inv.args.positionals.first { profiles = [try manager.profile(named: name)] }
        if inv.args.flag("watch") { return try watch(inv, manager, only: inv.args.positionals.first.map { _ in profiles }) }
        if inv.args.value("count") != nil { throw VPNError.usage("'--count' needs '--watch'", hint: "See 'vpnctl help status'.") }
        let controller = inv.controller
        let statuses = try profiles.map { try controller.derive($0) }
        if inv.options.json {
            let value = JSONValue.object(["schemaVersion": .number("1"),
                                          "profiles": .array(statuses.map { StatusJSON(status: $0).json })])
            inv.output.line(value.serialized)
            return .ok
        }
        if statuses.isEmpty {
            inv.output.note("no profiles; add one with: vpnctl import FILE")
            return .ok
        }
        let showDNS = statuses.contains { !$0.dns.isEmpty }
        inv.output.table(["NAME", "STATUS", "INTERFACE", "SINCE"] + (showDNS ? ["DNS"] : []) + ["LAST ERROR"], statuses.map { d in
            [d.name, d.status.name, d.interface ?? "-", d.connectedSince.map(Timestamp.iso8601) ?? "-"]
                + (showDNS ? [d.dns.isEmpty ? "-" : d.dns.joined(separator: ",")] : [])
                + [d.lastDisconnectError.map { "\($0.name): \($0.message)" } ?? "-"]
        })
        return .ok
    }

    struct WatchLine: Encodable {
        let time: String
        let id: String
        let name: String
        let status: String
        let previous: String
        let interface: String?
        let error: ConnectionError?

        enum Keys: String, CodingKey { case time, id, name, status, previous, interface, error }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(time, forKey: .time)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(status, forKey: .status)
            try c.encode(previous, forKey: .previous)
            if let interface { try c.encode(interface, forKey: .interface) } else { try c.encodeNil(forKey: .interface) }
            if let error { try c.encode(error, forKey: .error) } else { try c.encodeNil(forKey: .error) }
        }
    }

    /// Follows each profile's event log (every transition the supervisor
    /// makes) and re-derives status when a supervisor exits or a link
    /// changes, so that transitions nobody wrote down are reported too.
    static func watch(_ inv: Invocation, _ manager: ProfileManager, only: [Profile]?) throws -> ExitCode {
        let controller = inv.controller
        try controller.runtime.prepare()
        var limit = Int.max
        if let c = inv.args.value("count") {
            guard let n = Int(c), n > 0 else { throw VPNError.usage("invalid value \(c.quotedForMessage) for '--count <n>'", hint: "See 'vpnctl help status'.") }
            limit = n
        }
        let watch = try DirectoryWatch([controller.runtime.directory])
        let links = try? NetlinkMonitor(groups: 0x1)
        var offsets: [UUID: Int] = [:]
        var shown: [UUID: String] = [:]
        var pidfds: [UUID: ProcessWatch] = [:]
        var printed = 0

        func profiles() -> [Profile] {
            if let only { return only }
            return (try? manager.store.load()) ?? manager.profiles
        }

        func emit(_ time: Date, _ p: Profile, status: String, previous: String, interface: String?, error: ConnectionError?) {
            if inv.options.json {
                inv.output.emit(WatchLine(time: Timestamp.iso8601(time), id: p.id.uuidString.lowercased(), name: p.name,
                                          status: status, previous: previous, interface: interface, error: error))
            } else {
                var s = "\(Timestamp.clock(time))  \(p.name)  \(previous) -> \(status)"
                if let interface { s += "  \(interface)" }
                if let error { s += "  \(error.name): \(error.message)" }
                inv.output.line(s)
            }
            printed += 1
        }

        // Start from now: existing history is not replayed.
        for p in profiles() {
            offsets[p.id] = (try? FileSystem.info(controller.runtime.eventsPath(p.id)))??.size ?? 0
            shown[p.id] = (try? controller.derive(p))?.status.name
        }
        if !inv.options.json {
            inv.output.note("watching \(profiles().count) profile\(profiles().count == 1 ? "" : "s"); Ctrl-C to stop")
        }
        let stdout = inv.context.stdout
        while printed < limit && stdout.checkOpen() {
            for p in profiles() {
                // New event lines: every transition, even ones faster than us.
                let path = controller.runtime.eventsPath(p.id)
                let start = offsets[p.id] ?? 0
                if let bytes = try? FileSystem.readFileIfPresent(path, limit: RuntimeStore.maximumEventsSize), bytes.count > start {
                    let fresh = bytes[start...]
                    if let last = fresh.lastIndex(of: 0x0A) {
                        for line in fresh[..<last].split(separator: 0x0A) {
                            guard let e = try? TransitionEvent.parse(Array(line)) else { continue }
                            // Same as what was last shown: a clean-up writing down what
                            // was already reported from the live system.
                            if e.status == e.previous || e.status == shown[p.id] { continue }
                            emit(e.time, p, status: e.status, previous: e.previous, interface: e.interface, error: e.error)
                            shown[p.id] = e.status
                            if printed >= limit || stdout.failure != nil { return .ok }
                        }
                        offsets[p.id] = last + 1
                    }
                } else if let bytes = try? FileSystem.readFileIfPresent(path, limit: RuntimeStore.maximumEventsSize), bytes.count < start {
                    offsets[p.id] = 0
                }
                // What the live system says, in case nobody wrote it down.
                guard let now = try? controller.derive(p) else { continue }
                if now.record?.status != now.status, shown[p.id] != now.status.name {
                    emit(Date(), p, status: now.status.name, previous: shown[p.id] ?? "invalid", interface: now.record?.interface,
                         error: now.lastDisconnectError)
                    shown[p.id] = now.status.name
                    if printed >= limit || stdout.failure != nil { return .ok }
                }
                if now.supervisorAlive, let pid = now.record?.supervisorPid, pidfds[p.id]?.pid != pid {
                    pidfds[p.id] = ProcessWatch(pid: pid)
                }
            }
            let pids = Array(pidfds)
            let fds = [watch.fd] + (links.map { [$0.fd] } ?? []) + pids.map { $0.value.fd }
            // The reader of stdout going away ends the watch, even with nothing to print.
            let ready = pollReadable(fds, orHangupOf: stdout.descriptor, timeoutMs: 60_000).filter { $0 < fds.count }
            watch.drain()
            links?.drain()
            let base = links == nil ? 1 : 2
            for i in ready where i >= base {
                pidfds[pids[i - base].key] = nil
            }
        }
        return .ok
    }
}
