import FoundationEssentials
import VPNCore
import VPNSystem

/// One call of the service's use cases, with its typed arguments. It names
/// a profile (by name or UUID) and never a path, a configuration or a
/// command line: the service uses its own store and run directory. Nor is
/// the caller's identity in it: the agent asks the kernel (SO_PEERCRED).
public enum ServiceCall: Equatable, Sendable {
    case list
    case can(action: PolicyAction, profile: String)
    case isConnected(profile: String)
    case status(profile: String?)
    /// `status --watch`: a `watching` event, then a `transition` event for each change, until the caller hangs up.
    case watch(profile: String?)
    /// `persist`: a server that does not answer does not end the tunnel.
    case start(profile: String, wait: Bool, timeout: Int, changes: Bool, persist: Bool = false)
    /// A nil profile stops every running one (`stop --all`).
    case stop(profile: String?, wait: Bool, timeout: Int, changes: Bool)
    case toggle(profile: String, timeout: Int, changes: Bool)
    case verify(profile: String, probe: String, dns: String?, timeout: Int)
    /// What `stats --profile` samples: the profile's tunnel interface and session.
    case stats(profile: String)
    case logs(profile: String, since: Date?, follow: Bool)
    /// The profile as stored, secrets named and never shown.
    case show(profile: String)
    /// `ondemand pause` (true) and `ondemand resume` (false).
    case pauseOnDemand(profile: String, paused: Bool)
    /// `vpnctl apps`: what the profile's app rules cover now.
    case apps(profile: String)
    /// `vpnctl run`, `vpnctl app add`: a process (the caller's own) put under the profile's app rules.
    case placeApp(profile: String, pid: Int32)

    /// The name on the wire.
    public var name: String {
        switch self {
        case .list: return "list"
        case .can: return "can"
        case .isConnected: return "isConnected"
        case .status: return "status"
        case .watch: return "watch"
        case .start: return "start"
        case .stop: return "stop"
        case .toggle: return "toggle"
        case .verify: return "verify"
        case .stats: return "stats"
        case .logs: return "logs"
        case .show: return "show"
        case .pauseOnDemand(_, let paused): return paused ? "pauseOnDemand" : "resumeOnDemand"
        case .apps: return "apps"
        case .placeApp: return "placeApp"
        }
    }

    public static let names = ["list", "can", "isConnected", "status", "watch", "start", "stop", "toggle", "verify", "stats", "logs", "show",
                                "pauseOnDemand", "resumeOnDemand", "apps", "placeApp"]

    /// The profile the call names, if any.
    public var profile: String? {
        switch self {
        case .list: return nil
        case .can(_, let p), .isConnected(let p), .start(let p, _, _, _, _), .toggle(let p, _, _), .verify(let p, _, _, _),
             .stats(let p), .logs(let p, _, _), .show(let p), .pauseOnDemand(let p, _), .apps(let p), .placeApp(let p, _):
            return p
        case .status(let p), .watch(let p), .stop(let p, _, _, _):
            return p
        }
    }

    /// The same call naming another profile (its UUID, once authorized).
    public func naming(_ profile: String) -> ServiceCall {
        switch self {
        case .list: return self
        case .can(let a, _): return .can(action: a, profile: profile)
        case .isConnected: return .isConnected(profile: profile)
        case .status: return .status(profile: profile)
        case .watch: return .watch(profile: profile)
        case .start(_, let w, let t, let c, let persist): return .start(profile: profile, wait: w, timeout: t, changes: c, persist: persist)
        case .stop(_, let w, let t, let c): return .stop(profile: profile, wait: w, timeout: t, changes: c)
        case .toggle(_, let t, let c): return .toggle(profile: profile, timeout: t, changes: c)
        case .verify(_, let p, let d, let t): return .verify(profile: profile, probe: p, dns: d, timeout: t)
        case .stats: return .stats(profile: profile)
        case .logs(_, let s, let f): return .logs(profile: profile, since: s, follow: f)
        case .show: return .show(profile: profile)
        case .pauseOnDemand(_, let paused): return .pauseOnDemand(profile: profile, paused: paused)
        case .apps: return .apps(profile: profile)
        case .placeApp(_, let pid): return .placeApp(profile: profile, pid: pid)
        }
    }

    /// The policy action the call takes on its profile; nil for list and
    /// can (which decide nothing on the caller's behalf). Showing a profile
    /// is part of its status. A pause keeps the tunnel from being started,
    /// so it is the stop right; a resume lets the agent start it, the start right.
    public var action: PolicyAction? {
        switch self {
        case .start: return .start
        case .stop: return .stop
        case .toggle: return .toggle
        case .status, .watch, .isConnected, .logs, .show, .apps: return .status
        // Putting a program under the rules is using the tunnel: the start right.
        case .placeApp: return .start
        case .pauseOnDemand(_, let paused): return paused ? .stop : .start
        case .verify: return .verify
        case .stats: return .stats
        case .list, .can: return nil
        }
    }

