#if canImport(Glibc)
import Glibc
#endif
import Testing
import VPNSystem

/// IPSocket on 127.0.0.1 only: nothing leaves the loopback.
@Suite struct SocketTests {
    static let loopback: [UInt8] = [127, 0, 0, 1]

    func soon(_ ms: Int64 = 2000) -> Int64 { monotonicMilliseconds() + ms }

    /// Two UDP sockets, each bound to a port of its own and connected to the
    /// other's: what one sends the other echoes back.
    @Test func udpEchoOnLoopback() throws {
        let server = try IPSocket(ipv6: false, .udp)
        try server.bind(to: Self.loopback, port: 0)
        let client = try IPSocket(ipv6: false, .udp)
        try client.bind(to: Self.loopback, port: 0)
        let serverPort = try server.localPort(), clientPort = try client.localPort()
        #expect(serverPort != 0 && clientPort != 0 && serverPort != clientPort)
        try client.connect(to: Self.loopback, port: serverPort, deadlineMs: soon())
        try server.connect(to: Self.loopback, port: clientPort, deadlineMs: soon())

        try client.send(Array("ping 1".utf8), deadlineMs: soon())
        let request = try server.receive(limit: 1500, deadlineMs: soon())
        #expect(request == Array("ping 1".utf8))
        try server.send(request + Array(" back".utf8), deadlineMs: soon())
        #expect(try client.receive(limit: 1500, deadlineMs: soon()) == Array("ping 1 back".utf8))
    }

    /// Nothing to read: receive waits until the deadline, then says so.
    @Test func receiveTimesOut() throws {
        let socket = try IPSocket(ipv6: false, .udp)
        try socket.bind(to: Self.loopback, port: 0)
        let started = monotonicMilliseconds()
        #expect(throws: SocketError.timedOut) { try socket.receive(limit: 16, deadlineMs: started + 150) }
        #expect(monotonicMilliseconds() - started >= 150)
    }

    /// A port nothing listens on refuses at once: the errno, not a timeout.
    @Test func tcpConnectToClosedPortIsRefused() throws {
        let unused = try IPSocket(ipv6: false, .tcp)
        try unused.bind(to: Self.loopback, port: 0)
        let port = try unused.localPort()  // bound, never listening
        let socket = try IPSocket(ipv6: false, .tcp)
        #expect(throws: SocketError.connect(Errno(ECONNREFUSED))) {
            try socket.connect(to: Self.loopback, port: port, deadlineMs: soon())
        }
    }

    /// A listener whose backlog is full drops the next SYN: the connect
    /// neither succeeds nor fails, and ends at its deadline.
    @Test func tcpConnectTimesOutAtTheDeadline() throws {
        let listener = try IPSocket(ipv6: false, .tcp)
        try listener.bind(to: Self.loopback, port: 0)
        try listener.listen(backlog: 0)
        let port = try listener.localPort()
        var queued: [IPSocket] = []
        var timedOut = false
        // Backlog 0 still takes a connection or two; the ones after wait.
        for _ in 0..<8 where !timedOut {
            let socket = try IPSocket(ipv6: false, .tcp)
            let started = monotonicMilliseconds()
            do {
                try socket.connect(to: Self.loopback, port: port, deadlineMs: started + 300)
                queued.append(socket)
            } catch SocketError.timedOut {
                #expect(monotonicMilliseconds() - started >= 300)
                timedOut = true
            }
        }
        #expect(timedOut)
        #expect(!queued.isEmpty)
    }

    /// A TCP connection: send all of it, read it at the other end, then the
    /// end of stream once the sender is gone.
    @Test func tcpSendAndEndOfStream() throws {
        let listener = try IPSocket(ipv6: false, .tcp)
        try listener.bind(to: Self.loopback, port: 0)
        try listener.listen(backlog: 4)
        var client: IPSocket? = try IPSocket(ipv6: false, .tcp)
        try client?.connect(to: Self.loopback, port: try listener.localPort(), deadlineMs: soon())
        let accepted = try #require(try UnixSocket.accept(listener.fd))
        defer { close(accepted) }
        let payload = [UInt8](repeating: 0x61, count: 100_000)
        try client?.send(payload, deadlineMs: soon())
        client = nil  // deinit closes it
        var got: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            var p = pollfd(fd: accepted, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, 2000)
            let n = buffer.withUnsafeMutableBytes { read(accepted, $0.baseAddress, $0.count) }
            if n < 0 && errno == EAGAIN { continue }
            if n <= 0 { break }
            got += buffer[0..<n]
        }
        #expect(got == payload)
    }

    @Test func errorsDescribeTheirErrno() {
        #expect(SocketError.connect(Errno(ECONNREFUSED)).description == "connection refused")
        #expect(SocketError.timedOut.description == "timed out")
    }

    @Test func nameLookupOfNumericHost() {
        #expect(NameLookup.firstAddress("127.0.0.1") == "127.0.0.1")
        #expect(NameLookup.firstAddress("::1") == "::1")
        #expect(NameLookup.firstAddress("no-such-host.invalid") == nil)
    }
}
