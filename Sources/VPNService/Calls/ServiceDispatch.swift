import FoundationEssentials
import VPNCore

/// A call from the wire, run on a `LocalService`: its reply's last line
/// (the result or the error) and the exit code the result stands for (for
/// the agent's log; the client works out its own).
public enum ServiceDispatch {
    public struct Outcome {
        public let line: [UInt8]
        public let code: Int32
        public let error: VPNError?
    }

    public static func perform(_ call: ServiceCall, on service: LocalService, events: ServiceEvents) -> Outcome {
        do {
            switch call {
            case .list: return try result(service.list())
            case .can(let action, let p):
                let answer = try service.can(action, p)
                return try result(answer, code: answer.allowed ? .ok : .permissionDenied)
            case .isConnected(let p):
                let answer = try service.isConnected(p)
                return try result(answer, code: answer.connected ? .ok : .notConnected)
            case .status(let p): return try result(service.status(p))
            case .watch(let p):
                try service.watch(p, events)
                return try result(StreamEnd())
            case .start(let p, let wait, let timeout, let changes, let persist):
                return try result(service.start(p, wait: wait, timeout: timeout, changes: changes, persist: persist, events))
            case .stop(let p, let wait, let timeout, let changes):
                if let p { return try result(service.stop(p, wait: wait, timeout: timeout, changes: changes, events)) }
                return try result(service.stopAll(wait: wait, timeout: timeout, changes: changes, events))
            case .toggle(let p, let timeout, let changes):
                let report = try service.toggle(p, timeout: timeout, changes: changes, events)
                return try result(report, code: report.failure ?? .ok)
            case .verify(let p, let probe, let dns, let timeout):
                let answer = try service.verify(p, probe: probe, dns: dns, timeout: timeout)
                return try result(answer, code: answer.report.verdict.exitCode)
            case .stats(let p): return try result(service.stats(p))
            case .logs(let p, let since, let follow):
                if !follow { return try result(service.logs(p, since: since)) }
                try service.followLogs(p, since: since, events)
                return try result(StreamEnd())
            case .show(let p): return try result(service.show(p))
            case .pauseOnDemand(let p, let paused): return try result(service.pauseOnDemand(p, paused))
            case .apps(let p): return try result(service.apps(p))
            case .placeApp(let p, let pid): return try result(service.placeApp(p, pid: pid))
            }
        } catch {
            return failure(VPNError.from(error))
        }
    }

    public static func failure(_ e: VPNError) -> Outcome {
        Outcome(line: ServiceReply.line(error: e), code: e.code.rawValue, error: e)
    }

    static func result<R: Encodable>(_ r: R, code: ExitCode = .ok) throws -> Outcome {
        Outcome(line: try ServiceReply.line(result: r), code: code.rawValue, error: nil)
    }
}

/// The result of a stream that ended because its client wanted no more.
public struct StreamEnd: Codable, Equatable, Sendable {
    public init() {}
}
