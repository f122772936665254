import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// Issue 36 item 6: each running tunnel's newest handshake and transfer
/// counters in `status --json`, and the ACTIVITY column in pipes too.
@Suite struct StatusActivityTests {
    static let handshake = Date(timeIntervalSince1970: 1_764_430_000.25)

    func running(_ name: String, _ activity: TunnelActivity?) -> DerivedStatus {
        var d = DerivedStatus(id: UUID(), name: name, status: .connected, interface: "utun3",
                              connectedSince: Date(timeIntervalSince1970: 1_764_429_000), supervisorAlive: true)
        d.activity = activity
        return d
    }

    @Test func item6_statusJSONCarriesTheHandshakeAndTheCounters() throws {
        let d = running("office", TunnelActivity(latestHandshake: Self.handshake, reportsHandshakes: true,
                                                 rxBytes: 5_000_000_000, txBytes: 420))
        let byHand = StatusJSON(status: d).jsonText
        #expect(byHand == Output.encodeJSON(StatusJSON(status: d)), "the hand-built JSON and the encoder's agree")
        let o = jsonObject(byHand)
        #expect(o["latestHandshake"] as? String == "2025-11-29T15:26:40.250Z")
        #expect((o["rxBytes"] as? NSNumber)?.uint64Value == 5_000_000_000, "above 2^32, exact")
        #expect((o["txBytes"] as? NSNumber)?.uint64Value == 420)

        // A provider that reports no handshake: null, nothing invented; the counters stay.
        let ovpn = running("ovpn", TunnelActivity(latestHandshake: nil, reportsHandshakes: false, rxBytes: 1, txBytes: 2))
        let p = jsonObject(StatusJSON(status: ovpn).jsonText)
        #expect(p["latestHandshake"] is NSNull)
        #expect((p["rxBytes"] as? NSNumber)?.intValue == 1)
        #expect(StatusJSON(status: ovpn).jsonText == Output.encodeJSON(StatusJSON(status: ovpn)))

        // No tunnel: all three null, and present (one shape for scripts).
        let down = DerivedStatus(id: UUID(), name: "x", status: .disconnected, supervisorAlive: false)
        let q = jsonObject(StatusJSON(status: down).jsonText)
        for key in ["latestHandshake", "rxBytes", "txBytes"] { #expect(q[key] is NSNull, "\(key)") }
        #expect(StatusJSON(status: down).jsonText == Output.encodeJSON(StatusJSON(status: down)))
    }

    @Test func item6_theActivityCell() {
        let now = Self.handshake.addingTimeInterval(12)
        let ago = { (d: Date) in Timestamp.ago(d, now: now) }
        let wg = TunnelActivity(latestHandshake: Self.handshake, reportsHandshakes: true, rxBytes: 1229, txBytes: 3482)
        #expect(StatusCommand.activityCell(wg, handshakeTime: ago) == "handshake 12 s ago, rx 1.2 KiB, tx 3.4 KiB")
        let waiting = TunnelActivity(latestHandshake: nil, reportsHandshakes: true, rxBytes: 0, txBytes: 148)
        #expect(StatusCommand.activityCell(waiting, handshakeTime: ago) == "no handshake yet, rx 0 B, tx 148 B")
        let ovpn = TunnelActivity(latestHandshake: nil, reportsHandshakes: false, rxBytes: 84, txBytes: 84)
        #expect(StatusCommand.activityCell(ovpn, handshakeTime: ago) == "rx 84 B, tx 84 B")
        #expect(StatusCommand.activityCell(nil, handshakeTime: ago) == "-")
    }

    @Test func item6_pipesGetTheActivityColumnWithISOTimes() {
        let wg = running("office", TunnelActivity(latestHandshake: Self.handshake, reportsHandshakes: true, rxBytes: 1229, txBytes: 3482))
        let down = DerivedStatus(id: UUID(), name: "home", status: .disconnected, supervisorAlive: false)
        let t = StatusCommand.pipeTable([wg, down])
        #expect(t.header == ["NAME", "STATUS", "INTERFACE", "SINCE", "ACTIVITY", "LAST ERROR"])
        #expect(t.rows[0][4] == "handshake 2025-11-29T15:26:40.250Z, rx 1.2 KiB, tx 3.4 KiB")
        #expect(t.rows[1][4] == "-")
        // Nothing running: no column with nothing to say, as before.
        #expect(StatusCommand.pipeTable([down]).header == ["NAME", "STATUS", "INTERFACE", "SINCE", "LAST ERROR"])
    }
}
