#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNSystem

/// The command line's side of the agent: a user other than root runs the
/// same commands, and those that touch tunnels go to the agent, which
/// answers with exactly what root would have seen.
enum AgentClient {
    /// The commands the agent serves.
    static let served: Set<String> = Set(AgentRequest.Verb.allCases.map(\.rawValue))

    /// The reply to print, or nil when the command runs here (root; a
    /// store of the user's own, named with --config-dir or VPNCTL_CONFIG_DIR;
    /// a command the agent does not serve).
    static func forwardIfNeeded(_ spec: CommandSpec, _ args: ParsedArguments, _ context: Context, early: Output) -> Int32? {
        guard geteuid() != 0, served.contains(spec.name), let verb = AgentRequest.Verb(rawValue: spec.name) else { return nil }
        if args.value("config-dir") != nil || !(context.environment["VPNCTL_CONFIG_DIR"] ?? "").isEmpty { return nil }
        // stats without --profile reads /proc/net/dev, which anyone may.
        if verb == .stats && args.value("profile") == nil { return nil }
        // An action that does not exist is a usage error, said here as `can` says it.
        if verb == .can && PolicyAction(rawValue: args.positionals[0]) == nil { return nil }
        let options = GlobalOptions(args, context)
        let socket = AgentSettings.socketPath(runDirectory: options.runDirectory)
        let json = args.flag("json")
        let output = Output(context: context, json: json, color: (try? ColorMode.from(args)) ?? .auto)
        guard (try? FileSystem.info(socket))??.isSocket == true else {
            return VPNCLI.report(notRunning(spec.name, socket), to: output)
        }
        let request = makeRequest(verb, args, context)
        let fd: Int32
        do { fd = try UnixSocket.connect(to: socket) } catch {
            return VPNCLI.report(notRunning(spec.name, socket), to: output)
        }
        defer { close(fd) }
        return exchange(fd, request, context, output: output)
    }

    static func notRunning(_ command: String, _ socket: String) -> VPNError {
        VPNError(.permissionDenied, L("'\(command)' needs root or the vpnctl agent, and the agent is not running (no agent at \(socket))"),
                 hint: L("start it with: systemctl start vpnctl-agent.socket (or run 'vpnctl agent' as root)"))
    }

    static func makeRequest(_ verb: AgentRequest.Verb, _ args: ParsedArguments, _ context: Context) -> AgentRequest {
        var profile: String?
        var canAction: PolicyAction?
        switch verb {
        case .stats: profile = args.value("profile")
        case .can:
            canAction = PolicyAction(rawValue: args.positionals[0])
            profile = args.positionals.dropFirst().first
        default: profile = args.positionals.first
        }
        let allowedFlags = verb.flags.union(AgentRequest.Verb.commonFlags)
        let allowedValues = verb.valueOptions.union(AgentRequest.Verb.commonValueOptions)
        var values: [String: String] = [:]
        for (key, list) in args.values where allowedValues.contains(key) { values[key] = list.last }
        let env = context.environment
        return AgentRequest(verb: verb, profile: profile, canAction: canAction,
                            flags: args.flags.filter { allowedFlags.contains($0) }, values: values,
                            stdoutIsTerminal: context.stdoutIsTerminal, stderrIsTerminal: context.stderrIsTerminal,
                            colorAllowed: (env["NO_COLOR"] ?? "").isEmpty && env["TERM"] != "dumb",
                            terminalColumns: context.terminalWidth, language: Localization.language)
    }

    /// Sends the request and prints the reply's frames as they come.
    static func exchange(_ fd: Int32, _ request: AgentRequest, _ context: Context, output: Output) -> Int32 {
        let bytes = Array(request.serialized.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return VPNCLI.report(lost(), to: output) }
            offset += n
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            do {
                while let (frame, used) = try AgentFrame.decode(buffer[...]) {
                    buffer.removeFirst(used)
                    switch frame {
                    case .stdout(let b): context.stdout.write(String(decoding: b, as: UTF8.self))
                    case .stderr(let b): context.stderr.write(String(decoding: b, as: UTF8.self))
                    case .exit(let code): return code
                    }
                    // Our own reader went away (`status --watch | head`): so do we.
                    if context.stdout.failure != nil { return ExitCode.failure.rawValue }
                }
            } catch {
                return VPNCLI.report(VPNError(.failure, L("the vpnctl agent's reply is malformed: \(error)")), to: output)
            }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return VPNCLI.report(lost(), to: output) }
            buffer += chunk[0..<n]
        }
    }

    static func lost() -> VPNError {
        VPNError(.failure, L("the vpnctl agent closed the connection before it answered (it stopped or restarted)"),
                 hint: L("tunnels are not affected; see 'vpnctl status' for the truth, then try again"))
    }
}
