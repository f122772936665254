#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// Where the agent keeps its state and who administers it.
struct AgentSettings {
    var configDirectory: String
    var runDirectory: String
    var adminGroup: String

    var policy: AccessPolicy { AccessPolicy(adminGroup: adminGroup) }
    var socketPath: String { AgentSettings.socketPath(runDirectory: runDirectory) }

    static func socketPath(runDirectory: String) -> String { runDirectory + "/agent.sock" }
}

extension Caller {
    /// The caller a uid and gid stand for, with names and groups from the
    /// system's databases.
    static func fromSystem(uid: uid_t, gid: gid_t) -> Caller {
        let name = UserDatabase.userName(uid)
        return Caller(uid: uid, gid: gid, userName: name, groupNames: UserDatabase.groupNames(uid: uid, gid: gid, userName: name))
    }

    /// This process's own user.
    static var current: Caller { fromSystem(uid: geteuid(), gid: getegid()) }
}

/// Text a command writes, as agent frames: into a buffer (requests the
/// agent answers itself) or onto the client's socket (a worker's).
final class FrameSink: TextSink {
    let stream: (String) -> AgentFrame
    let send: ([UInt8]) -> Bool
    let socket: Int32?
    private(set) var failure: Errno?

    init(stream: @escaping (String) -> AgentFrame, socket: Int32?, send: @escaping ([UInt8]) -> Bool) {
        self.stream = stream
        self.socket = socket
        self.send = send
    }

    func write(_ text: String) {
        guard failure == nil, !text.isEmpty else { return }
        if !send(stream(text).encoded) { failure = Errno(EPIPE) }
    }

    var descriptor: Int32? { socket }

    /// The client hung up: nothing it asked for needs to go on.
    func checkOpen() -> Bool {
        guard failure == nil else { return false }
        guard let socket else { return true }
        var p = pollfd(fd: socket, events: 0, revents: 0)
        if poll(&p, 1, 0) > 0, p.revents & Int16(POLLHUP | POLLERR) != 0 { return false }
        return true
    }
}

/// What the agent does with a request once it has read it: decide, then
/// run the command as root would run it, with output for the client.
enum AgentExecution {
    /// Whether the verb is answered in the agent's own loop (quick reads of
    /// the store and the live system) or by a worker process (anything that
    /// waits: start, stop, toggle, verify, stats, status --watch).
    static func runsInline(_ request: AgentRequest) -> Bool {
        switch request.verb {
        case .list, .can, .isConnected: return true
        case .status: return !request.flag("watch")
        default: return false
        }
    }

    /// A request the policy refuses: the error the client reads, in its
    /// language, and the decision, which the agent logs in English.
    struct Denial: Error {
        let error: VPNError
        let decision: AccessDecision
    }

    /// Authorizes the request for the caller. Returns the request with its
    /// profile named by UUID (so that a rename meanwhile cannot point it at
    /// another profile) and the decision, or throws the error to render.
    /// A profile the caller may not see reads as absent, for every verb
    /// (`can` too): its name, its policy and names like it are never in a reply.
    static func authorize(_ request: AgentRequest, caller: Caller, settings: AgentSettings) throws -> (AgentRequest, AccessDecision?) {
        guard let reference = request.profile else { return (request, nil) }
        let policy = settings.policy
        let profile = try visibleProfile(reference, caller: caller, settings: settings)
        var resolved = request
        resolved.profile = profile.id.lowercasedString
        // list and can decide nothing on the caller's behalf: can answers
        // "denied" itself, for a profile the caller may see.
        guard let action = request.verb.action else { return (resolved, nil) }
        let decision = policy.decide(caller, action, profile: profile)
        guard decision.allowed else { throw Denial(error: policy.denial(decision, action: action, profile: profile), decision: decision) }
        return (resolved, decision)
    }

    /// The profile `reference` names among those the caller may see (all,
    /// for root and the admin group); otherwise "no profile named", with
    /// suggestions from those alone, and no advice to import one.
    static func visibleProfile(_ reference: String, caller: Caller, settings: AgentSettings) throws -> Profile {
        let policy = settings.policy
        let manager = ProfileManager(store: PreferencesStore(directory: settings.configDirectory))
        try manager.load()
        guard !policy.isAdmin(caller) else { return try manager.profile(named: reference) }
        manager.restrict { policy.canSee(caller, $0) }
        do { return try manager.profile(named: reference) } catch let e as VPNError where e.remedy == .importFirst {
            throw VPNError(e.code, e.message, hint: L("no profile's policy names you or a group of yours; ask root or a member of group '\(settings.adminGroup)'"))
        }
    }

