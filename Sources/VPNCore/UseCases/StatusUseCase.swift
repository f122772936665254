#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// `status`: every profile's status, derived from its runtime record and the
/// live system on each call, and `status --watch` as a stream of transitions.
public struct StatusUseCase {
    public let controller: TunnelController

    public init(controller: TunnelController) {
        self.controller = controller
    }

    /// With `readActivity`, each running tunnel's newest handshake and
    /// counters (one netlink request, and a provider's answer, each).
    public func statuses(of profiles: [Profile], readActivity: Bool = true) throws -> [DerivedStatus] {
        let recorded = profiles.count > 8 ? controller.runtime.recordFileNames() : nil
        // The route files and addresses are read once for every tunnel, and only when one is up.
        var system: TunnelBypass.LiveSystem?
        return try profiles.map { p in
            var d = try controller.derive(p, recorded: recorded)
            // A kill switch is what nftables holds, not what the record says.
            if let ks = d.record?.killSwitch, ks.netns == NetworkNamespace.current(), ks.table == KillSwitchRules.tableName(p.id),
               let nft = try? NftFirewall(searchPath: nil, scratch: "") {
                d.killSwitchTablePresent = nft.tableExists(ks.table)
            }
            // enforceRoutes puts the tunnel's routes in a table of their own, ahead of main.
            if d.status == .connected || d.status == .reasserting, !p.enforceRoutes, p.appRules == nil, let i = d.interface,
               let routes = d.record?.settings?.routes, !routes.isEmpty {
                let s = system ?? TunnelBypass.LiveSystem()
                system = s
                d.bypassRoutes = TunnelBypass.routes(s.routes, interface: i, tunnelRoutes: routes, addresses: { s.addresses },
                                                     servers: p.protocol.model.serverHosts)
            }
            if readActivity { d.activity = TunnelActivity.read(d, profile: p) }
            return d
        }
    }

    /// A watch over the profiles `profiles` returns (read again on every
    /// pass, so that a profile added meanwhile is followed), woken by the
    /// run directory, link changes and supervisors' exits. `hangupOf` ends
    /// a wait when that fd's reader goes away.
    public func watch(profiles: @escaping () -> [Profile], hangupOf: Int32? = nil) throws -> StatusWatch {
        try controller.runtime.prepare()
        let events = try SystemStatusEvents(runDirectory: controller.runtime.directory, hangupOf: hangupOf)
        return StatusWatch(controller: controller, profiles: profiles, events: events)
    }
}

/// One transition, as `status --watch` reports it.
public struct StatusTransition: Codable, Equatable, Sendable {
    public var time: Date
    public var id: UUID
    public var name: String
    public var status: String
    public var previous: String
    public var interface: String?
    public var error: ConnectionError?

    public init(time: Date, id: UUID, name: String, status: String, previous: String, interface: String?, error: ConnectionError?) {
        self.time = time
        self.id = id
        self.name = name
        self.status = status
        self.previous = previous
        self.interface = interface
        self.error = error
    }
}

/// What wakes a watch: the system's events, or a test's script.
public protocol StatusEventSource: AnyObject {
    /// Wake when this supervisor exits (kept until it does, or until
    /// another pid is followed for the same profile).
    func follow(_ id: UUID, supervisor pid: pid_t)
    /// Blocks until something may have changed, or for at most a minute.
    func wait()
}

/// inotify on the run directory, rtnetlink link notifications and one pidfd
/// per live supervisor: no polling loop.
public final class SystemStatusEvents: StatusEventSource {
    let directory: DirectoryWatch
    let links: NetlinkMonitor?
    let hangupOf: Int32?
    var supervisors: [UUID: ProcessWatch] = [:]

    public init(runDirectory: String, hangupOf: Int32?) throws {
        directory = try DirectoryWatch([runDirectory])
        links = try? NetlinkMonitor(groups: 0x1)
        self.hangupOf = hangupOf
    }

    public func follow(_ id: UUID, supervisor pid: pid_t) {
        if supervisors[id]?.pid != pid { supervisors[id] = ProcessWatch(pid: pid) }
    }

    public func wait() {
        let pids = Array(supervisors)
        let fds = [directory.fd] + (links.map { [$0.fd] } ?? []) + pids.map { $0.value.fd }
        let ready = pollReadable(fds, orHangupOf: hangupOf, timeoutMs: 60_000).filter { $0 < fds.count }
        directory.drain()
        links?.drain()
        let base = links == nil ? 1 : 2
        for i in ready where i >= base { supervisors[pids[i - base].key] = nil }
    }
}

