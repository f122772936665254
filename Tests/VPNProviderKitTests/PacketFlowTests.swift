import Foundation
import Testing
@testable import VPNProviderKit

/// The SDK's packet flow and wire format, on a SOCK_SEQPACKET pair standing in
/// for the tun (it keeps packet boundaries as a tun does).
@Suite struct PacketFlowTests {
    func pair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func packetInformationIsTakenOffAndPutOn() throws {
        let (tun, kernel) = try pair()
        defer { close(tun); close(kernel) }
        let loop = ProviderLoop()
        let flow = PacketTunnelFlow(fd: tun, loop: loop)
        let v4: [UInt8] = [0x45, 0, 0, 20] + [UInt8](repeating: 1, count: 16)
        let v6: [UInt8] = [0x60] + [UInt8](repeating: 2, count: 39)
        for frame in [[0, 0, 0x08, 0x00] + v4, [0, 0, 0x86, 0xDD] + v6] {
            #expect(frame.withUnsafeBytes { write(kernel, $0.baseAddress, $0.count) } == frame.count)
        }
        var got: ([[UInt8]], [Int32])? = nil
        flow.readPackets { packets, protocols in
            got = (packets, protocols)
            loop.stop()
        }
        loop.after(2000) { loop.stop() }
        loop.run()
        #expect(got?.0 == [v4, v6])
        #expect(got?.1 == [AF_INET, AF_INET6])

        #expect(flow.writePackets([v6, v4], withProtocols: [AF_INET6, AF_INET]))
        var buf = [UInt8](repeating: 0, count: 2048)
        var frames: [[UInt8]] = []
        for _ in 0..<2 {
            let n = buf.withUnsafeMutableBytes { read(kernel, $0.baseAddress, $0.count) }
            frames.append(Array(buf[0..<max(0, n)]))
        }
        #expect(frames == [[0, 0, 0x86, 0xDD] + v6, [0, 0, 0x08, 0x00] + v4])
    }

    @Test func timersRunInOrderAndCancelledOnesDoNot() {
        let loop = ProviderLoop()
        var seen: [Int] = []
        loop.after(20) { seen.append(2); loop.stop() }
        loop.after(5) { seen.append(1) }
        let t = loop.after(10) { seen.append(99) }
        loop.cancel(t)
        loop.run()
        #expect(seen == [1, 2])
    }

    @Test func theWireIsJSONLines() throws {
        let (mine, theirs) = try pair()
        defer { close(mine); close(theirs) }
        let channel = ControlChannel(fd: mine)
        channel.send(Outgoing(type: "status", status: "connected"))
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { read(theirs, $0.baseAddress, $0.count) }
        let line = String(decoding: buf[0..<n], as: UTF8.self)
        #expect(line.hasSuffix("\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(object == ["type": "status", "status": "connected"])
        let reply = #"{"type":"secret","id":3,"name":"token","value":"v"}"# + "\n" + #"{"type":"stop","reason":"userInitiated"}"# + "\n"
        _ = reply.withCString { write(theirs, $0, strlen($0)) }
        let (messages, closed) = channel.receive()
        #expect(!closed)
        #expect(messages.map(\.type) == ["secret", "stop"])
        #expect(messages[0].id == 3 && messages[0].value == "v" && messages[1].reason == "userInitiated")
    }
}
