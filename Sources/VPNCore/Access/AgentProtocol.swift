/// One request to the agent: a verb, a profile, and the few presentation
/// options the command line has for it. Never a path, a configuration or a
/// command line: the agent uses its own store and run directory, and
/// builds the command it runs from these fields alone. The caller's
/// identity is not in it either: the agent asks the kernel (SO_PEERCRED).
public struct AgentRequest: Equatable, Sendable {
    /// A request is one JSON object on one line, at most this long.
    public static let maximumSize = 4096
    /// The longest profile reference or option value accepted.
    public static let maximumValueLength = 256

    public enum Verb: String, CaseIterable, Sendable {
        case start, stop, toggle, status, isConnected = "is-connected", verify, stats, list, can, logs

        /// The policy action the verb takes on its profile; nil for list
        /// and can (which decide nothing on the caller's behalf).
        public var action: PolicyAction? {
            switch self {
            case .start: return .start
            case .stop: return .stop
            case .toggle: return .toggle
            case .status, .isConnected, .logs: return .status
            case .verify: return .verify
            case .stats: return .stats
            case .list, .can: return nil
            }
        }

        /// The options a client may pass with the verb (besides the common
        /// ones): the command's own, less anything naming a file.
        public var flags: Set<String> {
            switch self {
            case .start: return ["wait", "no-wait"]
            case .stop: return ["all", "no-wait"]
            case .status: return ["watch"]
            case .stats: return ["prometheus", "watch"]
            case .logs: return ["follow"]
            case .toggle, .isConnected, .verify, .list, .can: return []
            }
        }

        public var valueOptions: Set<String> {
            switch self {
            case .start, .stop, .toggle: return ["timeout"]
            case .status: return ["count"]
            case .verify: return ["probe", "timeout"]
            case .stats: return ["interval"]
            case .logs: return ["since"]
            case .isConnected, .list, .can: return []
            }
        }

        /// Whether the request must name a profile.
        public var needsProfile: Bool {
            switch self {
            case .start, .toggle, .isConnected, .verify, .stats, .can, .logs: return true
            case .stop, .status, .list: return false
            }
        }

        /// Options every verb takes: output format and colour.
        public static let commonFlags: Set<String> = ["json", "verbose", "no-color"]
        public static let commonValueOptions: Set<String> = ["color"]
    }

    public var verb: Verb
    public var profile: String?
    /// For `can`: the action asked about.
    public var canAction: PolicyAction?
    public var flags: [String]
    public var values: [String: String]
    /// Whether the client's stdout and stderr are terminals, and whether its
    /// environment allows colour (NO_COLOR, TERM=dumb): output is rendered
    /// for the client's streams, not the agent's.
    public var stdoutIsTerminal: Bool
    public var stderrIsTerminal: Bool
    public var colorAllowed: Bool
    /// The width of the client's terminal, so that `status` fits it.
    public var terminalColumns: Int?
    /// The catalog the client speaks ("vi", "zh_Hans", "ru"; nil for
    /// English, and always nil with --json): the agent answers in it. Only
    /// the names in `Localization.languages` are taken (it names a file).
    public var language: String?