    /// Runs an authorized request's command with the agent's own store and
    /// run directory, rendered for the client's terminal; returns its exit code.
    static func run(_ request: AgentRequest, caller: Caller, settings: AgentSettings, path: String?,
                    stdout: TextSink, stderr: TextSink) -> Int32 {
        var context = makeContext(request, path: path, stdout: stdout, stderr: stderr)
        let policy = settings.policy
        context.agentCaller = (caller, policy)
        if !policy.isAdmin(caller) {
            context.visibleProfiles = request.verb == .stop
                ? { policy.decide(caller, .stop, profile: $0).allowed }
                : { policy.canSee(caller, $0) }
        }
        if !caller.isRoot, let action = request.verb.action, request.flag("watch") || request.flag("follow") {
            // Decided again before each report: an administrator too may stop being one.
            let recheck = AccessRecheck(caller: caller, settings: settings, action: action,
                                        profileID: request.profile.flatMap { UUID(uuidString: $0) })
            context.visibleProfiles = { recheck.canSee($0) }
            context.recheckAccess = { recheck.check() }
        }
        var args = ParsedArguments()
        args.command = [request.verb.rawValue]
        args.flags = Set(request.flags)
        for (key, value) in request.values { args.values[key] = [value] }
        args.values["config-dir"] = [settings.configDirectory]
        args.values["run-dir"] = [settings.runDirectory]
        switch request.verb {
        case .stats: args.values["profile"] = request.profile.map { [$0] }
        case .can: args.positionals = [request.canAction?.rawValue ?? "", request.profile ?? ""]
        default: args.positionals = request.profile.map { [$0] } ?? []
        }
        let early = Output(context: context, json: request.flag("json"), color: false)
        guard let spec = VPNCLI.commands.first(where: { $0.name == request.verb.rawValue }) else {
            return VPNCLI.report(VPNError(.usage, L("the agent has no command \(request.verb.rawValue.quotedForMessage)")), to: early)
        }
        return VPNCLI.execute(spec, args, context, early: early)
    }

    /// An error rendered as the command would render it for the client.
    static func render(_ error: Error, _ request: AgentRequest?, stdout: TextSink, stderr: TextSink) -> Int32 {
        let context = makeContext(request ?? AgentRequest(verb: .list), path: nil, stdout: stdout, stderr: stderr)
        let mode: ColorMode = request?.flag("no-color") == true ? .never : ColorMode(rawValue: request?.values["color"] ?? "auto") ?? .auto
        return VPNCLI.report((error as? Denial)?.error ?? error, to: Output(context: context, json: request?.flag("json") ?? false, color: mode))
    }

    /// Makes this process speak the request's language, and returns the
    /// environment that says so: the client's catalog (read beside this
    /// binary; `language` is one of Localization.languages, never a path),
    /// English for --json, for no language and for nil (between requests).
    /// Messages are made in the language set when they are thrown, so the
    /// agent sets it before it reads a request's profile, and back after.
    @discardableResult
    static func speak(_ request: AgentRequest?) -> [String: String] {
        guard let request, let language = request.language, !request.flag("json") else {
            Localization.configure(environment: [:], english: true)
            return [:]
        }
        let environment = ["LANG": "C.UTF-8", "LANGUAGE": language]
        Localization.configure(environment: environment)
        return environment
    }

    static func makeContext(_ request: AgentRequest, path: String?, stdout: TextSink, stderr: TextSink) -> Context {
        var environment = ["PATH": path ?? "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"]
        if !request.colorAllowed { environment["NO_COLOR"] = "1" }
        environment.merge(speak(request)) { $1 }
        var context = Context(environment: environment, stdout: stdout, stderr: stderr,
                              readStdin: { _ in [] }, stdinIsTerminal: false,
                              stdoutIsTerminal: request.stdoutIsTerminal, stderrIsTerminal: request.stderrIsTerminal,
                              runEditor: { _, _, _ in throw VPNError(.usage, L("no editor runs through the agent")) },
                              readSecretFromTerminal: { _ in [] })
        context.terminalWidth = request.stdoutIsTerminal ? request.terminalColumns : nil
        return context
    }
}
