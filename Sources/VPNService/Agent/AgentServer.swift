#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl agent`: one loop over the listening socket, the clients whose
/// requests are still arriving, signals and workers. Nothing in it blocks:
/// a client has `requestTimeoutMs` to send one request of at most
/// `ServiceRequest.maximumSize` bytes; quick reads are answered in the loop,
/// anything that waits runs in a worker process that writes to the
/// client's socket itself. On-demand's watches and timers run on the same
/// loop (`OnDemandRunner`).
public final class AgentServer {
    public struct Limits {
        public var requestTimeoutMs: Int64 = 2000
        public var maximumClients = 512
        /// Connections one uid (root's aside) may have being read at once;
        /// when the table is full, a newcomer takes the place of the oldest
        /// connection of the uid holding the most, if that is more than its own.
        public var maximumClientsPerUser = 256
        /// Requests one uid (root's aside) may make a second, after a burst
        /// of `maximumClientsPerUser`.
        public var requestsPerSecondPerUser = 100
        /// Workers (root processes: starts, watches) one user may have at once.
        public var maximumWorkersPerUser = 32
        /// Connections accepted in one turn of the loop, so that a flood of
        /// connections cannot keep it from the requests already read.
        var acceptsPerTurn = 64
        public init() {}
    }

    final class Client {
        let fd: Int32
        let credentials: PeerCredentials
        /// The order of acceptance: the oldest is the first evicted.
        let serial: Int
        var buffer: [UInt8] = []
        var watch: EventLoop.Token?
        var timer: EventLoop.Token?
        init(fd: Int32, credentials: PeerCredentials, serial: Int) {
            self.fd = fd
            self.credentials = credentials
            self.serial = serial
        }
    }

    struct Worker {
        let caller: Caller
        let request: ServiceRequest
        let summary: String
    }

    let settings: AgentSettings
    let limits: Limits
    let listener: Int32
    let loop = EventLoop(idleMs: 60_000)
    let log: (String) -> Void
    /// The log of requests: each kind of line (a uid and what became of its
    /// request) rate-limited, the rest summarised.
    let requestLog: LogRateLimiter
    var flushTimer: EventLoop.Token?
    let path: String?
    /// The journal's stream (JOURNAL_STREAM) when the agent's stderr is it:
    /// workers write to the same stderr, with the same priorities.
    public var journalStream: String?
    let executable: String
    var clients: [Int32: Client] = [:]
    var clientsByUID: [uid_t: Int] = [:]
    var nextSerial = 0
    var requestBuckets: [uid_t: TokenBucket] = [:]
    var workers: [pid_t: Worker] = [:]
    lazy var onDemand = OnDemandRunner(settings: settings, loop: loop, path: path, log: log)
    /// What a connection refused before its request is read gets: the same
    /// bytes every time (English: no request, no language).
    lazy var busyReply: [UInt8] = ServiceReply.line(error: VPNError(.failure, "the vpnctl agent is busy", hint: "try again")) // English: no request read yet, no language known

    public init(settings: AgentSettings, limits: Limits, listener: Int32, path: String?, log: @escaping (String) -> Void) {
        self.settings = settings
        self.limits = limits
        self.listener = listener
        self.path = path
        self.log = log
        let clock = loop.clock
        requestLog = LogRateLimiter(nowMs: { clock.nowMs }, write: log)
        executable = Processes.currentExecutable()
    }

    /// Logs a line of `kind`, rate-limited; a summary of what was held back follows.
    func note(_ kind: String, _ line: String) {
        if !requestLog.log(kind, line) && flushTimer == nil { scheduleFlush() }
    }

    func scheduleFlush() {
        flushTimer = loop.after(LogRateLimiter.defaultSummaryMs) { [unowned self] in
            flushTimer = nil
            requestLog.flush()
            requestBuckets = requestBuckets.filter { var b = $0.value; return !b.isFull(nowMs: loop.nowMs) }
            if requestLog.isHolding { scheduleFlush() }
        }
    }

