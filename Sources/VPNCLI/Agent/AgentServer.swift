#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl agent`: one loop over the listening socket, the clients whose
/// requests are still arriving, signals and workers. Nothing in it blocks:
/// a client has `requestTimeoutMs` to send one request of at most
/// `AgentRequest.maximumSize` bytes; quick reads are answered in the loop,
/// anything that waits runs in a worker process that writes to the
/// client's socket itself. On-demand's watches and timers run on the same
/// loop (`OnDemandRunner`).
final class AgentServer {
    struct Limits {
        var requestTimeoutMs: Int64 = 2000
        var maximumClients = 512
        /// Workers (root processes: starts, watches) one user may have at once.
        var maximumWorkersPerUser = 32
    }

    final class Client {
        let fd: Int32
        let credentials: PeerCredentials
        var buffer: [UInt8] = []
        var watch: EventLoop.Token?
        var timer: EventLoop.Token?
        init(fd: Int32, credentials: PeerCredentials) {
            self.fd = fd
            self.credentials = credentials
        }
    }

    struct Worker {
        let caller: Caller
        let request: AgentRequest
        let summary: String
    }

    let settings: AgentSettings
    let limits: Limits
    let listener: Int32
    let loop = EventLoop(idleMs: 60_000)
    let log: (String) -> Void
    let path: String?
    let executable: String
    var clients: [Int32: Client] = [:]
    var workers: [pid_t: Worker] = [:]
    lazy var onDemand = OnDemandRunner(settings: settings, loop: loop, path: path, log: log)

    init(settings: AgentSettings, limits: Limits, listener: Int32, path: String?, log: @escaping (String) -> Void) {
        self.settings = settings
        self.limits = limits
        self.listener = listener
        self.path = path
        self.log = log
        executable = Processes.currentExecutable()
    }

    /// Serves until SIGTERM or SIGINT.
    func run(signals: SignalQueue) {
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
        onDemand.end()
    }

    func acceptClients() {
        while true {
            let fd: Int32?
            do { fd = try UnixSocket.accept(listener) } catch {
                log("accept failed: \(error)")
                return
            }
            guard let fd else { return }
            guard let credentials = try? PeerCredentials.of(fd) else { close(fd); continue }
            if clients.count >= limits.maximumClients {
                log("refused uid=\(credentials.uid) pid=\(credentials.pid): \(clients.count) requests are being read already")
                let busy = ReplyBuffer()
                let code = AgentExecution.render(VPNError(.failure, "the vpnctl agent is busy", hint: "try again"), nil, // English: no request read yet, no language known
                                                 stdout: busy.stdout, stderr: busy.stderr)
                reply(fd, code, frames: busy.bytes)
                continue
            }
            let client = Client(fd: fd, credentials: credentials)
            clients[fd] = client
            client.watch = loop.watch(fd) { [unowned self] in readRequest(client) }
            client.timer = loop.after(limits.requestTimeoutMs) { [unowned self] in
                // A busy turn may reach this timer before the client's data:
                // what has arrived counts.
                client.timer = nil
                readRequest(client)
                if clients[client.fd] === client {
                    refuse(client, "no complete request within \(limits.requestTimeoutMs) ms")
                }
            }
        }
    }

    func forget(_ client: Client) {
        loop.cancel(client.watch)
        loop.cancel(client.timer)
        clients[client.fd] = nil
    }

