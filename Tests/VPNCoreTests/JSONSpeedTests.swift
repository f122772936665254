import Foundation
import Testing
@testable import VPNCore

/// The fast paths in the parser, quoting and UUID text against what they
/// replaced: the same values, and the same problems at the same line:column.
@Suite struct JSONSpeedTests {
    static let seeds = [
        "{\"schemaVersion\":1,\"profiles\":[{\"id\":\"6f1c9c2e-3a5b-4d7e-9f00-112233445566\",\"name\":\"naïve 日本\",\"revision\":2}]}",
        "{\n  \"a\" : [1, -2.5e+3, true, false, null],\n  \"b\" : \"x\\\"y\\\\z\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\n  \"c\" : {\"d\" : \"é😀\"}\n}\n",
        "\u{FEFF}[\"\\ud800\", \"\\udc00x\", \"plain\", {\"k\":\"v\",\"k2\":[[]]}]",
    ]

    static func same(_ text: [UInt8]) -> Bool {
        let new = Result { try JSONSyntax.parse(text) }
        let old = Result { try ReferenceJSONSyntax.parse(text) }
        switch (new, old) {
        case (.success(let a), .success(let b)): return a == b
        case (.failure(let a), .failure(let b)): return (a as? JSONSyntax.Problem) == (b as? JSONSyntax.Problem)
        default: return false
        }
    }

    @Test(arguments: seeds)
    func everyTruncationFailsAtTheSamePlace(seed: String) {
        let bytes = Array(seed.utf8)
        for n in 0...bytes.count { #expect(Self.same(Array(bytes[..<n])), "cut at \(n)") }
    }

    @Test(arguments: seeds)
    func everySingleByteChangeParsesTheSame(seed: String) {
        let bytes = Array(seed.utf8)
        let replacements: [UInt8] = [0x00, 0x09, 0x0A, 0x1F, 0x20, 0x22, 0x2C, 0x2F, 0x30, 0x3A, 0x5B, 0x5C, 0x5D, 0x75, 0x7B, 0x7D,
                                     0x7F, 0x80, 0xBF, 0xC0, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xF8, 0xFF]
        for i in bytes.indices {
            for r in replacements {
                var m = bytes
                m[i] = r
                #expect(Self.same(m), "byte \(i) -> \(r)")
            }
        }
    }

    @Test func aDuplicateKeyIsReportedAtTheKeyEvenWhenItsValueIsBroken() throws {
        let p = JSONSyntax.firstError(in: Array("{\"a\":1,\n \"a\":[1,}".utf8))
        #expect(p == JSONSyntax.Problem(line: 2, column: 2, message: "duplicate key 'a'"))
        #expect(JSONSyntax.firstError(in: Array("{\"a\":1,\"b\":\"\u{1}\"}".utf8))?.column == 13)
        #expect(JSONSyntax.firstError(in: Array("[\"é\u{2}\"]".utf8))?.column == 4)
        #expect(JSONSyntax.firstError(in: [0x5B, 0x22, 0x61, 0xC3, 0x28, 0x22, 0x5D])
                == JSONSyntax.Problem(line: 1, column: 4, message: "invalid UTF-8 in a string"))
        #expect(try JSONSyntax.parse(Array("{\"k\":\"\",\"\":\"v\"}".utf8)) == .object(["k": .string(""), "": .string("v")]))
    }

    /// Objects past `JSONObject.indexThreshold` keys look keys up through an index.
    @Test func largeObjectsParseAndReportDuplicatesAsBefore() throws {
        let keys = (0..<40).map { "\"k\($0)\":\($0)" }
        for n in [15, 16, 17, 40] {
            let text = "{" + keys[..<n].joined(separator: ",") + "}"
            #expect(Self.same(Array(text.utf8)), "\(n) keys")
            for dup in [0, n - 1] {
                #expect(Self.same(Array((text.dropLast() + ",\"k\(dup)\":0}").utf8)), "\(n) keys, k\(dup) again")
            }
        }
        let big = try JSONSyntax.parse(Array(("{" + keys.joined(separator: ",") + "}").utf8))
        #expect(try JSONReader(big).int("k39") == 39)
        #expect(try JSONReader(big).int("k40") == nil)
    }

    @Test func quotingMatchesTheScalarLoop() {
        let strings = ["", "plain", "with space", "q\"uote", "back\\slash", "slash/", "tab\tnl\nre\r", "\u{1}\u{1F}\u{7F}",
                       "é", "\u{85}\u{9B}", "\u{202E}rtl", "\u{200B}", "日本語", "😀", "\u{E0001}", "~", " "]
        for s in strings {
            var new = "", old = ""
            JSONValue.quote(s, into: &new)
            ReferenceQuote.quote(s, into: &old)
            #expect(new == old, "\(s.debugDescription)")
        }
        #expect(JSONValue.object(["b": .string("x/y"), "a": .array([.number("1"), .null, .bool(true)])]).serialized
                == "{\"a\":[1,null,true],\"b\":\"x/y\"}")
    }

    @Test func uuidTextMatchesFoundation() {
        for _ in 0..<200 {
            let u = UUID()
            #expect(u.lowercasedString == u.uuidString.lowercased())
            #expect(UUID.parse(u.uuidString) == u)
            #expect(UUID.parse(u.lowercasedString) == u)
        }
        let id = "6f1c9c2e-3a5b-4d7e-9f00-112233445566"
        for text in [id, id.uppercased(), " " + id.dropLast(), "+" + id.dropFirst(), "0x" + id.dropFirst(2), String(id.dropLast()),
                     id + " ", id.replacingOccurrences(of: "-", with: ""), "6f1c9c2e_3a5b-4d7e-9f00-112233445566",
                     "6f1c9c2g-3a5b-4d7e-9f00-112233445566", "", "p1"] {
            #expect(UUID.parse(text) == UUID(uuidString: text), "\(text)")
        }
    }

    @Test func plainNamesSkipTheScalarRulesOnlyWhenTheyWouldPass() {
        #expect(ProfileName.problems("office vpn") == [])
        #expect(ProfileName.problems(String(repeating: "a", count: 64)) == [])
        #expect(ProfileName.problems(String(repeating: "a", count: 65)) == ["longer than 64 characters"])
        #expect(ProfileName.problems("-x") == ["'-x' starts with '-', which reads as an option"])
        #expect(ProfileName.problems("a/b") == ["contains a control character or '/'"])
        #expect(ProfileName.problems(" a") == ["has leading or trailing spaces"])
        #expect(ProfileName.problems("6f1c9c2e-3a5b-4d7e-9f00-112233445566") == ["looks like a UUID, which would be ambiguous with profile ids"])
        #expect(ProfileName.problems(" f1c9c2e-3a5b-4d7e-9f00-112233445566").contains("looks like a UUID, which would be ambiguous with profile ids"))
        #expect(!ProfileName.isPlainlyFine(String(repeating: "a", count: 36)))
    }
}
