import FoundationEssentials
import VPNCore
import VPNSystem

/// `logs`: the supervisor's and the provider's log of one profile, the
/// earlier (rotated) file first.
extension LocalService {
    public func logs(_ reference: String, since: Date?) throws -> LogsAnswer {
        let p = try profile(reference)
        let path = controller.runtime.logPath(p.id)
        let all = try logLines(path, LogTail(path: path))
        return LogsAnswer(profile: p.name, id: p.id, lines: ProfileLog.lines(all, since: since).map(String.init),
                          hasLog: !all.isEmpty || FileSystem.exists(path))
    }

    public func followLogs(_ reference: String, since: Date?, _ events: ServiceEvents) throws {
        let p = try profile(reference)
        let path = controller.runtime.logPath(p.id)
        let tail = LogTail(path: path)
        for line in ProfileLog.lines(try logLines(path, tail), since: since) {
            guard events.emit(.logLine(String(line))) else { return }
        }
        let watch: FileWatch
        do { watch = try FileWatch(path) } catch {
            throw VPNError(.failure, L("cannot follow the log of '\(p.name)': \(error)"),
                           hint: L("start it once ('vpnctl start \(p.name.shellQuoted)'); then its log can be followed"))
        }
        while true {
            if let revoked = access.recheck?() { throw revoked }
            guard events.isOpen() else { return }
            if !pollReadable([watch.fd], orHangupOf: events.hangupDescriptor, timeoutMs: 1000).isEmpty { _ = watch.drain() }
            for line in try read(tail) {
                guard events.emit(.logLine(line)) else { return }
            }
        }
    }

    /// The earlier file's lines, then the current file's (read through `tail`, which goes on from there).
    func logLines(_ path: String, _ tail: LogTail) throws -> [Substring] {
        let earlier: [UInt8]
        do { earlier = try FileSystem.readFileIfPresent(path + ".1", limit: ProfileLog.maximumSize) ?? [] } catch {
            throw VPNError.from(error)
        }
        let current = try read(tail)
        var lines = String(decoding: earlier, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        return lines + current.map { Substring($0) }
    }

    func read(_ tail: LogTail) throws -> [String] {
        do { return try tail.read() } catch { throw VPNError.from(error) }
    }
}