    /// Whether the agent answers it in its own loop (quick reads of the
    /// store and the live system) rather than in a worker process (anything
    /// that waits or streams).
    public var runsInline: Bool {
        switch self {
        case .list, .can, .isConnected, .status, .stats, .show, .pauseOnDemand, .apps, .placeApp: return true
        case .logs(_, _, let follow): return !follow
        case .watch, .start, .stop, .toggle, .verify: return false
        }
    }

    /// Whether the call streams until the caller hangs up.
    public var streams: Bool {
        switch self {
        case .watch: return true
        case .logs(_, _, let follow): return follow
        default: return false
        }
    }
}

/// A call as it travels to the agent: the call, the protocol version, and
/// the language the caller reads (the service's own messages, its errors,
/// are made in it; everything else the client words itself).
public struct ServiceRequest: Equatable, Sendable {
    /// The version of this protocol; a request of another is refused.
    public static let protocolVersion = 2
    /// A request is one JSON object on one line, at most this long.
    public static let maximumSize = 4096
    /// The longest profile reference or text argument accepted.
    public static let maximumValueLength = 256

    public var call: ServiceCall
    /// "vi", "zh_Hans", "ru"; nil for English. Only the names in
    /// `Localization.languages` are taken (it names a file).
    public var language: String?
    /// The client answers what a start asks (a `credentials` event, answered
    /// with one line on the same socket); a client that does not say so is
    /// never asked.
    public var answers = false

    public init(_ call: ServiceCall, language: String? = nil, answers: Bool = false) {
        self.call = call
        self.language = language.flatMap { Localization.languages.contains($0) ? $0 : nil }
        self.answers = answers
    }

    /// One JSON line: {"protocol":2,"call":"start","profile":"office","wait":true,...}.
    public var serialized: String {
        var m: [JSONObject.Member] = [("protocol", .number(String(ServiceRequest.protocolVersion))), ("call", .string(call.name))]
        func add(_ key: String, _ value: JSONValue) { m.append((key, value)) }
        switch call {
        case .list: break
        case .can(let action, let p): add("action", .string(action.rawValue)); add("profile", .string(p))
        case .isConnected(let p), .stats(let p), .show(let p), .pauseOnDemand(let p, _), .apps(let p): add("profile", .string(p))
        case .placeApp(let p, let pid): add("profile", .string(p)); add("pid", .number(String(pid)))
        case .status(let p), .watch(let p): if let p { add("profile", .string(p)) }
        case .start(let p, let wait, let timeout, let changes, let persist):
            add("profile", .string(p)); add("wait", .bool(wait)); add("timeout", .number(String(timeout))); add("changes", .bool(changes))
            if persist { add("persist", .bool(true)) }
        case .stop(let p, let wait, let timeout, let changes):
            if let p { add("profile", .string(p)) } else { add("all", .bool(true)) }
            add("wait", .bool(wait)); add("timeout", .number(String(timeout))); add("changes", .bool(changes))
        case .toggle(let p, let timeout, let changes):
            add("profile", .string(p)); add("timeout", .number(String(timeout))); add("changes", .bool(changes))
        case .verify(let p, let probe, let dns, let timeout):
            add("profile", .string(p)); add("probe", .string(probe)); if let dns { add("dns", .string(dns)) }
            add("timeout", .number(String(timeout)))
        case .logs(let p, let since, let follow):
            add("profile", .string(p)); if let since { add("since", .string(Timestamp.iso8601(since))) }; add("follow", .bool(follow))
        }
        if let language { add("language", .string(language)) }
        if answers { add("answers", .bool(true)) }
        return JSONValue.object(JSONObject(ordered: m)).serialized + "\n"
    }

