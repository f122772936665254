import Foundation
import Testing
@testable import VPNCore
@testable import VPNService

/// The agent's typed protocol (version 2): requests name a call and its
/// typed arguments; replies are events, then a result or an error, as data.
@Suite struct ServiceRequestTests {
    func parse(_ text: String) throws -> ServiceRequest { try ServiceRequest.parse(Array(text.utf8)) }

    func refusal(_ text: String) -> String? {
        do { _ = try parse(text); return nil } catch { return "\(error)" }
    }

    static let calls: [ServiceCall] = [
        .list, .can(action: .stop, profile: "lab"), .isConnected(profile: "office"), .status(profile: nil), .status(profile: "office"),
        .watch(profile: nil), .start(profile: "office", wait: false, timeout: 5, changes: true),
        .start(profile: "office", wait: true, timeout: 20, changes: false, persist: true),
        .stop(profile: nil, wait: true, timeout: 10, changes: false), .stop(profile: "office", wait: false, timeout: 3, changes: true),
        .toggle(profile: "office", timeout: 20, changes: false), .verify(profile: "office", probe: "198.18.1.1:80", dns: "probe.lab.test", timeout: 5),
        .stats(profile: "office"), .logs(profile: "office", since: Date(timeIntervalSince1970: 1_764_000_000), follow: true),
        .show(profile: "office"), .pauseOnDemand(profile: "office", paused: true), .pauseOnDemand(profile: "office", paused: false),
    ]

    @Test(arguments: calls)
    func everyCallRoundTrips(call: ServiceCall) throws {
        let r = ServiceRequest(call, language: "vi")
        #expect(r.serialized.hasSuffix("\n"))
        #expect(try parse(String(r.serialized.dropLast())) == r)
        #expect(ServiceCall.names.contains(call.name))
    }

    /// Only a client that says it answers is asked anything.
    @Test func aClientThatAnswersSaysSo() throws {
        let r = ServiceRequest(.start(profile: "office", wait: true, timeout: 20, changes: false, persist: false), answers: true)
        #expect(r.serialized.contains(#""answers":true"#))
        #expect(try parse(String(r.serialized.dropLast())).answers)
        #expect(try parse(#"{"protocol":2,"call":"status"}"#).answers == false)
        let reply = try ServiceReply.encoder().encode(CredentialReply(answers: nil))
        #expect(String(decoding: reply, as: UTF8.self) == #"{"declined":true}"#)
    }

    @Test func theLanguageIsOnlyACatalogVpnctlShips() throws {
        #expect(try parse(#"{"protocol":2,"call":"status","language":"../../etc"}"#).language == nil)
        #expect(try parse(#"{"protocol":2,"call":"status","language":"de"}"#).language == nil)
    }