    /// Serves until SIGTERM or SIGINT.
    public func run(signals: SignalQueue) {
        loop.watch(listener) { [unowned self] in acceptClients() }
        loop.watch(signals.fd) { [unowned self] in
            for sig in signals.drain() {
                if sig == SIGCHLD { reapWorkers() } else {
                    log("stopping on signal \(sig); \(workers.count) request\(workers.count == 1 ? "" : "s") still run in workers, tunnels are untouched")
                    loop.stop()
                }
            }
        }
        onDemand.begin()
        loop.run()
        requestLog.flush(all: true)
        onDemand.end()
    }

    func acceptClients() {
        for _ in 0..<limits.acceptsPerTurn {
            let fd: Int32?
            do { fd = try UnixSocket.accept(listener) } catch {
                note("accept", Journal.tagged(.error, "accept failed: \(error)"))
                return
            }
            guard let fd else { return }
            let credentials: PeerCredentials
            do { credentials = try PeerCredentials.of(fd) } catch {
                note("peercred", Journal.tagged(.warning, "a connection without credentials, closed: \(error)"))
                close(fd)
                continue
            }
            guard admit(credentials) else {
                reply(fd, busyReply)
                continue
            }
            add(fd, credentials)
        }
    }

    /// Reads a request from `fd` from now on, for at most `requestTimeoutMs`.
    func add(_ fd: Int32, _ credentials: PeerCredentials) {
        let client = Client(fd: fd, credentials: credentials, serial: nextSerial)
        nextSerial += 1
        clients[fd] = client
        clientsByUID[credentials.uid, default: 0] += 1
        client.watch = loop.watch(fd) { [unowned self] in readRequest(client) }
        client.timer = loop.after(limits.requestTimeoutMs) { [unowned self] in
            // A busy turn may reach this timer before the client's data:
            // what has arrived counts.
            client.timer = nil
            readRequest(client)
            if clients[client.fd] === client {
                refuse(client, ServiceProtocolError("no complete request within \(limits.requestTimeoutMs) ms"))
            }
        }
    }

    /// Whether a new connection of `c.uid` is read: within its share, and
    /// with room in the table, made by evicting the oldest connection of
    /// the uid holding the most when that is more than this uid would.
    /// Root is never held to a share and never evicted.
    func admit(_ c: PeerCredentials) -> Bool {
        let mine = clientsByUID[c.uid] ?? 0
        if c.uid != 0 && mine >= limits.maximumClientsPerUser {
            note("uid=\(c.uid) busy", Journal.tagged(.warning, "refused uid=\(c.uid) pid=\(c.pid): \(mine) requests of this uid are being read already"))
            return false
        }
        guard clients.count >= limits.maximumClients else { return true }
        let heaviest = clientsByUID.filter { $0.key != 0 && $0.key != c.uid }.max { $0.value < $1.value }
        guard let (uid, count) = heaviest, c.uid == 0 || count > mine + 1,
              let victim = clients.values.filter({ $0.credentials.uid == uid }).min(by: { $0.serial < $1.serial }) else {
            note("uid=\(c.uid) busy", Journal.tagged(.warning, "refused uid=\(c.uid) pid=\(c.pid): \(clients.count) requests are being read already"))
            return false
        }
        forget(victim)
        note("uid=\(uid) evicted", Journal.tagged(.warning, "evicted uid=\(uid) pid=\(victim.credentials.pid) for uid=\(c.uid): the table is full and uid \(uid) holds \(count) of it"))
        reply(victim.fd, busyReply)
        return true
    }

    func forget(_ client: Client) {
        loop.cancel(client.watch)
        loop.cancel(client.timer)
        guard clients[client.fd] === client else { return }
        clients[client.fd] = nil
        let uid = client.credentials.uid
        if let n = clientsByUID[uid], n > 1 { clientsByUID[uid] = n - 1 } else { clientsByUID[uid] = nil }
    }

