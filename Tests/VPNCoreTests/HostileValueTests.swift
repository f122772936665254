import Foundation
import Testing
@testable import VPNCore

@Suite struct HostileValueTests {
    @Test func messagesQuoteAtMostAHundredCharacters() {
        let huge = String(repeating: "é", count: 1 << 20)
        let q = huge.quotedForMessage
        #expect(q.count < 140)
        #expect(q.hasSuffix("… (1048576 characters)'"))
        #expect("short".quotedForMessage == "'short'")
        #expect("a\u{1B}b".quotedForMessage == "'a\\u{1B}b'")
    }

    @Test func controlAndInvisibleCharactersAreEscaped() {
        #expect("a\u{1B}[2Jb\u{7F}\u{9B}\u{202E}\u{200B}\u{2028}".escapingControls() == "a\\u{1B}[2Jb\\u{7F}\\u{9B}\\u{202E}\\u{200B}\\u{2028}")
        #expect("line\n\ttab".escapingControls() == "line\n\ttab")
        #expect("line\n".escapingControls(keepLineBreaks: false) == "line\\u{A}")
        #expect("naïve 日本".escapingControls() == "naïve 日本")
    }

    @Test func jsonEscapesDELC1AndInvisiblesEvenAboveTheBMP() throws {
        let s = "a\u{7F}\u{85}\u{202E}\u{E0001}"
        let text = JSONValue.string(s).serialized
        #expect(text == "\"a\\u007f\\u0085\\u202e\\udb40\\udc01\"")
        #expect(try JSONSyntax.parse(Array(text.utf8)) == .string(s))
        #expect(JSONValue.escapingInvisibles("{\"n\":\"\u{9B}x\"}") == "{\"n\":\"\\u009bx\"}")
    }

    @Test(arguments: ["a\u{202E}b", "a\u{202A}", "\u{2066}x", "x\u{2069}", "a\u{200E}", "a\u{200F}", "a\u{061C}",
                      "a\u{200B}", "a\u{200C}b", "a\u{200D}b", "a\u{2060}", "\u{FEFF}a"])
    func invisibleCharactersInNamesAreRefused(name: String) {
        #expect(ProfileName.problems(name).contains { $0.contains("invisible formatting character (U+") })
    }

    @Test func namesAndRevisionsAreCheckedOnLoad() throws {
        let id = "6f1c9c2e-3a5b-4d7e-9f00-112233445566"
        func prefs(name: String, revision: String) -> [UInt8] {
            Array("""
            {"schemaVersion":1,"profiles":[{"id":"\(id)","name":"\(name)","revision":\(revision),
            "protocol":{"type":"wireguard"}}]}
            """.utf8)
        }
        let bidi = #expect(throws: VPNError.self) { try PreferencesCodec.decode(prefs(name: "a\\u202eb", revision: "1"), path: "/p.json") }
        #expect(bidi?.code == .configurationReadWriteFailed)
        #expect(bidi?.message == "/p.json: profile \(id) has an invalid name 'a\\u{202E}b': contains an invisible formatting character (U+202E: a bidi control, zero-width or separator character)")
        let max = #expect(throws: VPNError.self) { try PreferencesCodec.decode(prefs(name: "a", revision: "9223372036854775808"), path: "/p.json") }
        #expect(max?.message.contains("at profiles[0].revision: 9223372036854775808 is out of range") == true)
        let neg = #expect(throws: VPNError.self) { try PreferencesCodec.decode(prefs(name: "a", revision: "-1"), path: "/p.json") }
        #expect(neg?.code == .configurationReadWriteFailed)
        let huge = #expect(throws: VPNError.self) { try PreferencesCodec.decode(prefs(name: "a", revision: "1e999"), path: "/p.json") }
        #expect(huge?.code == .configurationReadWriteFailed)
    }

    @Test func aRevisionAtTheTopIsRefusedBySaveNotATrap() throws {
        let dir = TempDir()
        let store = PreferencesStore(directory: dir.path)
        var p = try store.save(sampleProfile("office"))
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        try text.replacingOccurrences(of: "\"revision\" : 1", with: "\"revision\" : 9223372036854775806")
            .write(toFile: store.path, atomically: false, encoding: .utf8)
        p.revision = 9223372036854775806
        p = try store.save(p)
        #expect(p.revision == Int.max)
        let e = #expect(throws: VPNError.self) { try store.save(p) }
        #expect(e?.code == .configurationReadWriteFailed)
        #expect(e?.message == "profile 'office' is at the highest revision (9223372036854775807)")
        #expect(try store.load().first?.revision == Int.max)
    }

    @Test func runtimeRecordsRefuseOutOfRangePidsInsteadOfTruncating() throws {
        let id = "6f1c9c2e-3a5b-4d7e-9f00-112233445566"
        for (field, value) in [("supervisorPid", "4294967297"), ("providerPid", "0"), ("supervisorPid", "-1"), ("ifindex", "2147483648")] {
            let json = "{\"id\":\"\(id)\",\"status\":\"connected\",\"\(field)\":\(value)}"
            let e = #expect(throws: JSONDecodeProblem.self) { try RuntimeRecord(json: JSONReader(try JSONSyntax.parse(Array(json.utf8)))) }
            #expect(e?.description == "at \(field): \(value) is out of range (1–2147483647)")
        }
    }

    @Test func decodeProblemsQuoteShortPaths() {
        let key = String(repeating: "k", count: 1 << 20)
        let json = "{\"schemaVersion\":1,\"profiles\":[{\"id\":\"6f1c9c2e-3a5b-4d7e-9f00-112233445566\",\"name\":\"a\",\"protocol\":{\"type\":\"provider\",\"providerConfiguration\":{\"\(key)\":1}}}]}"
        let e = #expect(throws: VPNError.self) { try PreferencesCodec.decode(Array(json.utf8), path: "/p.json") }
        #expect((e?.message.count ?? .max) < 400)
        #expect(e?.message.hasSuffix(": expected a string") == true)
    }

    @Test func handshakeTimesOutOfRangeAreMalformedNotATrap() {
        for line in ["last_handshake_time_sec=9223372036854775807", "last_handshake_time_sec=-1", "last_handshake_time_nsec=1000000000"] {
            let reply = "public_key=\(String(repeating: "a", count: 64))\n\(line)\nerrno=0\n"
            #expect(throws: WireGuardUAPI.ReplyError.self) { try WireGuardUAPI.parseGet(reply) }
        }
    }

    @Test func parseProblemsDescribeThemselves() {
        #expect("\(JSONSyntax.Problem(line: 2, column: 3, message: "oops"))" == "line 2, column 3: oops")
        #expect("\(Endpoint.Problem.badPort)" == "the port is not a number from 1 to 65535")
        #expect("\(ConnectionError(.serverDead, "gone"))" == "serverDead: gone")
        #expect("\(WireGuardUAPI.ReplyError.errno(22))" == "wireguard-go answered errno=22")
    }
}

@Suite struct EventLogTests {
    @Test func aFIFOInPlaceOfTheEventsLogFailsInsteadOfBlocking() throws {
        let dir = TempDir()
        let store = RuntimeStore(directory: dir.path)
        let id = UUID()
        #expect(mkfifo(store.eventsPath(id), 0o600) == 0)
        let event = TransitionEvent(time: Date(), id: id.uuidString, name: "x", status: "connected", previous: "connecting")
        let e = #expect(throws: VPNError.self) { try store.appendEvent(event, id: id) }
        #expect(e?.message.contains("not a regular file") == true)
    }
}
