import Testing
import VPNSystem

@Suite struct NetlinkTests {
    /// Proves libnl links and talks to the kernel: opens an rtnetlink socket
    /// and asks for the loopback link, which always has ifindex 1.
    @Test func opensRouteSocketAndFindsLoopback() throws {
        let socket = try NetlinkRouteSocket()
        #expect(socket.localPort != 0)
        #expect(try socket.linkIndex(named: "lo") == 1)
        #expect(try socket.linkIndex(named: "vpnctl-none0") == nil)
    }
}
