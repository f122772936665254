import Testing
@testable import VPNCore

@Suite struct JSONWriterTests {
    /// Commas between members and elements at every depth, none after the last.
    @Test func nestedContainersAreSeparated() throws {
        var w = JSONWriter()
        w.object { w in
            w.key("a")
            w.array { w in
                w.object { w in w.member("x", 1); w.member("y", [String]()) }
                w.object { _ in }
                w.null()
                w.array { w in w.string("s"); w.bool(false) }
            }
            w.member("b", "q\"\n")
            w.member("c", nil as String?)
            w.object("d") { w in w.member("e", true); w.member("f", -7 as Int?) }
            w.member("g", ["1", "2"])
        }
        #expect(w.text == #"{"a":[{"x":1,"y":[]},{},null,["s",false]],"b":"q\"\n","c":null,"d":{"e":true,"f":-7},"g":["1","2"]}"#)
        // What it writes parses, and reads back the same.
        let parsed = try JSONDocument(parsing: w.bytes).value(at: 0)
        var again: [UInt8] = []
        parsed.write(to: &again)
        #expect(again == w.bytes)
    }

    @Test func stringsAreQuotedAsJSONValueQuotesThem() {
        let s = "tab\there \u{202E}evil \u{1F600}"
        var w = JSONWriter()
        w.array { w in w.string(s) }
        #expect(w.text == JSONValue.array([.string(s)]).serialized)
    }
}
