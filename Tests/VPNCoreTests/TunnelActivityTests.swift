import Foundation
import Testing
@testable import VPNCore

/// Issue 36 item 6: the newest handshake `status` reports for WireGuard.
@Suite struct TunnelActivityTests {
    static let handshake = Date(timeIntervalSince1970: 1_764_430_000.25)

    @Test func item6_theNewestHandshakeOfAnyPeerWithItsNanoseconds() {
        var a = WireGuardUAPI.PeerStatus(publicKeyHex: "aa")
        a.lastHandshakeSec = 1_764_430_000
        a.lastHandshakeNsec = 250_000_000
        var b = WireGuardUAPI.PeerStatus(publicKeyHex: "bb")
        b.lastHandshakeSec = 1_764_429_000
        let never = WireGuardUAPI.PeerStatus(publicKeyHex: "cc")
        #expect(WireGuardActivity(peers: [b, a, never]).latestHandshake == Self.handshake)
        #expect(WireGuardActivity(peers: [never]).latestHandshake == nil, "0 is never")
    }
}