    @Test func whatTheBodySaysAboutItsSenderIsIgnored() throws {
        let r = try parse(#"{"protocol":2,"call":"list","uid":0,"gid":0,"user":"root","configDir":"/tmp","runDir":"/tmp"}"#)
        #expect(r == ServiceRequest(.list))
    }

    @Test(arguments: [
        (#"{"protocol":2,"call":"import","profile":"x"}"#, "unknown call 'import'"),
        (#"{"protocol":2,"call":"edit","profile":"x"}"#, "unknown call 'edit'"),
        (#"{"protocol":2,"call":"start","timeout":5}"#, "start needs a profile"),
        (#"{"protocol":2,"call":"start","profile":"x"}"#, "start needs a timeout"),
        (#"{"protocol":2,"call":"start","profile":"x","timeout":0}"#, "timeout must be 1–86400 seconds"),
        (#"{"protocol":2,"call":"stop","timeout":5}"#, "stop needs a profile or all, not both"),
        (#"{"protocol":2,"call":"stop","profile":"x","all":true,"timeout":5}"#, "stop needs a profile or all, not both"),
        (#"{"protocol":2,"call":"can","profile":"x"}"#, "can needs an action"),
        (#"{"protocol":2,"call":"can","profile":"x","action":"reboot"}"#, "can needs an action"),
        (#"{"protocol":2,"call":"start","profile":"a\u0000b","timeout":5}"#, "profile contains a control character"),
        (#"{"protocol":2,"call":"start","profile":"","timeout":5}"#, "profile must be 1–256 bytes"),
        (#"{"protocol":2,"call":"logs","profile":"x","since":"yesterday"}"#, "since must be an ISO 8601 time in UTC"),
        (#"{"protocol":2,"profile":"x"}"#, "the request names no call"),
        (#"{"call":"list"}"#, "the request names no protocol version"),
        ("[1]", "the request is not a JSON object"),
        ("nope", "the request is not JSON"),
    ])
    func badRequestsAreNamed(text: String, reason: String) {
        #expect(refusal(text) == reason)
    }

    /// Version skew, both ways, is refused by name: an older client (protocol
    /// 1 named a "verb") and a newer one.
    @Test func versionSkewIsRefusedNamingBothVersions() {
        #expect(refusal(#"{"verb":"status","flags":["json"]}"#) == "the client speaks protocol 1 and this vpnctl agent protocol 2: the client is older than the agent")
        #expect(refusal(#"{"protocol":3,"call":"list"}"#) == "the client speaks protocol 3 and this vpnctl agent protocol 2: the agent is older than the client")
        #expect((try? parse(#"{"verb":"list"}"#)) == nil)
        do { _ = try parse(#"{"verb":"list"}"#) } catch let e as ServiceProtocolError { #expect(e.clientVersion == 1) } catch { Issue.record("\(error)") }
        // An older client reads the refusal in its own frames: stderr text, then exit 2.
        let frames = LegacyReply.refusal(VPNError(.usage, "refused"))
        #expect(frames.first == 0x65 && frames.suffix(6) == [0x78, 0, 0, 0, 1, UInt8(ascii: "2")])
    }

    @Test func oversizeIsRefusedBeforeParsing() {
        let big = #"{"protocol":2,"call":"list","pad":""# + String(repeating: "a", count: 5000) + #""}"#
        #expect(refusal(big) == "the request is larger than 4096 bytes")
        #expect(refusal(#"{"protocol":2,"call":"stats","profile":""# + String(repeating: "a", count: 257) + #""}"#) == "profile must be 1–256 bytes")
    }

    @Test func everyCallMapsToItsPolicyActionAndWhereItRuns() {
        #expect(ServiceCall.isConnected(profile: "x").action == .status)
        #expect(ServiceCall.logs(profile: "x", since: nil, follow: false).action == .status)
        #expect(ServiceCall.list.action == nil && ServiceCall.can(action: .start, profile: "x").action == nil)
        #expect(ServiceCall.status(profile: nil).runsInline && !ServiceCall.watch(profile: nil).runsInline)
        #expect(!ServiceCall.start(profile: "x", wait: true, timeout: 1, changes: false).runsInline)
        #expect(ServiceCall.logs(profile: "x", since: nil, follow: false).runsInline)
        #expect(!ServiceCall.logs(profile: "x", since: nil, follow: true).runsInline && ServiceCall.logs(profile: "x", since: nil, follow: true).streams)
        // Resolving a profile keeps every other argument.
        for call in ServiceRequestTests.calls where call.profile != nil {
            var expected = call
            if case .stop(nil, _, _, _) = call { continue }
            expected = call.naming("0f6c8d2e-6a4b-4c1e-9a5e-3f0e8a1b2c3d")
            #expect(expected.profile == "0f6c8d2e-6a4b-4c1e-9a5e-3f0e8a1b2c3d" && expected.name == call.name)
        }
    }
}

@Suite struct ServiceReplyTests {
    func lines(_ bytes: [UInt8]) -> [[UInt8]] { bytes.split(separator: 0x0A).map(Array.init) }

    @Test func eventsRoundTrip() throws {
        let t = StatusTransition(time: Date(timeIntervalSince1970: 1_764_000_000.25), id: UUID(), name: "office", status: "connected",
                                 previous: "connecting", interface: "utun0", error: ConnectionError(.serverNotResponding, "no handshake"))
        let events: [ServiceEvent] = [.progress(profile: "office", action: "start"), .change(line: "[#] ip link set utun0 up"),
                                      .onDemand(profile: "office", change: .paused), .onDemandPauseFailed(profile: "o", reason: "EROFS"),
                                      .watching(profiles: 3), .transition(t), .logLine("2026-12-02T03:04:05.000Z hello"),
                                      .credentials(CredentialRequest(profile: "office", fields: CredentialRequest.userAndPassword("bob"),
                                                                     timeoutSeconds: 120)),
                                      .credentials(CredentialRequest(profile: "office", fields: [], url: "https://sso.example/x", timeoutSeconds: 30))]
        for e in events {
            let line = try ServiceReply.line(event: e)
            #expect(line.last == 0x0A && !line.dropLast().contains(0x0A))
            guard case .event(let back) = try ServiceReply.parse(Array(line.dropLast())) else { Issue.record("\(e)"); continue }
            #expect(back == e)
        }
    }

    @Test func aResultCarriesTheTypedValueAndAnErrorItsNameAndRemedy() throws {
        var d = DerivedStatus(id: UUID(), name: "office", status: .connected, interface: "utun3", connectedSince: Date(timeIntervalSince1970: 1_764_000_000),
                              supervisorAlive: true, record: RuntimeRecord(id: UUID(), name: "office", status: .connected))
        d.bypassRoutes = ["128.0.0.0/1 dev eth0"]
        d.activity = TunnelActivity(latestHandshake: nil, reportsHandshakes: true, rxBytes: 1, txBytes: 2)
        d.killSwitchTablePresent = false
        let report = StatusReport(profiles: [ProfileStatus(status: d, onDemandEnabled: true, onDemandPaused: false, onDemandNote: "no rule matched")],
                                  restricted: true)
        guard case .result(let bytes) = try ServiceReply.parse(Array(try ServiceReply.line(result: report).dropLast())) else {
            Issue.record("not a result"); return
        }
        let back = try ServiceReply.decoder().decode(StatusReport.self, from: Data(bytes))
        #expect(back.profiles[0].status.record?.name == "office")
        #expect(back.profiles[0].status.bypassRoutes == d.bypassRoutes && back.profiles[0].status.killSwitchTablePresent == false)
        #expect(back.profiles[0].status.connectedSince == d.connectedSince && back.restricted)
        let e = VPNError(.permissionDenied, "user 'bob' may not start 'lab'", hint: nil, remedy: .grant(profile: "lab", adminGroup: "vpnctl"),
                         cause: .system(13))
        let line = ServiceReply.line(error: e)
        #expect(String(decoding: line, as: UTF8.self).contains(#""name":"permissionDenied""#))
        guard case .error(let back2) = try ServiceReply.parse(Array(line.dropLast())) else { Issue.record("not an error"); return }
        #expect(back2.code == .permissionDenied && back2.message == e.message && back2.remedy == e.remedy && back2.cause == e.cause)
    }

    @Test func aMalformedReplyIsNamed() {
        #expect(throws: ServiceProtocolError.self) { try ServiceReply.parse(Array("nope".utf8)) }
        #expect(throws: ServiceProtocolError.self) { try ServiceReply.parse(Array(#"{"event":"transition","transition":{}}"#.utf8)) }
        #expect(throws: ServiceProtocolError.self) { try ServiceReply.parse(Array(#"{"event":"result"}"#.utf8)) }
    }
}

/// Issue 29, item 8: what a worker is asked travels on a socket, not on its
/// command line.
@Suite struct WorkOrderTests {
    @Test func workerArgvClean_theOrderRoundTripsWithTheCallerAndTheRequest() throws {
        let request = ServiceRequest(.watch(profile: "0f6c8d2e-6a4b-4c1e-9a5e-3f0e8a1b2c3d"), language: "vi")
        let order = WorkOrder(uid: 1001, gid: 1002, request: request)
        #expect(order.serialized.hasSuffix("\n"))
        #expect(try WorkOrder.parse(Array(order.serialized.utf8)) == order)
    }

    @Test(arguments: [
        (#"{"gid":1,"request":"{\"protocol\":2,\"call\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":-1,"gid":1,"request":"{\"protocol\":2,\"call\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":4294967296,"gid":1,"request":"{\"protocol\":2,\"call\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":1,"gid":1}"#, "the work order has no request"),
        (#"{"uid":1,"gid":1,"request":"{\"protocol\":2,\"call\":\"import\"}"}"#, "unknown call 'import'"),
        ("not json", "the work order is not JSON"),
    ])
    func workerArgvClean_aBadOrderIsRefusedNamingWhy(text: String, reason: String) {
        #expect(throws: ServiceProtocolError(reason)) { try WorkOrder.parse(Array(text.utf8)) }
    }
}
