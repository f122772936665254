import Testing
@testable import VPNCore

@Suite struct KeyTrackerTests {
    func read(_ json: String, full: Bool) throws -> KeyTracker {
        let document = try JSONDocument(parsing: Array(json.utf8))
        let tracker = full ? KeyTracker() : KeyTracker(counting: document)
        let r = JSONReader(document, tracker: tracker)
        _ = try r.string("name")
        _ = try r.optional("inner")?.int("mtu")
        _ = try r.optional("map")?.stringMap()
        return tracker
    }

    @Test func countingAndFullAgree() throws {
        for (json, unknown) in [
            (#"{"name":"a","inner":{"mtu":1},"map":{"x":"y"}}"#, [String]()),
            (#"{"name":"a","inner":{"MTU":1}}"#, ["inner.MTU"]),
            (#"{"nmae":"a","inner":{}}"#, ["nmae"]),
            (#"{"name":"a","inner":{"mtu":null,"extra":[1]}}"#, ["inner.extra"]),
        ] {
            #expect(try read(json, full: false).hasUnknownKeys == !unknown.isEmpty, "\(json)")
            let full = try read(json, full: true)
            #expect(full.hasUnknownKeys == !unknown.isEmpty)
            #expect(full.unknownKeys().map { $0.path.isEmpty ? $0.key : "\($0.path).\($0.key)" } == unknown)
        }
        #expect(try read(#"{"inner":{"MTU":1}}"#, full: true).unknownKeys().first?.suggestions == ["mtu"])
    }

    /// No decoder reads 65 keys of one object: the counting tracker says so without a bit for each.
    @Test func aWideObjectCountsAsUnknown() throws {
        let members = (0..<70).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(try read("{\"name\":\"a\",\"inner\":{\"mtu\":1,\(members)}}", full: false).hasUnknownKeys)
    }
}
