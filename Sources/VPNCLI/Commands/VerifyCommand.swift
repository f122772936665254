#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

enum VerifyCommand {
    static let spec = CommandSpec(
        name: "verify", abstract: "Prove that traffic to a probe really goes through the tunnel.",
        discussion: """
        Checks (1) the interface exists and is up, (2) the kernel's route to the
        probe leaves through this tunnel's interface (RTM_GETROUTE), and (3) a TCP
        connect (HOST:PORT) or an HTTP GET (URL) to the probe succeeds.
        Exit 0: path proven. Exit 12: configured only (the route or the probe does
        not go through the tunnel, or the tunnel is not connected). Exit 4: the probe failed.
        """,
        options: [OptionSpec("probe", value: "url|host:port", help: "A resource reachable only through the tunnel."),
                  OptionSpec("timeout", value: "seconds", help: "Probe timeout (default 5).")],
        positionals: [PositionalSpec("profile", help: "The profile's name or UUID.")],
        run: run)

    struct Check: Encodable {
        let name: String
        let ok: Bool
        let detail: String
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let profile: String
        let probe: String
        let verdict: String
        let checks: [Check]
    }

    struct Probe {
        let host: String
        let port: Int
        let path: String?
    }

    static func parseProbe(_ text: String) throws -> Probe {
        var rest = Substring(text)
        var defaultPort: Int? = nil
        var isURL = false
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7); defaultPort = 80; isURL = true }
        else if rest.hasPrefix("https://") {
            throw VPNError.usage("https probes are not supported; use http:// or HOST:PORT (a TCP connect proves the path too)")
        }
        let hostPort = rest.prefix { $0 != "/" }
        let path = isURL ? String(rest.dropFirst(hostPort.count)) : nil
        if case .success(let e) = Endpoint.parse(String(hostPort)) {
            return Probe(host: e.host, port: e.port, path: path.map { $0.isEmpty ? "/" : $0 })
        }
        if let port = defaultPort, !hostPort.isEmpty, !hostPort.contains(":") {
            return Probe(host: String(hostPort), port: port, path: path.map { $0.isEmpty ? "/" : $0 })
        }
        throw VPNError.usage("invalid probe \(text.quotedForMessage): expected http://HOST[:PORT]/PATH or HOST:PORT", hint: "See 'vpnctl help verify'.")
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        guard let probeText = inv.args.value("probe") else {
            throw VPNError.usage("Missing required option '--probe <url|host:port>'", hint: "See 'vpnctl help verify'.")
        }
        let probe = try parseProbe(probeText)
        let timeout = try inv.timeoutSeconds(default: 5)
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let status = try inv.controller.derive(profile)
        var checks: [Check] = []
        var verdict = "path proven"
        var code = ExitCode.ok

        func finish() -> ExitCode {
            if inv.options.json {
                inv.output.emit(Result(profile: profile.name, probe: probeText, verdict: verdict, checks: checks))
            } else {
                for c in checks { inv.output.line("\(c.ok ? "[ok]  " : "[FAIL]") \(c.name): \(c.detail)") }
                inv.output.line("verdict: \(verdict)")
            }
            return code
        }

        // (1) the interface
        let netlink = try NetlinkRouteSocket()
        guard status.status == .connected || status.status == .reasserting, let name = status.interface,
              let link = try netlink.linkInfo(named: name), link.index == status.record?.ifindex else {
            checks.append(Check(name: "interface", ok: false, detail: "'\(profile.name)' is \(status.status.name); no tunnel interface"))
            verdict = "not connected"
            code = .notConnected
            return finish()
        }
        checks.append(Check(name: "interface", ok: link.isUp, detail: "\(name) (ifindex \(link.index)) is \(link.isUp ? "up" : "down")"))
        if !link.isUp { verdict = "configured only"; code = .notConnected; return finish() }

        // (2) the kernel's route
        guard let address = IPAddress(probe.host) ?? Resolver.firstAddress(probe.host) else {
            checks.append(Check(name: "route", ok: false, detail: "cannot resolve \(probe.host)"))
            verdict = "probe failed"
            code = .connectionFailed
            return finish()
        }
        let route = try RouteLookup.route(to: address.bytes)
        let via = route.flatMap { try? netlink.linkInfo(index: $0.outputInterfaceIndex)?.name } ?? "nowhere"
        let routeOK = route?.outputInterfaceIndex == link.index
        checks.append(Check(name: "route", ok: routeOK, detail: "\(address) leaves through \(via)\(routeOK ? "" : ", not \(name)")"))

        // (3) the probe itself
        let result = TCPProbe.run(address: address, port: probe.port, httpPath: probe.path, host: probe.host, timeoutMs: Int32(timeout * 1000))
        checks.append(Check(name: "probe", ok: result.ok, detail: result.detail))
        if !routeOK {
            verdict = "configured only"
            code = .notConnected
        } else if !result.ok {
            verdict = "probe failed"
            code = .connectionFailed
        }
        return finish()
    }
}

/// A bounded TCP connect, optionally followed by an HTTP/1.0 GET.
enum TCPProbe {
    static func run(address: IPAddress, port: Int, httpPath: String?, host: String, timeoutMs: Int32) -> (ok: Bool, detail: String) {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        if fd < 0 { return (false, "socket: \(Errno.current)") }
        defer { close(fd) }
        let started = monotonicMilliseconds()
        var r: Int32
        if address.isIPv6 {
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin6_addr) { raw in for (i, b) in address.bytes.enumerated() { raw[i] = b } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        } else {
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &sa.sin_addr) { raw in for (i, b) in address.bytes.enumerated() { raw[i] = b } }
            r = withUnsafePointer(to: &sa) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        let target = address.isIPv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
        if r < 0 && errno != EINPROGRESS { return (false, "connect to \(target): \(Errno.current)") }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        if poll(&pfd, 1, timeoutMs) <= 0 { return (false, "connect to \(target): timed out after \(timeoutMs) ms") }
        var soError: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
        if soError != 0 { return (false, "connect to \(target): \(Errno(soError))") }
        let connectMs = monotonicMilliseconds() - started
        guard let path = httpPath else { return (true, "TCP connect to \(target) in \(connectMs) ms") }
        let request = "GET \(path) HTTP/1.0\r\nHost: \(host)\r\nUser-Agent: vpnctl-verify\r\nConnection: close\r\n\r\n"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        var reply: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        let deadline = started + Int64(timeoutMs)
        while reply.count < 256 && !reply.contains(0x0A) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = deadline - monotonicMilliseconds()
            if left <= 0 || poll(&p, 1, Int32(left)) <= 0 { return (false, "GET http://\(host):\(port)\(path): no answer within \(timeoutMs) ms") }
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            reply += buf[0..<n]
        }
        let statusLine = String(decoding: reply.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let code = Int(parts[1]) else {
            return (false, "GET http://\(host):\(port)\(path): not an HTTP answer")
        }
        let ok = (200..<400).contains(code)
        return (ok, "GET http://\(host):\(port)\(path): HTTP \(code) in \(monotonicMilliseconds() - started) ms")
    }
}
