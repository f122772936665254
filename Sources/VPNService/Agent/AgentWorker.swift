#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// What the agent hands a worker: the caller's identity (from
/// SO_PEERCRED) and the authorized request. It travels over a socket the
/// worker inherits, never on its command line, where every user could read
/// it in /proc/<pid>/cmdline.
public struct WorkOrder: Equatable, Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var request: ServiceRequest

    /// The largest order a worker reads: a request and two numbers.
    public static let maximumSize = ServiceRequest.maximumSize * 2 + 256

    public init(uid: UInt32, gid: UInt32, request: ServiceRequest) {
        self.uid = uid
        self.gid = gid
        self.request = request
    }

    /// One JSON line.
    public var serialized: String {
        let object = JSONObject(ordered: [("uid", .number(String(uid))), ("gid", .number(String(gid))),
                                 ("request", .string(request.serialized))])
        return JSONValue.object(object).serialized + "\n"
    }

    public static func parse(_ bytes: [UInt8]) throws -> WorkOrder {
        guard bytes.count <= maximumSize else { throw ServiceProtocolError("the work order is larger than \(maximumSize) bytes") }
        let r: JSONReader
        do { r = try JSONReader(parsing: bytes) } catch { throw ServiceProtocolError("the work order is not JSON") }
        guard case .object = r.value else { throw ServiceProtocolError("the work order is not a JSON object") }
        do {
            guard let uid = try r.int("uid"), let gid = try r.int("gid"),
                  let uid32 = UInt32(exactly: uid), let gid32 = UInt32(exactly: gid) else {
                throw ServiceProtocolError("the work order names no valid uid and gid")
            }
            guard let text = try r.string("request") else { throw ServiceProtocolError("the work order has no request") }
            var line = Array(text.utf8)
            if line.last == 0x0A { line.removeLast() }
            return WorkOrder(uid: uid32, gid: gid32, request: try ServiceRequest.parse(line))
        } catch let e as ServiceProtocolError {
            throw e
        } catch {
            throw ServiceProtocolError("malformed work order: \(error)".abbreviated(200))
        }
    }
}

/// A worker: one authorized call that waits or streams, run as root with
/// the caller's access, its events and result written to the client's socket.
public enum AgentWorker {
    /// The worker's order arrives on this fd, the client's socket on 3.
    public static let orderFD: Int32 = 4
    public static let clientFD: Int32 = 3

    /// Runs the order; returns the exit code its outcome stands for. `log`
    /// gets the line for the agent's log when the call failed (a user's
    /// failed start is an administrator's business too).
    public static func run(_ order: WorkOrder, settings: AgentSettings, path: String?, log: (String) -> Void) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let socket = clientFD
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) & ~O_NONBLOCK)
        AgentAuthorization.speak(order.request)
        let caller = Caller.fromSystem(uid: order.uid, gid: order.gid)
        let outcome = perform(order.request.call, caller: caller, settings: settings, path: path,
                              events: SocketEvents(socket, answers: order.request.answers))
        _ = UnixSocket.sendAll(socket, outcome.line)
        if let e = outcome.error {
            let call = order.request.call
            log("uid=\(order.uid)(\(caller.userName ?? "?")) \(call.name)\(call.profile.map { " '\($0)'" } ?? ""): exit \(e.code.rawValue): \(e.message)")
        }
        return outcome.code
    }

    /// The call, authorized again here with the profile the agent resolved
    /// (the access, what the caller may see and the recheck, is made where
    /// it is used), then run.
    public static func perform(_ call: ServiceCall, caller: Caller, settings: AgentSettings, path: String?,
                               events: ServiceEvents) -> ServiceDispatch.Outcome {
        do {
            let grant = try AgentAuthorization.authorize(call, caller: caller, settings: settings)
            let service = LocalService(configDirectory: settings.configDirectory, runDirectory: settings.runDirectory, path: path,
                                       access: grant.access)
            return ServiceDispatch.perform(grant.call, on: service, events: events)
        } catch {
            return ServiceDispatch.failure((error as? AgentAuthorization.Denial)?.error ?? VPNError.from(error))
        }
    }

    /// Reads the work order to its end: the agent writes it whole, then
    /// closes its end. Only a process of this worker's own user (the agent:
    /// root) may have written it.
    public static func readOrder(_ fd: Int32 = orderFD) throws -> WorkOrder {
        let peer: PeerCredentials
        do { peer = try PeerCredentials.of(fd) } catch {
            throw VPNError.usage("__agent-run reads its request from fd \(fd), a socket from the agent: \(error)") // English: __agent-run speaks English only
        }
        guard peer.uid == geteuid() else {
            throw VPNError(.permissionDenied, "__agent-run: the request on fd \(fd) comes from uid \(peer.uid), not from the agent") // English: as above
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw VPNError.from(SystemError("read the request of", path: "fd \(fd)", errno: .current)) }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > WorkOrder.maximumSize { break }
        }
        close(fd)
        do { return try WorkOrder.parse(bytes) } catch {
            throw VPNError.usage("__agent-run: \(error)") // English: as above
        }
    }
}

/// A call's events, written to the client's socket as they happen.
final class SocketEvents: ServiceEvents {
    let fd: Int32
    /// The client said it answers credential questions.
    let answers: Bool
    private var failed = false

    init(_ fd: Int32, answers: Bool = false) {
        self.fd = fd
        self.answers = answers
    }

    /// The question goes to the client that asked for the start (this
    /// socket is its own), and its one line of answer comes back; nil when
    /// it declines, hangs up, says nothing in time or did not say it answers.
    func credentials(_ request: CredentialRequest) -> CredentialAnswers? {
        guard answers, emit(.credentials(request)) else { return nil }
        var line: [UInt8] = []
        defer { for i in line.indices { line[i] = 0 } }
        let deadline = monotonicMilliseconds() + Int64(request.timeoutSeconds) * 1000
        var byte: UInt8 = 0
        while line.count <= CredentialReply.maximumLineLength {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { return nil }
            guard pollReadable([fd], timeoutMs: Int32(min(left, 1000))).contains(0) else { continue }
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { failed = true; return nil }
            if byte == 0x0A { break }
            line.append(byte)
        }
        guard let reply = try? ServiceReply.decoder().decode(CredentialReply.self, from: Data(line)) else { return nil }
        return reply.answers
    }

    func emit(_ event: ServiceEvent) -> Bool {
        guard !failed, let line = try? ServiceReply.line(event: event) else { return false }
        if !UnixSocket.sendAll(fd, line) { failed = true }
        return !failed
    }

    /// The client hung up: nothing it asked for needs to go on.
    func isOpen() -> Bool {
        guard !failed else { return false }
        var p = pollfd(fd: fd, events: 0, revents: 0)
        if poll(&p, 1, 0) > 0, p.revents & Int16(POLLHUP | POLLERR) != 0 { return false }
        return true
    }

    var hangupDescriptor: Int32? { fd }
}

/// The reply an older vpnctl (protocol 1) can read: frames of stderr text
/// and an exit code, each a type byte, a 4-byte big-endian length and the bytes.
enum LegacyReply {
    static func refusal(_ e: VPNError) -> [UInt8] {
        let text = "vpnctl: \(e.message)\n" + (e.hint.map { "hint: \($0)\n" } ?? "")
        return frame(0x65, Array(text.utf8)) + frame(0x78, Array(String(e.code.rawValue).utf8))
    }

    static func frame(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [type, UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] + payload
    }
}
