#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// The service's use cases through the agent, for a user other than root:
/// each call is one connection, one request line, and the reply's lines
/// (events, then the result or an error), decoded into the same types
/// `LocalService` returns, so that a command renders both alike.
final class RemoteService: TunnelService {
    let socketPath: String
    /// The command being run, for "'start' needs root or the vpnctl agent".
    let command: String
    /// The language the agent words its errors in (nil: English; always nil with --json).
    let language: String?
    /// How a request reaches the agent and its reply's lines come back: the
    /// agent's socket, or a test's loopback. Returns the result's JSON, or
    /// nil when `events` wanted no more first.
    typealias Transport = (_ request: ServiceRequest, _ events: ServiceEvents) throws -> [UInt8]?
    var transport: Transport?

    init(socketPath: String, command: String, language: String?, transport: Transport? = nil) {
        self.socketPath = socketPath
        self.command = command
        self.language = language
        self.transport = transport
    }

    func list() throws -> ProfileList { try call(.list) }
    func can(_ action: PolicyAction, _ profile: String) throws -> CanAnswer { try call(.can(action: action, profile: profile)) }
    func isConnected(_ profile: String) throws -> ConnectedAnswer { try call(.isConnected(profile: profile)) }
    func apps(_ profile: String) throws -> AppsReport { try call(.apps(profile: profile)) }
    func placeApp(_ profile: String, pid: Int32) throws -> AppPlacement { try call(.placeApp(profile: profile, pid: pid)) }
    func status(_ profile: String?) throws -> StatusReport { try call(.status(profile: profile)) }
    func watch(_ profile: String?, _ events: ServiceEvents) throws { try stream(.watch(profile: profile), events) }

    func start(_ profile: String, wait: Bool, timeout: Int, changes: Bool, persist: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        try call(.start(profile: profile, wait: wait, timeout: timeout, changes: changes, persist: persist), events)
    }

    func stop(_ profile: String, wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        try call(.stop(profile: profile, wait: wait, timeout: timeout, changes: changes), events)
    }

