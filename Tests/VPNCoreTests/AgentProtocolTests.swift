import Foundation
import Testing
@testable import VPNCore

@Suite struct AgentProtocolTests {
    func parse(_ text: String) throws -> AgentRequest { try AgentRequest.parse(Array(text.utf8)) }

    func refusal(_ text: String) -> String? {
        do { _ = try parse(text); return nil } catch { return "\(error)" }
    }

    @Test func aRequestRoundTrips() throws {
        let r = AgentRequest(verb: .start, profile: "office", flags: ["no-wait", "json"], values: ["timeout": "5", "color": "never"],
                             stdoutIsTerminal: true, stderrIsTerminal: false, colorAllowed: false)
        #expect(r.serialized.hasSuffix("\n"))
        #expect(try parse(String(r.serialized.dropLast())) == r)
        let can = AgentRequest(verb: .can, profile: "lab", canAction: .stop)
        #expect(try parse(String(can.serialized.dropLast())) == can)
        // The client's terminal width travels, so that status fits it; a silly one does not.
        let wide = AgentRequest(verb: .status, stdoutIsTerminal: true, terminalColumns: 132)
        #expect(try parse(String(wide.serialized.dropLast())).terminalColumns == 132)
        #expect(try parse(#"{"verb":"status","columns":99999999}"#).terminalColumns == nil)
        // The client's language travels; only a catalog vpnctl ships (it names a file).
        let vi = AgentRequest(verb: .status, language: "vi")
        #expect(try parse(String(vi.serialized.dropLast())).language == "vi")
        #expect(try parse(#"{"verb":"status","language":"../../etc"}"#).language == nil)
        #expect(try parse(#"{"verb":"status","language":"de"}"#).language == nil)
    }

    @Test func whatTheBodySaysAboutItsSenderIsIgnored() throws {
        let r = try parse(#"{"verb":"list","uid":0,"gid":0,"user":"root","configDir":"/tmp","runDir":"/tmp"}"#)
        #expect(r == AgentRequest(verb: .list))
    }

    @Test(arguments: [
        (#"{"verb":"status","flags":["config-dir"]}"#, "status takes no option 'config-dir' through the agent"),
        (#"{"verb":"status","values":{"run-dir":"/tmp"}}"#, "status takes no option 'run-dir' through the agent"),
        (#"{"verb":"start","profile":"x","values":{"probe":"http://x/"}}"#, "start takes no option 'probe' through the agent"),
        (#"{"verb":"import","profile":"x"}"#, "unknown verb 'import'"),
        (#"{"verb":"edit","profile":"x"}"#, "unknown verb 'edit'"),
        (#"{"verb":"start"}"#, "start needs a profile"),
        (#"{"verb":"can","profile":"x"}"#, "can needs an action"),
        (#"{"verb":"can","profile":"x","canAction":"reboot"}"#, "can needs an action"),
        (#"{"verb":"start","profile":"a\u0000b"}"#, "profile contains a control character"),
        (#"{"verb":"start","profile":""}"#, "profile must be 1–256 bytes"),
        (#"{"profile":"x"}"#, "the request names no verb"),
        ("[1]", "the request is not a JSON object"),
        ("nope", "the request is not JSON"),
    ])
    func badRequestsAreNamed(text: String, reason: String) {
        #expect(refusal(text) == reason)
    }

    @Test func oversizeIsRefusedBeforeParsing() {
        let big = #"{"verb":"list","pad":""# + String(repeating: "a", count: 5000) + #""}"#
        #expect(refusal(big) == "the request is larger than 4096 bytes")
        #expect(refusal(#"{"verb":"start","profile":""# + String(repeating: "a", count: 257) + #""}"#) == "profile must be 1–256 bytes")
    }

    @Test func framesDecodeWholeOrWait() throws {
        let bytes = AgentFrame.stdout(Array("hello\n".utf8)).encoded + AgentFrame.stderr([]).encoded + AgentFrame.exit(11).encoded
        var rest = bytes[...]
        var frames: [AgentFrame] = []
        while let (f, used) = try AgentFrame.decode(rest) {
            frames.append(f)
            rest = rest.dropFirst(used)
        }
        #expect(frames == [.stdout(Array("hello\n".utf8)), .stderr([]), .exit(11)])
        #expect(rest.isEmpty)
        #expect(try AgentFrame.decode(bytes.prefix(7)) == nil)
        #expect(throws: AgentProtocolError.self) { try AgentFrame.decode([0x71, 0, 0, 0, 0][...]) }
        #expect(throws: AgentProtocolError.self) { try AgentFrame.decode([0x6F, 0x7F, 0, 0, 0][...]) }
        #expect(throws: AgentProtocolError.self) { try AgentFrame.decode(([0x78, 0, 0, 0, 3] + Array("999".utf8))[...]) }
    }

    @Test func everyVerbMapsToItsPolicyAction() {
        #expect(AgentRequest.Verb.isConnected.action == .status)
        #expect(AgentRequest.Verb.list.action == nil)
        for verb in AgentRequest.Verb.allCases {
            // Nothing a client may pass names a file or a directory.
            for name in verb.flags.union(verb.valueOptions).union(AgentRequest.Verb.commonFlags) {
                #expect(!["config-dir", "run-dir", "file", "name", "username"].contains(name))
            }
        }
    }
}

/// Issue 29, item 8: what a worker is asked travels on a socket, not on its
/// command line.
@Suite struct AgentWorkOrderTests {
    @Test func workerArgvClean_theOrderRoundTripsWithTheCallerAndTheRequest() throws {
        let request = AgentRequest(verb: .status, profile: "0f6c8d2e-6a4b-4c1e-9a5e-3f0e8a1b2c3d", flags: ["watch", "json"], language: "vi")
        let order = AgentWorkOrder(uid: 1001, gid: 1002, request: request)
        #expect(order.serialized.hasSuffix("\n"))
        #expect(try AgentWorkOrder.parse(Array(order.serialized.utf8)) == order)
    }

    @Test(arguments: [
        (#"{"gid":1,"request":"{\"verb\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":-1,"gid":1,"request":"{\"verb\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":4294967296,"gid":1,"request":"{\"verb\":\"list\"}"}"#, "the work order names no valid uid and gid"),
        (#"{"uid":1,"gid":1}"#, "the work order has no request"),
        (#"{"uid":1,"gid":1,"request":"{\"verb\":\"import\"}"}"#, "unknown verb 'import'"),
        ("not json", "the work order is not JSON"),
    ])
    func workerArgvClean_aBadOrderIsRefusedNamingWhy(text: String, reason: String) {
        #expect(throws: AgentProtocolError(reason)) { try AgentWorkOrder.parse(Array(text.utf8)) }
    }
}
