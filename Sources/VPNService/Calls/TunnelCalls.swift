import FoundationEssentials
import VPNCore
import VPNSystem

/// start, stop and toggle: the core's use cases, with their waits reported
/// as `progress`, the supervisor's changes as `change` (when asked for),
/// and what they did to on-demand.
extension LocalService {
    public func start(_ reference: String, wait: Bool, timeout: Int, changes: Bool, persist: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        let p = try profile(reference)
        var report = try startOne(p, wait: wait, timeout: timeout, changes: changes, persist: persist, events)
        // A start by hand ends a pause that a stop began.
        if (try? pauses.set(p.id, paused: false)) == true {
            report.onDemand = .resumed
            _ = events.emit(.onDemand(profile: p.name, change: .resumed))
        }
        return report
    }

    public func stop(_ reference: String, wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        let p = try profile(reference)
        let wasRunning = try controller.derive(p).supervisorAlive
        // Paused before the stop, so that the agent does not start it again meanwhile.
        let paused = pauseOnDemand(p, events)
        var report = try stopOne(p, wait: wait, timeout: timeout, changes: changes, events)
        report.wasRunning = wasRunning
        if paused { report.onDemand = .paused }
        return report
    }

    public func stopAll(wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> StopAllReport {
        var stopped: [TunnelReport] = []
        for p in try manager().profiles {
            let d = try controller.derive(p)
            // A kill switch left blocking by a failed tunnel is stopped too.
            guard d.isActive || d.record?.status != .disconnected && d.record != nil || d.killSwitch != nil else { continue }
            let paused = pauseOnDemand(p, events)
            var report = try stopOne(p, wait: wait, timeout: timeout, changes: changes, events)
            report.wasRunning = d.supervisorAlive
            if paused { report.onDemand = .paused }
            stopped.append(report)
        }
        return StopAllReport(stopped: stopped)
    }

    public func toggle(_ reference: String, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        let p = try profile(reference)
        let action = try controller.derive(p).isActive ? "stop" : "start"
        // As stop and start do: off pauses on-demand, on resumes it.
        var change: OnDemandChange?
        if action == "stop", pauseOnDemand(p, events) {
            change = .paused
        } else if action == "start", (try? pauses.set(p.id, paused: false)) == true {
            change = .resumed
            _ = events.emit(.onDemand(profile: p.name, change: .resumed))
        }
        var report: TunnelReport
        do {
            report = action == "stop" ? try stopOne(p, wait: true, timeout: timeout, changes: changes, events)
                                      : try startOne(p, wait: true, timeout: timeout, changes: changes, events)
        } catch let e as VPNError where e.code == .connectionFailed || e.code == .timedOut {
            report = TunnelReport(action: action, outcome: .failed, status: try controller.derive(p))
            report.failure = e.code
        }
        report.onDemand = change
        return report
    }

    func startOne(_ p: Profile, wait: Bool, timeout: Int, changes: Bool, persist: Bool = false, _ events: ServiceEvents) throws -> TunnelReport {
        let tunnels = self.tunnels
        let logPath = tunnels.controller.runtime.logPath(p.id)
        let follower = changes ? ChangeFollower(path: logPath, from: (try? FileSystem.info(logPath))??.size ?? 0, events: events) : nil
        defer { follower?.echo() }
        let observer = UseCaseObserver(wake: {
            follower?.echo()
            _ = events.emit(.progress(profile: p.name, action: "start"))
        }, ask: { events.credentials($0) })
        do {
            let outcome = try tunnels.start(p, wait: wait, timeout: timeout, persist: persist, observer: observer) { cleaned in
                if changes { for c in cleaned { _ = events.emit(.change(line: "[#] \(c)")) } }
            }
            var report: TunnelReport
            switch outcome {
            case .alreadyConnected(let d): report = TunnelReport(action: "start", outcome: .alreadyConnected, status: d)
            case .accepted(let d): report = TunnelReport(action: "start", outcome: .accepted, status: d)
            case .connected(let d): report = TunnelReport(action: "start", outcome: .connected, status: d)
            }
            if persist && !p.protocol.model.keepsTrying { report.notPersistent = p.protocol.model.persistentRefusal }
            return report
        } catch let f as StartFailure {
            let e = f.error
            let hint = f.persistent ? L("see 'vpnctl status \(p.name)'; 'vpnctl stop \(p.name)' ends it")
                : f.timedOut ? L("see 'vpnctl status \(p.name)' and the log: vpnctl logs \(p.name)")
                                  : StartAdvice.afterFailure(f.status.lastDisconnectError, profile: p, logPath: f.logPath)
            throw VPNError(e.code, e.message, hint: hint)
        }
    }

    /// The stop of one profile's tunnel alone, on-demand left as it is (for
    /// commands that replace or remove a profile).
    public func stopOne(_ p: Profile, wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        let logPath = controller.runtime.logPath(p.id)
        let follower = changes ? ChangeFollower(path: logPath, from: (try? FileSystem.info(logPath))??.size ?? 0, events: events) : nil
        let outcome = try tunnels.stop(p, wait: wait, timeout: timeout,
                                       observer: UseCaseObserver { _ = events.emit(.progress(profile: p.name, action: "stop")) })
        switch outcome {
        case .notRunning(let d, let cleaned):
            var report = TunnelReport(action: "stop", outcome: .notRunning, status: d)
            report.cleanedUp = cleaned
            return report
        case .requested(let d):
            return TunnelReport(action: "stop", outcome: .requested, status: d)
        case .stopped(let d):
            follower?.echo()
            return TunnelReport(action: "stop", outcome: .stopped, status: d)
        }
    }

    /// A stop of a profile whose on-demand is on pauses it (the complaint
    /// about on-demand tunnels that cannot be turned off). Returns whether
    /// it was paused now.
    func pauseOnDemand(_ p: Profile, _ events: ServiceEvents) -> Bool {
        guard p.onDemand.enabled, !p.onDemand.rules.isEmpty else { return false }
        do {
            try controller.runtime.prepare()
            let paused = try pauses.set(p.id, paused: true)
            if paused { _ = events.emit(.onDemand(profile: p.name, change: .paused)) }
            return paused
        } catch {
            // The stop matters more than the pause: it goes on, and says so.
            _ = events.emit(.onDemandPauseFailed(profile: p.name, reason: "\(error)"))
            return false
        }
    }
}

/// The provider's advice after a failed start, else the generic one.
enum StartAdvice {
    static func afterFailure(_ e: ConnectionError?, profile: Profile, logPath: String) -> String {
        guard let kind = e?.kind else { return L("see \(logPath)") }
        if let advice = (try? ProviderRegistry.provider(for: profile))?.advice(for: kind) { return advice }
        switch kind {
        case .serverNotResponding: return L("check that the server is up and reachable")
        case .serverAddressResolutionFailed: return L("check the endpoint's host name and DNS")
        case .authenticationRequired: return L("the server asks at each login: run 'vpnctl start \(profile.name)' on a terminal, which asks")
        default: return L("see \(logPath)")
        }
    }
}

/// Reports the supervisor's "[#]" lines (each change it made to the
/// system) written to its log after `from`.
final class ChangeFollower {
    let path: String
    var offset: Int
    let events: ServiceEvents

    init(path: String, from: Int, events: ServiceEvents) {
        self.path = path
        offset = from
        self.events = events
    }

    func echo() {
        // The log was rotated or truncated (BoundedLog): read the new file from its start.
        if let size = (try? FileSystem.info(path))??.size, size < offset { offset = 0 }
        guard let bytes = try? FileSystem.readFile(path, from: offset), let lastNewline = bytes.lastIndex(of: 0x0A) else { return }
        for line in String(decoding: bytes[..<lastNewline], as: UTF8.self).split(separator: "\n") {
            if let r = line.firstRange(of: "[#] ") { _ = events.emit(.change(line: String(line[r.lowerBound...]))) }
        }
        offset += lastNewline + 1
    }
}
