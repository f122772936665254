#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// The agent's on-demand loop: evaluates every profile's rules when the
/// network changes (netlink link, address and route events; the resolver
/// file), when the store or the run dir changes (a profile edited, a tunnel
/// gone, a pause), and on timers (a backoff ending, a probe due again).
/// Starts and stops go through the core's use cases, as `vpnctl start`'s do;
/// the tunnels stay their supervisors'. Nothing is remembered that the run
/// dir does not hold: a restarted agent derives every status afresh.
final class OnDemandRunner {
    struct ProfileState {
        var backoff = OnDemandBackoff()
        /// A start is on its way: its outcome decides the backoff.
        var startPending = false
        /// The last decision logged, so that the log says each once.
        var lastDecision: String?
        var probes = ProbeStreaks()
        /// The network a disconnect rule last stopped the tunnel on: a start
        /// by hand on that same network is left alone (until it changes).
        var stoppedOn: NetworkSnapshot?
        var report: OnDemandReport.Entry?
    }

    static let debounceMs: Int64 = 200
    static let probeIntervalMs: Int64 = 10_000
    static let safetyTickMs: Int64 = 60_000
    static let startTimeoutSeconds = 20

    let settings: AgentSettings
    let loop: EventLoop
    let log: (String) -> Void
    let path: String?
    let observer: NetworkObserver
    let pauses: OnDemandPauses
    var states: [UUID: ProfileState] = [:]
    var network: NetworkSnapshot?
    var probes: [String: (result: ProbeResult, atMs: Int64)] = [:]
    var pending: EventLoop.Token?
    var lastEventMs: Int64 = .min / 2
    var timer: EventLoop.Token?
    var netlink: NetlinkMonitor?
    var resolver: FileWatch?
    var resolvedWatch: FileWatch?
    var directories: DirectoryWatch?
    var random: () -> Double = { Double.random(in: 0..<1) }

    init(settings: AgentSettings, loop: EventLoop, path: String?, log: @escaping (String) -> Void) {
        self.settings = settings
        self.loop = loop
        self.path = path
        self.log = { log("on-demand: \($0)") }
        observer = NetworkObserver(runDirectory: settings.runDirectory)
        pauses = OnDemandPauses(runDirectory: settings.runDirectory)
    }

    var store: PreferencesStore { PreferencesStore(directory: settings.configDirectory) }
    /// The processes and links, the run directory's files and the privilege
    /// check the starts and stops use: the system's, or a unit test's fakes.
    var host: any SupervisorHost = SystemSupervisorHost()
    var files: any Files = SystemFiles()
    var canAdministerNetwork: () -> Bool = Privileges.canAdministerNetwork
    var controller: TunnelController {
        TunnelController(configDirectory: settings.configDirectory, runDirectory: settings.runDirectory, host: host, files: files)
    }
    var useCases: TunnelUseCases {
        var u = TunnelUseCases(store: store, controller: controller, path: path)
        u.canAdministerNetwork = canAdministerNetwork
        return u
    }

    /// Sets up the watches and evaluates once at once.
    func begin() {
        do {
            // RTMGRP_LINK, IPV4_IFADDR, IPV4_ROUTE, IPV6_IFADDR, IPV6_ROUTE.
            let n = try NetlinkMonitor(groups: 0x1 | 0x10 | 0x40 | 0x100 | 0x400)
            netlink = n
            loop.watch(n.fd) { [unowned self] in n.drain(); soon() }
        } catch { log("no netlink events (\(error)); evaluating on timers only") }
        do {
            let w = try FileWatch(observer.resolvConfPath)
            resolver = w
            loop.watch(w.fd) { [unowned self] in if w.drain() { soon() } }
        } catch { log("cannot watch \(observer.resolvConfPath) (\(error))") }
        if ((try? FileSystem.info(NetworkObserver.resolvedPath)) ?? nil) != nil, let w = try? FileWatch(NetworkObserver.resolvedPath) {
            resolvedWatch = w
            loop.watch(w.fd) { [unowned self] in if w.drain() { soon() } }
        }
        let dirs = [settings.configDirectory, settings.runDirectory].filter { ((try? FileSystem.info($0)) ?? nil) != nil }
        do {
            let d = try DirectoryWatch(dirs, mask: DirectoryWatch.replacements)
            directories = d
            loop.watch(d.fd) { [unowned self] in d.drain(); soon() }
        } catch { log("cannot watch \(dirs.joined(separator: ", ")) (\(error))") }
        evaluate()
    }

    /// The first event after a quiet time is evaluated at once (a route
    /// appearing should not wait); the rest of a burst waits for a quiet
    /// `debounceMs` and is one evaluation.
    func soon() {
        loop.cancel(pending)
        let quiet = loop.nowMs - lastEventMs >= Self.debounceMs
        lastEventMs = loop.nowMs
        pending = loop.after(quiet ? 0 : Self.debounceMs) { [unowned self] in pending = nil; evaluate() }
    }

