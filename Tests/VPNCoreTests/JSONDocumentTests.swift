import Testing
@testable import VPNCore

/// The tape a document is read from: lookups by the bytes of a key,
/// escapes, paths for messages, and a built value read like a parsed one.
@Suite struct JSONDocumentTests {
    static let text = #"{"profiles":[{"name":"a"},{"name":"b","protocol":{"mtu":"x","peers":[{},{"k\u0065y":"v\"w"}]}}],"n":-12}"#

    @Test func fieldsAreReadWhereverTheyAre() throws {
        let r = try JSONReader(parsing: Array(Self.text.utf8))
        let profiles = try r.required("profiles").array()
        #expect(try profiles.map { try $0.string("name") } == ["a", "b"])
        let peer = try profiles[1].required("protocol").required("peers").array()[1]
        #expect(try peer.string("key") == "v\"w", "a key written with an escape is found by its text")
        #expect(try r.int("n") == -12)
        #expect(try r.optional("missing") == nil)
        #expect(try r.keys() == ["profiles", "n"])
    }

    @Test func aProblemNamesThePathOfTheValue() throws {
        let r = try JSONReader(parsing: Array(Self.text.utf8), path: "prefs")
        let mtu = try r.required("profiles").array()[1].required("protocol").required("mtu")
        let e = #expect(throws: JSONDecodeProblem.self) { try mtu.int() }
        #expect(e?.path == "prefs.profiles[1].protocol.mtu")
        let peers = try r.required("profiles").array()[1].required("protocol").required("peers")
        let missing = #expect(throws: JSONDecodeProblem.self) { try peers.array()[0].required("endpoint") }
        #expect(missing?.path == "prefs.profiles[1].protocol.peers[0].endpoint")
        #expect(try JSONReader(parsing: Array("[]".utf8)).path == "")
    }

    @Test func aKeyWrittenTwiceIsADuplicateHoweverItIsEscaped() {
        #expect(JSONSyntax.firstError(in: Array(#"{"a":1,"\u0061":2}"#.utf8))?.message == "duplicate key 'a'")
        let wide = (0..<20).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(JSONSyntax.firstError(in: Array("{\(wide),\"\\u006b19\":0}".utf8))?.message == "duplicate key 'k19'")
        #expect(JSONSyntax.firstError(in: Array("{\(wide),\"k20\":0}".utf8)) == nil)
        // Keys are compared as written: canonically equal text is two keys.
        #expect(JSONSyntax.firstError(in: Array("{\"\u{E9}\":1,\"e\u{301}\":2}".utf8)) == nil)
    }

    @Test func aBuiltValueReadsLikeTheSameTextParsed() throws {
        let value = JSONValue.object(JSONObject([(key: "z", value: .string("1")), (key: "a", value: .array([.null, .bool(false)]))]))
        let r = JSONReader(value)
        #expect(try r.keys() == ["z", "a"], "members keep their order")
        #expect(r.value == value)
        #expect(try r.required("a").array()[1].bool() == false)
        #expect(try JSONDocument(parsing: Array(value.serialized.utf8)).value(at: 0) == value)
    }

    /// The eight-bytes-at-a-time string scan stops at exactly the bytes the
    /// byte loop stops at, wherever in the word they are and whatever is
    /// around them.
    @Test func theWordScanStopsAtTheSameBytesAsTheByteLoop() throws {
        for fill: UInt8 in [0x61, 0x80, 0xFF, 0x21, 0x5D] {
            for position in 0..<8 {
                for b in 0...UInt8.max {
                    var word = [UInt8](repeating: fill, count: 8)
                    word[position] = b
                    let w = word.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    #expect(JSONSyntax.Parser.stops(w) == (b == 0x22 || b == 0x5C || b < 0x20), "byte \(b) at \(position) in \(fill)s")
                }
            }
        }
        let long = "{\"k\":\"" + String(repeating: "abcdefgh", count: 5) + "\u{1}\"}"
        #expect(JSONSyntax.firstError(in: Array(long.utf8))?.column == 47)
        #expect(try JSONSyntax.parse(Array(("[\"" + String(repeating: "é日x", count: 9) + "\"]").utf8)) == .array([.string(String(repeating: "é日x", count: 9))]))
    }

    /// Runs of spaces of every length around every token parse the same
    /// and problems are found at the same column.
    @Test func indentationOfAnyLengthIsSkipped() throws {
        for n in 0..<20 {
            let pad = String(repeating: " ", count: n)
            let text = "\(pad){\(pad)\"a\"\(pad):\(pad)[\(pad)1\(pad),\n\(pad)\"x\"\(pad)]\(pad)}\(pad)"
            #expect(try JSONSyntax.parse(Array(text.utf8)) == .object(["a": .array([.number("1"), .string("x")])]), "\(n) spaces")
            #expect(JSONSyntax.firstError(in: Array("[\(pad)1\(pad)x]".utf8)) == JSONSyntax.Problem(line: 1, column: 2 * n + 3, message: "expected ',' or ']', found 'x'"))
        }
    }
}