    func readRequest(_ client: Client) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n: Int
            switch UnixSocket.receive(client.fd, into: &chunk) {
            case .bytes(let count): n = count
            case .empty: return
            // Gone (or broken) before a whole request: nothing to answer.
            case .closed, .failed: forget(client); close(client.fd); return
            }
            client.buffer += chunk[0..<n]
            if let end = client.buffer.firstIndex(of: 0x0A) {
                forget(client)
                handle(client, Array(client.buffer[..<end]))
                return
            }
            if client.buffer.count > ServiceRequest.maximumSize {
                refuse(client, ServiceProtocolError("the request is larger than \(ServiceRequest.maximumSize) bytes"))
                return
            }
        }
    }

    /// A request that cannot be read: an error, and the connection closed.
    /// A client of protocol 1 (an older vpnctl) is told in its own frames.
    func refuse(_ client: Client, _ problem: ServiceProtocolError) {
        forget(client)
        let c = client.credentials
        note("uid=\(c.uid) malformed", Journal.tagged(.warning, "uid=\(c.uid) pid=\(c.pid) malformed: \(problem)"))
        let error = VPNError(.usage, "the vpnctl agent refused the request: \(problem)", // English: an undecoded request has no language
                             hint: problem.clientVersion == nil ? nil : "use the vpnctl of the agent's version, or restart the agent after an upgrade: systemctl restart vpnctl-agent.socket vpnctl-agent.service") // English: as above
        reply(client.fd, problem.clientVersion == 1 ? LegacyReply.refusal(error) : ServiceReply.line(error: error))
    }

    func handle(_ client: Client, _ line: [UInt8]) {
        let c = client.credentials
        let request: ServiceRequest
        do { request = try ServiceRequest.parse(line) } catch {
            refuse(client, error as? ServiceProtocolError ?? ServiceProtocolError("\(error)"))
            return
        }
        // Answered in the client's language; the next request must not inherit it.
        AgentAuthorization.speak(request)
        defer { AgentAuthorization.speak(nil) }
        let kind = "uid=\(c.uid) \(request.call.name)"
        if c.uid != 0 && !takeToken(c.uid) {
            note("uid=\(c.uid) rate", Journal.tagged(.warning, "uid=\(c.uid) pid=\(c.pid) \(request.call.name): refused: over \(limits.requestsPerSecondPerUser) requests a second"))
            reply(client.fd, ServiceReply.line(error: VPNError(.failure, L("too many requests from you: at most \(limits.requestsPerSecondPerUser) a second"),
                                                                hint: L("try again in a moment"))))
            return
        }
        let caller = Caller.fromSystem(uid: c.uid, gid: c.gid)
        var summary = "uid=\(c.uid)(\(caller.userName ?? "?")) pid=\(c.pid) \(request.call.name)"
        if case .can(let a, _) = request.call { summary += " \(a.rawValue)" }
        if let p = request.call.profile { summary += " '\(p.escapingControls(keepLineBreaks: false))'" }
        let grant: AgentAuthorization.Grant
        do {
            grant = try AgentAuthorization.authorize(request.call, caller: caller, settings: settings)
        } catch {
            let e = (error as? AgentAuthorization.Denial)?.error ?? VPNError.from(error)
            if let denial = error as? AgentAuthorization.Denial {
                note("\(kind) denied", Journal.tagged(.notice, "\(summary): denied (exit \(e.code.rawValue)): \(denial.decision.englishReason)"))
            } else {
                note("\(kind) refused", Journal.tagged(.warning, "\(summary): \(e.code == .permissionDenied ? "denied" : "refused") (exit \(e.code.rawValue)): \(e.message)"))
            }
            reply(client.fd, ServiceReply.line(error: e))
            return
        }
        if let d = grant.decision { summary += " (\(d.englishReason))" }
        if grant.call.runsInline {
            let service = LocalService(configDirectory: settings.configDirectory, runDirectory: settings.runDirectory, path: path, access: grant.access)
            let outcome = ServiceDispatch.perform(grant.call, on: service, events: NoEvents())
            note(kind, Journal.tagged(outcome.code == 0 ? .info : .warning, "\(summary): exit \(outcome.code)"))
            reply(client.fd, outcome.line)
            return
        }
        if workers.values.filter({ $0.caller.uid == c.uid }).count >= limits.maximumWorkersPerUser && !caller.isRoot {
            note("\(kind) workers", Journal.tagged(.warning, "\(summary): refused: \(limits.maximumWorkersPerUser) workers of this uid run"))
            reply(client.fd, ServiceReply.line(error: VPNError(.failure, L("\(limits.maximumWorkersPerUser) requests of yours are running already"),
                                                                hint: L("wait for one to end (a status --watch ends when you end it)"))))
            return
        }
        let authorized = ServiceRequest(grant.call, language: request.language, answers: request.answers)
        do {
            let pid = try spawnWorker(WorkOrder(uid: c.uid, gid: c.gid, request: authorized), client: client.fd)
            close(client.fd)
            workers[pid] = Worker(caller: caller, request: authorized, summary: summary)
            note("\(kind) accepted", "\(summary): accepted, worker \(pid)")
        } catch {
            note("\(kind) failed", Journal.tagged(.error, "\(summary): failed: \(error)"))
            reply(client.fd, ServiceReply.line(error: VPNError(.failure, L("the vpnctl agent cannot run the request: \(error)"))))
        }
    }

    /// One request of `uid`'s rate: false when it has none left this second.
    func takeToken(_ uid: uid_t) -> Bool {
        var bucket = requestBuckets[uid]
            ?? TokenBucket(capacity: limits.maximumClientsPerUser, perSecond: Double(limits.requestsPerSecondPerUser), nowMs: loop.nowMs)
        let allowed = bucket.take(nowMs: loop.nowMs)
        requestBuckets[uid] = bucket
        return allowed
    }

    /// A worker for `order`, with the client's socket as its fd 3 and the
    /// order on fd 4 (a socket pair whose other end is written here and
    /// closed): its command line names no request, profile or caller, so
    /// `ps` shows other users nothing of it.
    func spawnWorker(_ order: WorkOrder, client: Int32) throws -> pid_t {
        var pair: [Int32] = [-1, -1]
        if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) != 0 {
            throw SystemError("make a socket pair for", path: "a worker", errno: .current)
        }
        defer { close(pair[1]) }
        // The order (under 10 KiB) fits the pair's buffer: written whole now,
        // read by the worker when it runs.
        guard UnixSocket.sendAll(pair[0], Array(order.serialized.utf8), flags: Int32(MSG_DONTWAIT)) else {
            let e = SystemError("send the request to", path: "a worker", errno: .current)
            close(pair[0])
            throw e
        }
        close(pair[0])
        return try Processes.spawn(executable, [executable, "__agent-run", "--config-dir", settings.configDirectory,
                                                "--run-dir", settings.runDirectory, "--admin-group", settings.adminGroup],
                                   environment: ["PATH": path ?? "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"]
                                       .merging(journalStream.map { ["JOURNAL_STREAM": $0] } ?? [:]) { a, _ in a },
                                   passFDs: [client, pair[1]], outputFD: 2, newSession: false)
    }

    /// Sends a whole reply without waiting: a client that does not read it
    /// loses it, nobody else waits for it.
    func reply(_ fd: Int32, _ all: [UInt8]) {
        // A large reply (status of a thousand profiles) must fit the socket's
        // buffer whole, so that it is queued now and the loop never waits for
        // the reader. Root may raise the buffer past wmem_max.
        if all.count > 64 << 10 {
            UnixSocket.setSendBuffer(fd, bytes: min(all.count * 2 + (64 << 10), 64 << 20), force: true)
        }
        _ = UnixSocket.sendAll(fd, all, flags: Int32(MSG_DONTWAIT))
        close(fd)
    }

    func reapWorkers() {
        for (pid, status) in ChildReaper.reapAll() {
            guard let w = workers.removeValue(forKey: pid) else { continue }
            note("uid=\(w.caller.uid) \(w.request.call.name) ended",
                 Journal.tagged(status.code == 0 ? .info : .warning, "\(w.summary): worker \(pid) \(status.description), exit \(status.code)"))
        }
    }
}