    func stopAll(wait: Bool, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> StopAllReport {
        try call(.stop(profile: nil, wait: wait, timeout: timeout, changes: changes), events)
    }

    func toggle(_ profile: String, timeout: Int, changes: Bool, _ events: ServiceEvents) throws -> TunnelReport {
        try call(.toggle(profile: profile, timeout: timeout, changes: changes), events)
    }

    func verify(_ profile: String, probe: String, dns: String?, timeout: Int) throws -> VerifyAnswer {
        try call(.verify(profile: profile, probe: probe, dns: dns, timeout: timeout))
    }

    func stats(_ profile: String) throws -> StatsAnswer { try call(.stats(profile: profile)) }
    func logs(_ profile: String, since: Date?) throws -> LogsAnswer { try call(.logs(profile: profile, since: since, follow: false)) }

    func followLogs(_ profile: String, since: Date?, _ events: ServiceEvents) throws {
        try stream(.logs(profile: profile, since: since, follow: true), events)
    }

    func show(_ profile: String) throws -> ProfileDetails {
        let bytes = try result(.show(profile: profile), NoEvents())
        do { return try ProfileDetails(json: bytes) } catch { throw malformed(error) }
    }

    func pauseOnDemand(_ profile: String, _ paused: Bool) throws -> OnDemandPauseAnswer {
        try call(.pauseOnDemand(profile: profile, paused: paused))
    }

    func call<R: Decodable>(_ call: ServiceCall, _ events: ServiceEvents = NoEvents()) throws -> R {
        let bytes = try result(call, events)
        do { return try ServiceReply.decoder().decode(R.self, from: Data(bytes)) } catch {
            throw malformed(error)
        }
    }

    /// The result's JSON.
    func result(_ call: ServiceCall, _ events: ServiceEvents) throws -> [UInt8] {
        // The client answers what a start asks (or declines): it says so.
        let request = ServiceRequest(call, language: language, answers: true)
        guard let bytes = try transport.map({ try $0(request, events) }) ?? exchange(request, events) else { throw lost() }
        return bytes
    }

    /// A stream: it ends when `events` wants no more, or with the agent's error.
    func stream(_ call: ServiceCall, _ events: ServiceEvents) throws {
        let request = ServiceRequest(call, language: language)
        _ = try transport.map { try $0(request, events) } ?? exchange(request, events)
    }

    /// What one line of a reply means: an event, handed to `events`; the result; or the error, thrown.
    enum Received { case more, enough, result([UInt8]), ask(CredentialRequest) }

    func receive(_ line: [UInt8], _ events: ServiceEvents) throws -> Received {
        let reply: ServiceReply
        do { reply = try ServiceReply.parse(line) } catch { throw malformed(error) }
        switch reply {
        case .event(.credentials(let r)): return .ask(r)
        case .event(let e): return events.emit(e) ? .more : .enough
        case .result(let bytes): return .result(bytes)
        case .error(let e): throw e
        }
    }

    /// Sends the call and hands its events to `events` as they come; the
    /// result's JSON, or nil when `events` wanted no more first.
    func exchange(_ request: ServiceRequest, _ events: ServiceEvents) throws -> [UInt8]? {
        guard (try? FileSystem.info(socketPath))??.isSocket == true else { throw notRunning() }
        let fd: Int32
        do { fd = try UnixSocket.connect(to: socketPath) } catch { throw notRunning() }
        defer { close(fd) }
        guard UnixSocket.sendAll(fd, Array(request.serialized.utf8)) else { throw lost() }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            // An older agent answers in protocol 1's binary frames.
            if let first = buffer.first, first != UInt8(ascii: "{") { throw olderAgent() }
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                switch try receive(line, events) {
                case .more: continue
                case .enough: return nil
                case .result(let bytes): return bytes
                case .ask(let r):
                    // The agent's question, answered on the same socket.
                    let reply = CredentialReply(answers: events.credentials(r))
                    guard var line = try? ServiceReply.encoder().encode(reply).map({ $0 }) else { throw lost() }
                    line.append(0x0A)
                    defer { for i in line.indices { line[i] = 0 } }
                    guard UnixSocket.sendAll(fd, line) else { throw lost() }
                }
            }
            if buffer.count > ServiceReply.maximumLineLength { throw malformed(ServiceProtocolError("a reply line is too long")) }
            // Waits for the agent, or for our own reader to go away (`status --watch | head`).
            let ready = pollReadable([fd], orHangupOf: events.hangupDescriptor, timeoutMs: -1)
            if ready.contains(1) || !events.isOpen() { return nil }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { throw lost() }
            buffer += chunk[0..<n]
        }
    }

    func notRunning() -> VPNError {
        VPNError(.permissionDenied, L("'\(command)' needs root or the vpnctl agent, and the agent is not running (no agent at \(socketPath))"),
                 hint: L("start it with: systemctl start vpnctl-agent.socket (or run 'vpnctl agent' as root)"))
    }

    func lost() -> VPNError {
        VPNError(.failure, L("the vpnctl agent closed the connection before it answered (it stopped or restarted)"),
                 hint: L("tunnels are not affected; see 'vpnctl status' for the truth, then try again"))
    }

    func malformed(_ error: Error) -> VPNError {
        VPNError(.failure, L("the vpnctl agent's reply is malformed: \(error)"))
    }

    func olderAgent() -> VPNError {
        VPNError(.failure, L("the vpnctl agent is older than this vpnctl (it speaks protocol 1, this vpnctl \(ServiceRequest.protocolVersion))"),
                 hint: L("restart it after an upgrade: systemctl restart vpnctl-agent.socket vpnctl-agent.service"))
    }
}

/// A command's side of a call's events: a closure renders each, and the
/// command's stdout says whether anyone still reads.
final class CommandEvents: ServiceEvents {
    let stdout: TextSink
    let handle: (ServiceEvent) -> Bool
    /// The command's answers to what a start asks (nil: it asks nothing).
    let prompt: CredentialPrompt?

    init(_ inv: Invocation, prompt: CredentialPrompt? = nil, _ handle: @escaping (ServiceEvent) -> Bool) {
        stdout = inv.context.stdout
        self.prompt = prompt
        self.handle = handle
    }

    func emit(_ event: ServiceEvent) -> Bool { handle(event) }
    func credentials(_ request: CredentialRequest) -> CredentialAnswers? { prompt?.answer(request) }
    func isOpen() -> Bool { stdout.checkOpen() && stdout.failure == nil }
    var hangupDescriptor: Int32? { stdout.descriptor }
}

extension Invocation {
    /// Where this command's use cases run: in this process (root; a store
    /// of the user's own, named with --config-dir or VPNCTL_CONFIG_DIR), or
    /// through the agent, with the rights the profiles' policy gives.
    var service: TunnelService {
        if let service = context.service { return service }
        if geteuid() != 0 && args.value("config-dir") == nil && (context.environment["VPNCTL_CONFIG_DIR"] ?? "").isEmpty {
            return RemoteService(socketPath: AgentSettings.socketPath(runDirectory: options.runDirectory),
                                 command: args.command.first ?? "vpnctl", language: options.json ? nil : Localization.language)
        }
        return LocalService(configDirectory: options.configDirectory, runDirectory: options.runDirectory,
                            path: context.environment["PATH"])
    }
}