    public init(verb: Verb, profile: String? = nil, canAction: PolicyAction? = nil, flags: [String] = [], values: [String: String] = [:],
                stdoutIsTerminal: Bool = false, stderrIsTerminal: Bool = false, colorAllowed: Bool = true, terminalColumns: Int? = nil,
                language: String? = nil) {
        self.verb = verb
        self.profile = profile
        self.canAction = canAction
        self.flags = flags.sorted()
        self.values = values
        self.stdoutIsTerminal = stdoutIsTerminal
        self.stderrIsTerminal = stderrIsTerminal
        self.colorAllowed = colorAllowed
        self.terminalColumns = terminalColumns.flatMap { (1...10_000).contains($0) ? $0 : nil }
        self.language = language.flatMap { Localization.languages.contains($0) ? $0 : nil }
    }

    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The request as it goes over the socket: one JSON line.
    public var serialized: String {
        var members: [JSONObject.Member] = [("verb", .string(verb.rawValue))]
        if let profile { members.append(("profile", .string(profile))) }
        if let canAction { members.append(("canAction", .string(canAction.rawValue))) }
        members.append(("flags", .array(flags.map { .string($0) })))
        members.append(("values", .object(JSONObject(values.keys.sorted().map { (key: $0, value: JSONValue.string(values[$0]!)) }))))
        members.append(("terminal", .array([.bool(stdoutIsTerminal), .bool(stderrIsTerminal)])))
        members.append(("color", .bool(colorAllowed)))
        if let terminalColumns { members.append(("columns", .number(String(terminalColumns)))) }
        if let language { members.append(("language", .string(language))) }
        let object = JSONObject(members)
        return JSONValue.object(object).serialized + "\n"
    }

    /// Parses one request; every problem is an `AgentProtocolError` naming
    /// it. Members it does not know (a "uid", a "configDir") are ignored:
    /// they could change nothing.
    public static func parse(_ bytes: [UInt8]) throws -> AgentRequest {
        guard bytes.count <= maximumSize else { throw AgentProtocolError("the request is larger than \(maximumSize) bytes") }
        let value: JSONValue
        do { value = try JSONSyntax.parse(bytes) } catch { throw AgentProtocolError("the request is not JSON") }
        guard case .object = value else { throw AgentProtocolError("the request is not a JSON object") }
        let r = JSONReader(value)
        do {
            guard let word = try r.string("verb") else { throw AgentProtocolError("the request names no verb") }
            guard let verb = Verb(rawValue: word) else { throw AgentProtocolError("unknown verb \(word.quotedForMessage)") }
            let profile = try r.string("profile")
            if let profile { try check(profile, "profile") }
            if verb.needsProfile && profile == nil { throw AgentProtocolError("\(verb.rawValue) needs a profile") }
            var canAction: PolicyAction?
            if verb == .can {
                guard let a = try r.string("canAction"), let action = PolicyAction(rawValue: a) else {
                    throw AgentProtocolError("can needs an action")
                }
                canAction = action
            }
            let flags = try r.strings("flags")
            for f in flags where !(verb.flags.contains(f) || Verb.commonFlags.contains(f)) {
                throw AgentProtocolError("\(verb.rawValue) takes no option \(f.quotedForMessage) through the agent")
            }
            var values: [String: String] = [:]
            if let v = try r.optional("values") {
                guard case .object(let members) = v.value else { throw AgentProtocolError("values must be an object") }
                for key in members.members.map(\.key) {
                    guard verb.valueOptions.contains(key) || Verb.commonValueOptions.contains(key) else {
                        throw AgentProtocolError("\(verb.rawValue) takes no option \(key.quotedForMessage) through the agent")
                    }
                    guard let text = try v.string(key) else { continue }
                    try check(text, key)
                    values[key] = text
                }
            }
            let terminal = try r.optional("terminal")?.array().map { try $0.bool() } ?? []
            return AgentRequest(verb: verb, profile: profile, canAction: canAction, flags: Array(Set(flags)), values: values,
                                stdoutIsTerminal: terminal.first ?? false, stderrIsTerminal: terminal.dropFirst().first ?? false,
                                colorAllowed: try r.bool("color") ?? true, terminalColumns: try r.int("columns"),
                                language: try r.string("language"))
        } catch let e as AgentProtocolError {
            throw e
        } catch {
            throw AgentProtocolError("malformed request: \(error)".abbreviated(200))
        }
    }

    static func check(_ text: String, _ what: String) throws {
        if text.isEmpty || text.utf8.count > maximumValueLength {
            throw AgentProtocolError("\(what) must be 1–\(maximumValueLength) bytes")
        }
        if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw AgentProtocolError("\(what) contains a control character")
        }
    }
}

