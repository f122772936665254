#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// What a start asks the person who started it: a password, a one-time
/// code, the server's challenge, or a sign-in in a web browser. It travels
/// as data (to the CLI's terminal, to the agent's client), and the answers
/// live in memory only: never in a file, the log, the record, argv or the
/// environment.
public struct CredentialRequest: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, CaseIterable, Sendable {
        case username, password, oneTimeCode, challenge
        /// How `show` and errors name it.
        public var shown: String {
            switch self {
            case .username: return L("username")
            case .password: return L("password")
            case .oneTimeCode: return L("one-time code")
            case .challenge: return L("the server's challenge")
            }
        }
    }

    public struct Field: Codable, Equatable, Sendable {
        public var kind: Kind
        /// The words to show: vpnctl's ("Password"), or the server's own
        /// (a static-challenge text, a CRV1 challenge).
        public var prompt: String
        /// Whether what is typed may be shown as it is typed.
        public var echo: Bool
        /// The value kept when nothing is typed (the stored username).
        public var offered: String?

        public init(_ kind: Kind, prompt: String, echo: Bool, offered: String? = nil) {
            self.kind = kind
            self.prompt = prompt
            self.echo = echo
            self.offered = offered
        }
    }

    /// The profile's name.
    public var profile: String
    public var fields: [Field]
    /// A sign-in in a web browser: the URL to open. Nothing is typed; the
    /// server's verdict ends the wait.
    public var url: String?
    /// How long the answer may take.
    public var timeoutSeconds: Int

    public init(profile: String, fields: [Field], url: String? = nil, timeoutSeconds: Int) {
        self.profile = profile
        self.fields = fields
        self.url = url
        self.timeoutSeconds = timeoutSeconds
    }

    /// "password and one-time code", for errors and `show`.
    public var asked: String {
        let names = fields.filter { $0.kind != .username }.map(\.kind.shown)
        if url != nil && names.isEmpty { return L("a sign-in in a web browser") }
        return names.joined(separator: L(" and "))
    }
}

/// The answers to a request, by kind. Memory only.
public struct CredentialAnswers: Codable, Equatable, Sendable {
    public var values: [String: String]
    public init(_ values: [CredentialRequest.Kind: String] = [:]) {
        self.values = Dictionary(uniqueKeysWithValues: values.map { ($0.key.rawValue, $0.value) })
    }
    public subscript(kind: CredentialRequest.Kind) -> String? {
        get { values[kind.rawValue] }
        set { values[kind.rawValue] = newValue }
    }
    public var isEmpty: Bool { values.isEmpty }
}

/// One message on the line between a start and its supervisor.
struct CredentialMessage: Codable {
    /// Start -> supervisor: what was asked before the spawn, answered.
    var answers: CredentialAnswers?
    /// Supervisor -> start: a question the provider raised on the way.
    var ask: CredentialRequest?
    /// Start -> supervisor: nobody can answer (no terminal, a script).
    var declined: Bool?
}

/// The line between a start and the supervisor it spawned: a socketpair of
/// datagrams (SOCK_SEQPACKET, so each message arrives whole), fd 4 in the
/// supervisor. The start writes the answers it collected before the spawn;
/// the supervisor asks what the provider asks later (a server's challenge, a
/// web sign-in) for as long as the start waits. When the start is gone, a
/// question gets no answer.
public final class CredentialLine {
    public let fd: Int32
    public private(set) var closed = false

    public init(fd: Int32) { self.fd = fd }

    /// Both ends; the second is the supervisor's (not close-on-exec in the child: spawn maps it).
    public static func pair() throws -> (CredentialLine, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else { throw Errno.current }
        return (CredentialLine(fd: fds[0]), fds[1])
    }

    static let limit = 65536

    func send(_ m: CredentialMessage) -> Bool {
        guard !closed, let bytes = try? JSONEncoder().encode(m) else { return false }
        var data = [UInt8](bytes)
        defer { for i in data.indices { data[i] = 0 } }
        let n = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return n == data.count
    }

