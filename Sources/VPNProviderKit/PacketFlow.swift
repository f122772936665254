#if canImport(Glibc)
import Glibc
#endif

/// A single-threaded poll(2) loop: fds and timers, handlers run in turn.
public final class ProviderLoop {
    public struct Token: Hashable, Sendable { let value: Int }
    var watches: [(Token, Int32, () -> Void)] = []
    var timers: [(Token, Int64, () -> Void)] = []
    var next = 0
    var stopped = false

    public init() {}

    /// Calls `handler` whenever `fd` is readable, until cancelled.
    @discardableResult
    public func watch(_ fd: Int32, _ handler: @escaping () -> Void) -> Token {
        next += 1
        let t = Token(value: next)
        watches.append((t, fd, handler))
        return t
    }

    /// Calls `handler` once, after `ms` milliseconds.
    @discardableResult
    public func after(_ ms: Int64, _ handler: @escaping () -> Void) -> Token {
        next += 1
        let t = Token(value: next)
        timers.append((t, Self.nowMs + ms, handler))
        return t
    }

    public func cancel(_ token: Token?) {
        guard let token else { return }
        watches.removeAll { $0.0 == token }
        timers.removeAll { $0.0 == token }
    }

    public func stop() { stopped = true }

    static var nowMs: Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    public func run() {
        while !stopped {
            let now = Self.nowMs
            let due = timers.filter { $0.1 <= now }
            if !due.isEmpty {
                timers.removeAll { t in due.contains { $0.0 == t.0 } }
                for (_, _, h) in due { h() }
                continue
            }
            let wait = timers.map { $0.1 - now }.min().map { Int32(clamping: max(0, $0)) } ?? 1000
            let current = watches
            var fds = current.map { pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) }
            let n = poll(&fds, nfds_t(fds.count), wait)
            if n <= 0 { continue }
            for (i, p) in fds.enumerated() where p.revents != 0 {
                let token = current[i].0
                guard watches.contains(where: { $0.0 == token }) else { continue }
                current[i].2()
            }
        }
    }
}

/// NEPacketTunnelFlow over the utun (fd 3). The tun carries packet
/// information: 2 bytes of flags and the 2-byte ethertype before each packet;
/// this flow takes it off and puts it on, and reports protocols as NE does
/// (AF_INET, AF_INET6).
public final class PacketTunnelFlow {
    public let fd: Int32
    let loop: ProviderLoop
    var reading: ProviderLoop.Token?
    /// The most packets one `readPackets` hands over.
    public var batch = 64

    init(fd: Int32, loop: ProviderLoop) {
        self.fd = fd
        self.loop = loop
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Calls `completionHandler` once with the packets waiting (at least
    /// one); call it again from the handler to keep reading.
    public func readPackets(completionHandler: @escaping ([[UInt8]], [Int32]) -> Void) {
        loop.cancel(reading)
        reading = loop.watch(fd) { [self] in
            var packets: [[UInt8]] = []
            var protocols: [Int32] = []
            var buf = [UInt8](repeating: 0, count: 65536 + 4)
            while packets.count < batch {
                let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 4 { break }
                let ethertype = UInt16(buf[2]) << 8 | UInt16(buf[3])
                packets.append(Array(buf[4..<n]))
                protocols.append(ethertype == 0x86DD ? AF_INET6 : AF_INET)
            }
            guard !packets.isEmpty else { return }
            loop.cancel(reading)
            reading = nil
            completionHandler(packets, protocols)
        }
    }

    /// Writes packets into the tunnel; false when one could not be written.
    @discardableResult
    public func writePackets(_ packets: [[UInt8]], withProtocols protocols: [Int32]) -> Bool {
        var ok = true
        for (i, p) in packets.enumerated() {
            let v6 = (i < protocols.count ? protocols[i] : AF_INET) == AF_INET6
            let frame: [UInt8] = [0, 0, v6 ? 0x86 : 0x08, v6 ? 0xDD : 0x00] + p
            let n = frame.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n != frame.count { ok = false }
        }
        return ok
    }
}