    /// Probe URLs this evaluation needed and had no fresh answer for.
    var missing: Set<String> = []
    /// The worker probing them: its pid and the read end of its pipe.
    var prober: (pid: pid_t, fd: Int32, urls: [String], watch: EventLoop.Token, timer: EventLoop.Token)?
    static let proberTimeoutMs: Int64 = 15_000

    /// A fresh answer from the cache; otherwise the URL is noted for the
    /// worker, and the evaluation that asked is not acted on.
    func probe(_ url: String) -> ProbeResult {
        if let p = probes[url], loop.nowMs - p.atMs < Self.probeIntervalMs { return p.result }
        missing.insert(url)
        return .failed("not probed yet")
    }

    /// Probes run in a worker process (`vpnctl __probe`), never in the loop.
    func startProber() {
        guard prober == nil, !missing.isEmpty else { return }
        let urls = missing.sorted()
        var fds: [Int32] = [0, 0], order: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { log("cannot probe: \(Errno.current)"); return }
        guard pipe(&order) == 0 else { log("cannot probe: \(Errno.current)"); close(fds[0]); close(fds[1]); return }
        for fd in fds + order { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let exe = Processes.currentExecutable()
        do {
            // The URLs go on fd 4, not the command line, which every user may read.
            defer { close(order[0]) }
            let pid: pid_t
            do {
                defer { close(order[1]) }
                pid = try Processes.spawnTied(exe, [exe, "__probe"], environment: ["PATH": path ?? "/usr/bin:/bin", "LANG": "C"],
                                              passFDs: [fds[1], order[0]])
                // Validated URLs, a few of them: far less than a pipe holds, so this never waits.
                let bytes = Array(urls.map { $0 + "\n" }.joined().utf8)
                var done = 0
                while done < bytes.count {
                    let n = bytes[done...].withUnsafeBytes { write(order[1], $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { log("cannot hand the probe worker its URLs: \(Errno.current)"); break }
                    done += n
                }
            }
            close(fds[1])
            var buffer: [UInt8] = []
            let fd = fds[0]
            let watch = loop.watch(fd) { [unowned self] in
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { buffer += chunk[0..<n]; return }
                if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
                let lines = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
                for (url, line) in zip(urls, lines) { if let r = ProbeResult(line: line) { probes[url] = (r, loop.nowMs) } }
                endProber()
                evaluate()
            }
            let timer = loop.after(Self.proberTimeoutMs) { [unowned self] in
                log("the probe of \(urls.joined(separator: ", ")) took over \(Self.proberTimeoutMs / 1000) s; ended")
                kill(pid, SIGKILL)
                for url in urls where probes[url] == nil { probes[url] = (.failed("no answer within \(Self.proberTimeoutMs / 1000) s"), loop.nowMs) }
                endProber()
                evaluate()
            }
            prober = (pid, fd, urls, watch, timer)
        } catch {
            close(fds[0]); close(fds[1])
            log("cannot probe: \(error)")
        }
    }

    func endProber() {
        guard let p = prober else { return }
        loop.cancel(p.watch)
        loop.cancel(p.timer)
        close(p.fd)
        prober = nil
    }

    func evaluate() {
        let profiles: [Profile]
        do { profiles = try store.load() } catch {
            log("cannot load the profiles: \(error)")
            loop.cancel(timer)
            timer = loop.after(Self.safetyTickMs) { [unowned self] in timer = nil; evaluate() }
            return
        }
        let candidates = profiles.filter { $0.onDemand.enabled && !$0.onDemand.rules.isEmpty }
        states = states.filter { id, _ in candidates.contains { $0.id == id } }
        loop.cancel(timer)
        // A config dir made after the agent started is not watched: the
        // safety tick finds profiles saved there.
        timer = loop.after(Self.safetyTickMs) { [unowned self] in timer = nil; evaluate() }
        guard !candidates.isEmpty else { writeReport([]); return }
        loop.cancel(timer)
        timer = nil
        let controller = self.controller
        var statuses: [UUID: DerivedStatus] = [:]
        for p in profiles { statuses[p.id] = try? controller.derive(p) }
        let tunnels = Set(statuses.values.compactMap { $0.isActive ? $0.interface : nil })
        let snapshot = observer.snapshot(tunnels: tunnels)
        if snapshot != network {
            log("network: \(snapshot.summary)")
            network = snapshot
            probes = [:]
            for id in states.keys { states[id]?.backoff.reset() }
        }
        let paused = (try? pauses.paused()) ?? []
        let now = loop.nowMs
        var wake: Int64 = now + Self.safetyTickMs
        for p in candidates {
            var st = states[p.id] ?? ProfileState()
            evaluate(p, &st, status: statuses[p.id], on: snapshot, paused: paused.contains(p.id), now: now, wake: &wake)
            states[p.id] = st
        }
        writeReport(candidates)
        startProber()
        missing = []
        timer = loop.after(max(0, wake - loop.nowMs)) { [unowned self] in timer = nil; evaluate() }
    }

    /// One profile's rules on this network: the decision, and what it makes
    /// the agent do (at most one start or one stop); `wake` is brought
    /// forward to when this profile next needs a look.
    func evaluate(_ p: Profile, _ st: inout ProfileState, status: DerivedStatus?, on snapshot: NetworkSnapshot, paused: Bool,
                  now: Int64, wake: inout Int64) {
        if st.startPending, let s = status {
            if s.status == .connected {
                st.startPending = false
                st.backoff.reset()
            } else if !s.isActive {
                st.startPending = false
                let delay = st.backoff.failed(atMs: now, random: random)
                let why = s.lastDisconnectError.map { "\($0.name): \($0.message)" } ?? "the tunnel went down"
                log("'\(p.name)' did not connect (\(why)); next try in \(delay / 1000).\(delay % 1000 / 100) s (failure \(st.backoff.failures))")
            }
        }
        if paused {
            note(&st, "'\(p.name)' is paused; not evaluated")
            st.report = OnDemandReport.Entry(id: p.id, decision: "paused", rule: nil, reason: "paused")
            return
        }
        let missingBefore = missing.count
        let e = OnDemandEvaluator.evaluate(p.onDemand.rules, on: snapshot, probe: probe)
        if e.dependsOnProbe { wake = min(wake, now + Self.probeIntervalMs) }
        // A probe without an answer yet: decide when the worker has it.
        if missing.count > missingBefore || e.rules.contains(where: { r in
            r.conditions.contains { $0.condition == "probeURL" && $0.text.hasSuffix("not probed yet") } }) { return }
        let probeNote = st.probes.record(e, nowMs: now)
        if let probeNote, st.report?.note == nil { log("'\(p.name)': \(probeNote)") }
        st.report = OnDemandReport.Entry(id: p.id, decision: e.decision?.rawValue ?? "none", rule: e.decidingRule,
                                         reason: e.reason, note: probeNote)
        guard let n = e.decidingRule, let action = e.decision else {
            note(&st, "'\(p.name)': no rule matches (\(snapshot.summary)); nothing to do")
            return
        }
        act(action, rule: n, reason: e.reason, p, &st, status: status, on: snapshot, now: now, wake: &wake)
    }

    func act(_ action: OnDemandRule.Action, rule n: Int, reason: String, _ p: Profile, _ st: inout ProfileState, status: DerivedStatus?,
             on snapshot: NetworkSnapshot, now: Int64, wake: inout Int64) {
        let origin = StartOrigin(rule: n, reason: reason)
        switch action {
        case .connect:
            note(&st, "'\(p.name)': rule \(n) (connect) matches: \(reason)")
            if status?.isActive == true { return }
            if st.startPending { return }
            guard st.backoff.allows(atMs: now) else {
                wake = min(wake, st.backoff.notBeforeMs)
                return
            }
            start(p, origin, &st, now: now)
            if !st.startPending { wake = min(wake, st.backoff.notBeforeMs) }
        case .disconnect:
            note(&st, "'\(p.name)': rule \(n) (disconnect) matches: \(reason)")
            st.startPending = false
            // One SIGTERM: a tunnel on its way down is left to go; one
            // started by hand after a stop on this network stays.
            if let s = status, s.supervisorAlive, s.status != .disconnecting,
               st.stoppedOn != snapshot || s.record?.startedBy != nil {
                st.stoppedOn = snapshot
                do {
                    _ = try useCases.stop(p, wait: false, timeout: 10)
                    log("stopping '\(p.name)' (\(origin.text))")
                } catch { log("cannot stop '\(p.name)': \(error)") }
            }
        case .ignore, .evaluateConnection:
            note(&st, "'\(p.name)': rule \(n) (\(action.rawValue)) matches: \(reason); the tunnel is left as it is")
        }
    }

    var lastReport: OnDemandReport?

    /// The agent stops: its decisions are no one's any more.
    func end() {
        if lastReport != nil { unlink(OnDemandReport.path(runDirectory: settings.runDirectory)) }
    }

    /// The decisions, for `status`; written only when one changed.
    func writeReport(_ candidates: [Profile]) {
        let report = OnDemandReport(entries: candidates.compactMap { states[$0.id]?.report })
        guard report != lastReport, lastReport != nil || !report.entries.isEmpty else { return }
        do {
            try report.write(runDirectory: settings.runDirectory)
            lastReport = report
        } catch { log("cannot write \(OnDemandReport.path(runDirectory: settings.runDirectory)): \(error)") }
    }

    func start(_ p: Profile, _ origin: StartOrigin, _ st: inout ProfileState, now: Int64) {
        log("starting '\(p.name)' (\(origin.text))")
        do {
            let outcome = try useCases.start(p, wait: false, timeout: Self.startTimeoutSeconds, startedBy: origin)
            if case .alreadyConnected = outcome { return }
            st.startPending = true
        } catch {
            let delay = st.backoff.failed(atMs: now, random: random)
            log("cannot start '\(p.name)': \(VPNError.from(error).message); next try in \(delay / 1000).\(delay % 1000 / 100) s (failure \(st.backoff.failures))")
        }
    }

    /// Logs a decision when it differs from the last one for the profile.
    func note(_ st: inout ProfileState, _ text: String) {
        guard st.lastDecision != text else { return }
        st.lastDecision = text
        log(text)
    }
}