    /// Parses one request; every problem is a `ServiceProtocolError` naming
    /// it. Members a call does not take (a "uid", a "configDir") are ignored:
    /// they could change nothing.
    public static func parse(_ bytes: [UInt8]) throws -> ServiceRequest {
        guard bytes.count <= maximumSize else { throw ServiceProtocolError("the request is larger than \(maximumSize) bytes") }
        let r: JSONReader
        do { r = try JSONReader(parsing: bytes) } catch { throw ServiceProtocolError("the request is not JSON") }
        guard case .object = r.value else { throw ServiceProtocolError("the request is not a JSON object") }
        do {
            guard let version = try r.int("protocol") else {
                // Version 1 named a "verb": an older vpnctl's client.
                if try r.optional("verb") != nil { throw ServiceProtocolError.skew(client: 1) }
                throw ServiceProtocolError("the request names no protocol version")
            }
            guard version == protocolVersion else { throw ServiceProtocolError.skew(client: version) }
            guard let name = try r.string("call") else { throw ServiceProtocolError("the request names no call") }
            return ServiceRequest(try call(name, r), language: try r.string("language"), answers: try r.bool("answers") ?? false)
        } catch let e as ServiceProtocolError {
            throw e
        } catch {
            throw ServiceProtocolError("malformed request: \(error)".abbreviated(200))
        }
    }

    static func call(_ name: String, _ r: JSONReader) throws -> ServiceCall {
        func text(_ key: String) throws -> String? {
            guard let t = try r.string(key) else { return nil }
            try check(t, key)
            return t
        }
        func required(_ key: String) throws -> String {
            guard let t = try text(key) else { throw ServiceProtocolError("\(name) needs a \(key)") }
            return t
        }
        func timeout() throws -> Int {
            guard let t = try r.int("timeout") else { throw ServiceProtocolError("\(name) needs a timeout") }
            guard (1...86400).contains(t) else { throw ServiceProtocolError("timeout must be 1–86400 seconds") }
            return t
        }
        let changes = try r.bool("changes") ?? false
        switch name {
        case "list": return .list
        case "can":
            guard let word = try text("action"), let action = PolicyAction(rawValue: word) else { throw ServiceProtocolError("can needs an action") }
            return .can(action: action, profile: try required("profile"))
        case "isConnected": return .isConnected(profile: try required("profile"))
        case "status": return .status(profile: try text("profile"))
        case "watch": return .watch(profile: try text("profile"))
        case "start":
            return .start(profile: try required("profile"), wait: try r.bool("wait") ?? true, timeout: try timeout(), changes: changes,
                          persist: try r.bool("persist") ?? false)
        case "stop":
            let profile = try text("profile")
            if (profile == nil) != (try r.bool("all") ?? false) { throw ServiceProtocolError("stop needs a profile or all, not both") }
            return .stop(profile: profile, wait: try r.bool("wait") ?? true, timeout: try timeout(), changes: changes)
        case "toggle": return .toggle(profile: try required("profile"), timeout: try timeout(), changes: changes)
        case "verify":
            return .verify(profile: try required("profile"), probe: try required("probe"), dns: try text("dns"), timeout: try timeout())
        case "stats": return .stats(profile: try required("profile"))
        case "logs":
            var since: Date?
            if let t = try text("since") {
                guard let d = Timestamp.parse(t) else { throw ServiceProtocolError("since must be an ISO 8601 time in UTC") }
                since = d
            }
            return .logs(profile: try required("profile"), since: since, follow: try r.bool("follow") ?? false)
        case "show": return .show(profile: try required("profile"))
        case "pauseOnDemand": return .pauseOnDemand(profile: try required("profile"), paused: true)
        case "resumeOnDemand": return .pauseOnDemand(profile: try required("profile"), paused: false)
        case "apps": return .apps(profile: try required("profile"))
        case "placeApp":
            guard let pid = try r.int("pid"), (1...Int(Int32.max)).contains(pid) else { throw ServiceProtocolError("placeApp needs a pid") }
            return .placeApp(profile: try required("profile"), pid: Int32(pid))
        default:
            throw ServiceProtocolError("unknown call \(name.abbreviated(64).quotedForMessage)")
        }
    }

    static func check(_ text: String, _ what: String) throws {
        if text.isEmpty || text.utf8.count > maximumValueLength {
            throw ServiceProtocolError("\(what) must be 1–\(maximumValueLength) bytes")
        }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw ServiceProtocolError("\(what) contains a control character")
        }
    }
}

/// A request the agent cannot read. Its text is English: a request that
/// cannot be read has no language.
public struct ServiceProtocolError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    /// Set when the request is of another protocol version.
    public let clientVersion: Int?

    public init(_ description: String) {
        self.description = description
        clientVersion = nil
    }

    init(description: String, clientVersion: Int) {
        self.description = description
        self.clientVersion = clientVersion
    }

    static func skew(client: Int) -> ServiceProtocolError {
        ServiceProtocolError(description: "the client speaks protocol \(client) and this vpnctl agent protocol \(ServiceRequest.protocolVersion): "
                                        + (client < ServiceRequest.protocolVersion ? "the client is older than the agent" : "the agent is older than the client"),
                             clientVersion: client)
    }
}
