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

@Suite struct NetlinkErrorTests {
    /// libnl's NLE_EXIST, however it came (negative as libnl returns it, or
    /// made by `exists`), is `alreadyExists`; the other codes are not.
    @Test func alreadyExistsIsTyped() {
        let made = NetlinkError.exists("add route")
        #expect(made.alreadyExists)
        #expect(made.description == "add route: object exists")
        #expect(NetlinkError("add address", code: -made.code).alreadyExists)
        #expect(!NetlinkError("add address", code: made.code + 1).alreadyExists)
        #expect(!NetlinkError("delete link", code: 0).alreadyExists)
    }
}