/// A request the agent cannot read.
public struct AgentProtocolError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The agent's reply: frames of stdout text, stderr text, and last the
/// exit code. Each frame is a type byte ('o', 'e', 'x'), a 4-byte
/// big-endian length and that many bytes.
public enum AgentFrame: Equatable, Sendable {
    case stdout([UInt8])
    case stderr([UInt8])
    case exit(Int32)

    /// The largest frame a client accepts.
    public static let maximumLength = 1 << 20

    public var encoded: [UInt8] {
        let (type, payload): (UInt8, [UInt8])
        switch self {
        case .stdout(let b): (type, payload) = (0x6F, b)
        case .stderr(let b): (type, payload) = (0x65, b)
        case .exit(let code): (type, payload) = (0x78, Array(String(code).utf8))
        }
        let n = UInt32(payload.count)
        return [type, UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] + payload
    }

    /// The first complete frame in `buffer` and how many bytes it took;
    /// nil when more bytes are needed.
    public static func decode(_ buffer: ArraySlice<UInt8>) throws -> (AgentFrame, Int)? {
        guard buffer.count >= 5 else { return nil }
        let s = buffer.startIndex
        let n = Int(buffer[s + 1]) << 24 | Int(buffer[s + 2]) << 16 | Int(buffer[s + 3]) << 8 | Int(buffer[s + 4])
        guard n <= maximumLength else { throw AgentProtocolError("a reply frame of \(n) bytes is too large") }
        guard buffer.count >= 5 + n else { return nil }
        let payload = Array(buffer[(s + 5)..<(s + 5 + n)])
        switch buffer[s] {
        case 0x6F: return (.stdout(payload), 5 + n)
        case 0x65: return (.stderr(payload), 5 + n)
        case 0x78:
            guard let code = Int32(String(decoding: payload, as: UTF8.self)), (0...255).contains(code) else {
                throw AgentProtocolError("a reply's exit code is not a number")
            }
            return (.exit(code), 5 + n)
        default: throw AgentProtocolError("a reply frame has an unknown type")
        }
    }
}

/// What the agent hands a worker: the caller's identity (from
/// SO_PEERCRED) and the authorized request. It travels over a socket the
/// worker inherits, never on its command line, where every user could read
/// it in /proc/<pid>/cmdline.
public struct AgentWorkOrder: Equatable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var request: AgentRequest

    /// The largest order a worker reads: a request and two numbers.
    public static let maximumSize = AgentRequest.maximumSize * 2 + 256

    public init(uid: UInt32, gid: UInt32, request: AgentRequest) {
        self.uid = uid
        self.gid = gid
        self.request = request
    }

    /// One JSON line.
    public var serialized: String {
        let object = JSONObject([("uid", .number(String(uid))), ("gid", .number(String(gid))),
                                 ("request", .string(request.serialized))])
        return JSONValue.object(object).serialized + "\n"
    }

    public static func parse(_ bytes: [UInt8]) throws -> AgentWorkOrder {
        guard bytes.count <= maximumSize else { throw AgentProtocolError("the work order is larger than \(maximumSize) bytes") }
        let value: JSONValue
        do { value = try JSONSyntax.parse(bytes) } catch { throw AgentProtocolError("the work order is not JSON") }
        guard case .object = value else { throw AgentProtocolError("the work order is not a JSON object") }
        let r = JSONReader(value)
        do {
            guard let uid = try r.int("uid"), let gid = try r.int("gid"),
                  let uid32 = UInt32(exactly: uid), let gid32 = UInt32(exactly: gid) else {
                throw AgentProtocolError("the work order names no valid uid and gid")
            }
            guard let text = try r.string("request") else { throw AgentProtocolError("the work order has no request") }
            var line = Array(text.utf8)
            if line.last == 0x0A { line.removeLast() }
            return AgentWorkOrder(uid: uid32, gid: gid32, request: try AgentRequest.parse(line))
        } catch let e as AgentProtocolError {
            throw e
        } catch {
            throw AgentProtocolError("malformed work order: \(error)".abbreviated(200))
        }
    }
}