/// Follows each profile's event log (every transition its supervisor
/// makes) and re-derives status after each wake, so that transitions
/// nobody wrote down (a crash, a deleted interface) are reported too.
public final class StatusWatch {
    let controller: TunnelController
    let profiles: () -> [Profile]
    let events: StatusEventSource
    /// How far each profile's event log was read, and which file that was
    /// (its inode: a rotated log is another file).
    var offsets: [UUID: (inode: UInt64, offset: Int)] = [:]
    var shown: [UUID: String] = [:]
    public var now: () -> Date = { Date() }

    public init(controller: TunnelController, profiles: @escaping () -> [Profile], events: StatusEventSource) {
        self.controller = controller
        self.profiles = profiles
        self.events = events
    }

    /// Starts from now: existing history is not replayed. Returns how many
    /// profiles are watched.
    @discardableResult
    public func begin() -> Int {
        let list = profiles()
        for p in list {
            offsets[p.id] = StatusWatch.identity(controller.runtime.eventsPath(p.id)) ?? (0, 0)
            shown[p.id] = (try? controller.derive(p))?.status.name
        }
        return list.count
    }

    /// Reports transitions to `handler` until it returns false, or until
    /// `keepGoing` does (checked before each wait).
    public func run(keepGoing: () -> Bool, _ handler: (StatusTransition) -> Bool) {
        while keepGoing() {
            if !pass(handler) { return }
            events.wait()
        }
    }

    /// One look at every profile; false when `handler` asked to stop.
    func pass(_ handler: (StatusTransition) -> Bool) -> Bool {
        for p in profiles() {
            // New event lines: every transition, even ones faster than us.
            for t in newEvents(p) {
                shown[p.id] = t.status
                if !handler(t) { return false }
            }
            // What the live system says, in case nobody wrote it down.
            guard let live = try? controller.derive(p) else { continue }
            if live.record?.status != live.status, shown[p.id] != live.status.name {
                let t = StatusTransition(time: now(), id: p.id, name: p.name, status: live.status.name,
                                         previous: shown[p.id] ?? "invalid", interface: live.record?.interface,
                                         error: live.lastDisconnectError)
                shown[p.id] = live.status.name
                if !handler(t) { return false }
            }
            if live.supervisorAlive, let pid = live.record?.supervisorPid { events.follow(p.id, supervisor: pid) }
        }
        return true
    }

    /// Complete lines appended to the profile's event log since the last
    /// look, less those that repeat what was last shown (a clean-up writing
    /// down what was already reported from the live system). The writer
    /// rotates the log (`<id>.events` becomes `<id>.events.1`): a log that is
    /// another file now is read from its start, after the rest of the old one
    /// (when `.1` is still that file); one that shrank is read from its start.
    func newEvents(_ p: Profile) -> [StatusTransition] {
        let path = controller.runtime.eventsPath(p.id)
        var (inode, start) = offsets[p.id] ?? (0, 0)
        guard let now = StatusWatch.identity(path) else { return [] }
        var result: [StatusTransition] = []
        var current = shown[p.id]
        if now.inode != inode {
            if inode != 0, StatusWatch.identity(path + ".1")?.inode == inode {
                _ = lines(path + ".1", from: start, p, &current, into: &result)
            }
            (inode, start) = (now.inode, 0)
        } else if now.offset < start {
            start = 0
        }
        let end = lines(path, from: start, p, &current, into: &result)
        offsets[p.id] = (inode, end)
        return result
    }

    /// The transitions in `path`'s complete lines from `start`; returns
    /// where the next look starts.
    func lines(_ path: String, from start: Int, _ p: Profile, _ current: inout String?, into result: inout [StatusTransition]) -> Int {
        guard let bytes = try? FileSystem.readFileIfPresent(path, limit: RuntimeStore.maximumEventsSize), bytes.count > start,
              let last = bytes[start...].lastIndex(of: 0x0A) else { return start }
        for line in bytes[start..<last].split(separator: 0x0A) {
            guard let e = try? TransitionEvent.parse(Array(line)) else { continue }
            if e.status == e.previous || e.status == current { continue }
            result.append(StatusTransition(time: e.time, id: p.id, name: p.name, status: e.status, previous: e.previous,
                                           interface: e.interface, error: e.error))
            current = e.status
        }
        return last + 1
    }

    /// The file's inode and size (lstat), or nil when there is none.
    static func identity(_ path: String) -> (inode: UInt64, offset: Int)? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return (UInt64(st.st_ino), Int(st.st_size))
    }
}
