// AN EXAMPLE, NOT FOR USE: packets go over plain UDP, without encryption or
// integrity. It exists to show VPNProviderKit and to let the tests prove the
// plugin path end to end, against Tests/lab/plugin-server.py.
//
// Wire format (one UDP datagram each): 0x01 + token (hello), 0x02 (welcome),
// 0x03 (refused), 0x00 + IP packet (data), 0x04 (bye), 0x05 (ping, every
// second), 0x06 (pong). Three seconds without a pong is `reasserting`.
//
// providerConfiguration: address (e.g. 198.19.20.2/32), routes (comma
// separated prefixes), mtu, tokenKey (the secret's key, default "token").
// serverAddress: IPv4:port.
#if canImport(Glibc)
import Glibc
#endif
import VPNProviderKit

final class UDPRelayProvider: PacketTunnelProvider {
    var sock: Int32 = -1
    var server = sockaddr_in()
    var waiting: ProviderLoop.Token?
    var lastPong: Int64 = 0

    override func startTunnel(options: [String: String]?, completionHandler: @escaping (Error?) -> Void) {
        let config = protocolConfiguration.providerConfiguration
        guard let address = protocolConfiguration.serverAddress, let server = Self.endpoint(address) else {
            return completionHandler(TunnelError(.configurationFailed, "serverAddress '\(protocolConfiguration.serverAddress ?? "")' is not IPv4:port"))
        }
        self.server = server
        let key = config["tokenKey"] ?? "token"
        secret(key) { [self] result in
            switch result {
            case .failure(let e):
                completionHandler(e)
            case .success(let token):
                hello(token, config, completionHandler)
            }
        }
    }

    func hello(_ token: String, _ config: [String: String], _ done: @escaping (Error?) -> Void) {
        sock = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var s = server
        let r = withUnsafePointer(to: &s) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(sock, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if sock < 0 || r != 0 { return done(TunnelError(.serverAddressResolutionFailed, "cannot reach the server: errno \(errno)")) }
        send([0x01] + Array(token.utf8))
        log("udp-relay: hello sent to \(protocolConfiguration.serverAddress ?? "")")
        waiting = loop.after(5000) { done(TunnelError(.serverNotResponding, "no answer from \(self.protocolConfiguration.serverAddress ?? "") within 5 s")) }
        var answered = false
        loop.watch(sock) { [self] in
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buf.withUnsafeMutableBytes { recv(sock, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n <= 0 { return }
                switch buf[0] {
                case 0x00 where answered && n > 1:
                    packetFlow.writePackets([Array(buf[1..<n])], withProtocols: [(buf[1] >> 4) == 6 ? AF_INET6 : AF_INET])
                case 0x06 where answered:
                    lastPong = Self.nowMs
                    if reasserting { log("udp-relay: the server answers again"); reasserting = false }
                case 0x02 where !answered:
                    answered = true
                    loop.cancel(waiting)
                    let settings = PacketTunnelNetworkSettings(
                        addresses: [config["address"] ?? ""],
                        routes: (config["routes"] ?? "").split(separator: ",").map(String.init),
                        mtu: config["mtu"].flatMap { Int($0) } ?? 1400)
                    setTunnelNetworkSettings(settings) { [self] error in
                        if let error { return done(error) }
                        forward()
                        lastPong = Self.nowMs
                        keepalive()
                        done(nil)
                    }
                case 0x03 where !answered:
                    answered = true
                    loop.cancel(waiting)
                    done(TunnelError(.authenticationFailed, "the server refused the token"))
                default:
                    break
                }
            }
        }
    }

    /// A ping a second; no pong for 3 s and the path is reasserting.
    func keepalive() {
        send([0x05])
        if !reasserting && Self.nowMs - lastPong > 3000 {
            log("udp-relay: no answer from the server for 3 s")
            reasserting = true
        }
        loop.after(1000) { [self] in keepalive() }
    }

    static var nowMs: Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Tunnel to server, one datagram a packet.
    func forward() {
        packetFlow.readPackets { [self] packets, _ in
            for p in packets { send([0x00] + p) }
            forward()
        }
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(sock, $0.baseAddress, $0.count, 0) }
    }

    override func stopTunnel(with reason: ProviderStopReason, completionHandler: @escaping () -> Void) {
        log("udp-relay: stopTunnel(with: \(reason))")
        if sock >= 0 { send([0x04]); close(sock) }
        completionHandler()
    }

    static func endpoint(_ text: String) -> sockaddr_in? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { return nil }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(parts[0]), &a.sin_addr) == 1 else { return nil }
        return a
    }
}

UDPRelayProvider.main()