    /// One message, or nil once the other end is gone (or sent nonsense).
    func receive() -> CredentialMessage? {
        guard !closed else { return nil }
        var buffer = [UInt8](repeating: 0, count: CredentialLine.limit)
        defer { for i in buffer.indices { buffer[i] = 0 } }
        var n: Int
        repeat { n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } } while n < 0 && errno == EINTR
        guard n > 0, let m = try? JSONDecoder().decode(CredentialMessage.self, from: Data(buffer[0..<n])) else {
            closed = true
            return nil
        }
        return m
    }

    public func close() {
        if !closed { closed = true }
        _ = Glibc.close(fd)
    }

    // MARK: the start's side

    /// Sends what was answered before the spawn.
    public func give(_ answers: CredentialAnswers) { _ = send(CredentialMessage(answers: answers)) }

    /// Reads one question and answers it with `answer` (nil: nobody can).
    /// Returns the question; nil once the supervisor's end is closed (or it
    /// sent something else).
    @discardableResult
    public func serve(_ answer: (CredentialRequest) -> CredentialAnswers?) -> CredentialRequest? {
        guard let m = receive(), let request = m.ask else { return nil }
        if let a = answer(request) { _ = send(CredentialMessage(answers: a)) } else { _ = send(CredentialMessage(declined: true)) }
        return request
    }

    // MARK: the supervisor's side

    /// The answers the start sent before the spawn (already in the socket).
    public func initialAnswers() -> CredentialAnswers {
        guard pollReadable([fd], timeoutMs: 0).contains(0), let m = receive() else { return CredentialAnswers() }
        return m.answers ?? CredentialAnswers()
    }

    /// Questions waiting for the one being answered (one at a time: each
    /// reply must be the answer to its own question).
    private var waiting: [(CredentialRequest, (CredentialAnswers?) -> Void)] = []
    private var answering = false

    /// Asks the start, on `loop`; `reply` gets the answers, or nil when the
    /// start declines, is gone, or the request's time runs out.
    public func ask(_ request: CredentialRequest, on loop: EventLoop, reply: @escaping (CredentialAnswers?) -> Void) {
        waiting.append((request, reply))
        if !answering { askNext(on: loop) }
    }

    func askNext(on loop: EventLoop) {
        guard !waiting.isEmpty else { answering = false; return }
        answering = true
        let (request, reply) = waiting.removeFirst()
        var watch: EventLoop.Token?
        var timer: EventLoop.Token?
        var done = false
        let finish: (CredentialAnswers?) -> Void = { [weak self] answers in
            guard !done else { return }
            done = true
            loop.cancel(watch)
            loop.cancel(timer)
            reply(answers)
            self?.askNext(on: loop)
        }
        guard send(CredentialMessage(ask: request)) else { return finish(nil) }
        watch = loop.watch(fd) { [weak self] in finish(self?.receive()?.answers) }
        timer = loop.after(Int64(request.timeoutSeconds) * 1000) { [weak self] in
            // An answer that comes after this would be read as the next
            // question's: nobody is asked anything more on this line.
            self?.closed = true
            finish(nil)
        }
    }
}

/// What to tell someone whose start needed an answer nobody could give.
public enum CredentialAdvice {
    public static func hint(for request: CredentialRequest, profile: Profile) -> String {
        let kinds = Set(request.fields.map(\.kind))
        var ways: [String] = []
        if kinds.contains(.password) {
            let secret = profile.protocol.model.passwordSecret ?? "password"
            ways.append(L("give the password with 'vpnctl start \(profile.name) --password-file FILE' (a 0600 file), or store it: vpnctl secret set \(profile.name) \(secret)"))
        }
        if kinds.contains(.oneTimeCode) || kinds.contains(.challenge) || request.url != nil {
            ways.append(L("a one-time code or a sign-in is answered at each start: run 'vpnctl start \(profile.name)' on a terminal"))
        } else {
            ways.append(L("or run 'vpnctl start \(profile.name)' on a terminal, which asks"))
        }
        return ways.joined(separator: "; ")
    }
}

extension CredentialRequest {
    /// The username (offered as stored) and the password, as auth-user-pass and EAP ask them.
    public static func userAndPassword(_ username: String?) -> [Field] {
        [Field(.username, prompt: L("Username"), echo: true, offered: username),
         Field(.password, prompt: L("Password"), echo: false)]
    }
}