    func readRequest(_ client: Client) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                forget(client); close(client.fd); return
            }
            if n == 0 {
                // Gone before a whole request: nothing to answer.
                forget(client); close(client.fd); return
            }
            client.buffer += chunk[0..<n]
            if let end = client.buffer.firstIndex(of: 0x0A) {
                forget(client)
                handle(client, Array(client.buffer[..<end]))
                return
            }
            if client.buffer.count > AgentRequest.maximumSize {
                refuse(client, "the request is larger than \(AgentRequest.maximumSize) bytes")
                return
            }
        }
    }

    /// A request that cannot be read: an error, and the connection closed.
    func refuse(_ client: Client, _ reason: String) {
        forget(client)
        let c = client.credentials
        log("uid=\(c.uid) pid=\(c.pid) malformed: \(reason)")
        let reply = ReplyBuffer()
        let code = AgentExecution.render(VPNError(.usage, "the vpnctl agent refused the request: \(reason)"), nil, // English: an undecoded request has no language
                                         stdout: reply.stdout, stderr: reply.stderr)
        self.reply(client.fd, code, frames: reply.bytes)
    }

    func handle(_ client: Client, _ line: [UInt8]) {
        let c = client.credentials
        let request: AgentRequest
        do { request = try AgentRequest.parse(line) } catch {
            refuse(client, "\(error)")
            return
        }
        // Answered in the client's language (English for --json); the next
        // request must not inherit it.
        AgentExecution.speak(request)
        defer { AgentExecution.speak(nil) }
        let caller = Caller.fromSystem(uid: c.uid, gid: c.gid)
        var summary = "uid=\(c.uid)(\(caller.userName ?? "?")) pid=\(c.pid) \(request.verb.rawValue)"
        if let a = request.canAction { summary += " \(a.rawValue)" }
        if let p = request.profile { summary += " '\(p.escapingControls(keepLineBreaks: false))'" }
        let buffer = ReplyBuffer()
        let authorized: AgentRequest
        let decision: AccessDecision?
        do {
            (authorized, decision) = try AgentExecution.authorize(request, caller: caller, settings: settings)
        } catch {
            let code = AgentExecution.render(error, request, stdout: buffer.stdout, stderr: buffer.stderr)
            if let denial = error as? AgentExecution.Denial {
                log("\(summary): denied (exit \(code)): \(denial.decision.englishReason)")
            } else {
                log("\(summary): \(VPNError.from(error).code == .permissionDenied ? "denied" : "refused") (exit \(code)): \(VPNError.from(error).message)")
            }
            reply(client.fd, code, frames: buffer.bytes)
            return
        }
        if let d = decision { summary += " (\(d.englishReason))" }
        if AgentExecution.runsInline(authorized) {
            let code = AgentExecution.run(authorized, caller: caller, settings: settings, path: path, stdout: buffer.stdout, stderr: buffer.stderr)
            log("\(summary): exit \(code)")
            reply(client.fd, code, frames: buffer.bytes)
            return
        }
        if workers.values.filter({ $0.caller.uid == c.uid }).count >= limits.maximumWorkersPerUser && !caller.isRoot {
            let code = AgentExecution.render(VPNError(.failure, L("\(limits.maximumWorkersPerUser) requests of yours are running already"),
                                                      hint: L("wait for one to end (a status --watch ends when you end it)")),
                                             request, stdout: buffer.stdout, stderr: buffer.stderr)
            log("\(summary): refused: \(limits.maximumWorkersPerUser) workers of this uid run")
            reply(client.fd, code, frames: buffer.bytes)
            return
        }
        do {
            let pid = try spawnWorker(AgentWorkOrder(uid: c.uid, gid: c.gid, request: authorized), client: client.fd)
            close(client.fd)
            workers[pid] = Worker(caller: caller, request: authorized, summary: summary)
            log("\(summary): accepted, worker \(pid)")
        } catch {
            let code = AgentExecution.render(VPNError(.failure, L("the vpnctl agent cannot run the request: \(error)")), request,
                                             stdout: buffer.stdout, stderr: buffer.stderr)
            log("\(summary): failed: \(error)")
            reply(client.fd, code, frames: buffer.bytes)
        }
    }

    /// A worker for `order`, with the client's socket as its fd 3 and the
    /// order on fd 4 (a socket pair whose other end is written here and
    /// closed): its command line names no request, profile or caller, so
    /// `ps` shows other users nothing of it.
    func spawnWorker(_ order: AgentWorkOrder, client: Int32) throws -> pid_t {
        var pair: [Int32] = [-1, -1]
        if socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) != 0 {
            throw SystemError("make a socket pair for", path: "a worker", errno: .current)
        }
        defer { close(pair[1]) }
        // The order (under 10 KiB) fits the pair's buffer: written whole now,
        // read by the worker when it runs.
        let bytes = Array(order.serialized.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(pair[0], $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let e = SystemError("send the request to", path: "a worker", errno: .current)
                close(pair[0])
                throw e
            }
            offset += n
        }
        close(pair[0])
        return try Processes.spawn(executable, [executable, "__agent-run", "--config-dir", settings.configDirectory,
                                                "--run-dir", settings.runDirectory, "--admin-group", settings.adminGroup],
                                   environment: ["PATH": path ?? "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"],
                                   passFDs: [client, pair[1]], outputFD: 2, newSession: false)
    }

    /// Sends a whole reply without waiting: a client that does not read it
    /// loses it, nobody else waits for it.
    func reply(_ fd: Int32, _ code: Int32, frames: [UInt8]) {
        let all = frames + AgentFrame.exit(code).encoded
        // A large reply (status of a thousand profiles) must fit the socket's
        // buffer whole, so that it is queued now and the loop never waits for
        // the reader. Root may raise the buffer past wmem_max.
        if all.count > 64 << 10 {
            var size = Int32(min(all.count * 2 + (64 << 10), 64 << 20))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var offset = 0
        while offset < all.count {
            let n = all.withUnsafeBytes { send(fd, $0.baseAddress! + offset, all.count - offset, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            offset += n
        }
        close(fd)
    }

    func reapWorkers() {
        for (pid, status) in ChildReaper.reapAll() {
            guard let w = workers.removeValue(forKey: pid) else { continue }
            log("\(w.summary): worker \(pid) \(status.description), exit \(status.code)")
        }
    }
}

/// A reply collected in memory: stdout and stderr frames in the order
/// they were written.
final class ReplyBuffer {
    var bytes: [UInt8] = []
    lazy var stdout = FrameSink(stream: { AgentFrame.stdout(Array($0.utf8)) }, socket: nil) { [unowned self] in bytes += $0; return true }
    lazy var stderr = FrameSink(stream: { AgentFrame.stderr(Array($0.utf8)) }, socket: nil) { [unowned self] in bytes += $0; return true }
}
