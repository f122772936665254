import Foundation
import Testing
@testable import VPNCore

/// Issue 36 item 5: the three-way merge behind `edit --from FILE --rebase`.
@Suite struct ProfileMergeTests {
    static let base = """
        {"id":"x","name":"office","revision":1,"protocol":{"type":"wireguard","mtu":1380,"dns":["1.1.1.1"],
         "addresses":["10.0.0.2/32"],"peers":[{"publicKey":"k","endpoint":"198.18.0.1:51820","persistentKeepalive":25}]}}
        """

    func value(_ text: String) throws -> JSONValue { try JSONSyntax.parse(Array(text.utf8)) }

    /// The base with `replacements` made to its text.
    func changed(_ pairs: [(String, String)]) throws -> JSONValue {
        var text = Self.base
        for (a, b) in pairs {
            #expect(text.contains(a), "the base has \(a)")
            text = text.replacingOccurrences(of: a, with: b)
        }
        return try value(text)
    }

    func member(_ v: JSONValue, _ path: String...) -> JSONValue? {
        var at: JSONValue? = v
        for key in path {
            if case .object(let o)? = at { at = o[key] } else if case .array(let a)? = at, let i = Int(key), i < a.count { at = a[i] } else { return nil }
        }
        return at
    }

    @Test func item5_changesToDifferentFieldsAreBothKept() throws {
        let base = try value(Self.base)
        let ours = try changed([("\"mtu\":1380", "\"mtu\":1400")])
        let theirs = try changed([("[\"1.1.1.1\"]", "[\"9.9.9.9\"]"), ("\"revision\":1", "\"revision\":2")])
        let r = ProfileMerge.merge(base: base, ours: ours, theirs: theirs)
        #expect(r.conflicts.isEmpty)
        #expect(member(r.merged, "protocol", "mtu") == .number("1400"))
        #expect(member(r.merged, "protocol", "dns") == .array([.string("9.9.9.9")]))
        #expect(member(r.merged, "revision") == .number("2"), "the revision is the store's, never merged")
        #expect(r.fromOurs == ["protocol.mtu"])
        #expect(r.fromTheirs == ["protocol.dns"])
    }

    @Test func item5_theSameFieldChangedOnBothSidesIsTheOnlyConflict() throws {
        let ours = try changed([("\"mtu\":1380", "\"mtu\":1400"), ("\"name\":\"office\"", "\"name\":\"work\"")])
        let theirs = try changed([("\"mtu\":1380", "\"mtu\":1420"), ("[\"1.1.1.1\"]", "[\"9.9.9.9\"]")])
        let r = ProfileMerge.merge(base: try value(Self.base), ours: ours, theirs: theirs)
        #expect(r.conflicts.map(\.field) == ["protocol.mtu"])
        let c = try #require(r.conflicts.first)
        #expect(c.base == .number("1380") && c.ours == .number("1400") && c.theirs == .number("1420"))
        #expect(c.text == "protocol.mtu: the edit sets 1400, the stored profile now has 1420 (was 1380)")
        #expect(r.fromOurs == ["name"])
    }

    @Test func item5_theSameChangeOnBothSidesIsNoConflict() throws {
        let both = try changed([("\"mtu\":1380", "\"mtu\":1400")])
        let r = ProfileMerge.merge(base: try value(Self.base), ours: both, theirs: both)
        #expect(r.conflicts.isEmpty)
        #expect(r.fromOurs.isEmpty, "nothing of the edit is left to apply")
        #expect(r.merged == both)
    }

    @Test func item5_aFieldAddedOrRemovedIsAChangeLikeAnyOther() throws {
        let base = try value(Self.base)
        // Ours adds enabled and removes mtu; theirs adds a search domain field elsewhere.
        let ours = try changed([("\"name\":\"office\"", "\"name\":\"office\",\"enabled\":false"), ("\"mtu\":1380,", "")])
        let theirs = try changed([("\"type\":\"wireguard\"", "\"type\":\"wireguard\",\"table\":\"off\"")])
        let r = ProfileMerge.merge(base: base, ours: ours, theirs: theirs)
        #expect(r.conflicts.isEmpty)
        #expect(member(r.merged, "enabled") == .bool(false))
        #expect(member(r.merged, "protocol", "mtu") == nil, "removed by the edit")
        #expect(member(r.merged, "protocol", "table") == .string("off"), "added meanwhile")
        #expect(Set(r.fromOurs) == ["enabled", "protocol.mtu"])

        // Removed on one side, changed on the other: a conflict, said in words.
        let changedMeanwhile = try changed([("\"mtu\":1380", "\"mtu\":1420")])
        let removedHere = try changed([("\"mtu\":1380,", "")])
        let c = ProfileMerge.merge(base: base, ours: removedHere, theirs: changedMeanwhile).conflicts
        #expect(c.map(\.field) == ["protocol.mtu"])
        #expect(c.first?.text == "protocol.mtu: the edit removes it, the stored profile now has 1420 (was 1380)")

        // Added on both sides with different values.
        let addedHere = try changed([("\"name\":\"office\"", "\"name\":\"office\",\"enabled\":false")])
        let addedThere = try changed([("\"name\":\"office\"", "\"name\":\"office\",\"enabled\":true")])
        #expect(ProfileMerge.merge(base: base, ours: addedHere, theirs: addedThere).conflicts.map(\.field) == ["enabled"])
    }

    @Test func item5_peersAreMergedOneByOneAndOtherArraysAsAWhole() throws {
        let base = try value(Self.base)
        let ours = try changed([("\"persistentKeepalive\":25", "\"persistentKeepalive\":15")])
        let theirs = try changed([("198.18.0.1:51820", "198.18.0.9:51820")])
        let r = ProfileMerge.merge(base: base, ours: ours, theirs: theirs)
        #expect(r.conflicts.isEmpty)
        #expect(member(r.merged, "protocol", "peers", "0", "persistentKeepalive") == .number("15"))
        #expect(member(r.merged, "protocol", "peers", "0", "endpoint") == .string("198.18.0.9:51820"))
        #expect(r.fromOurs == ["protocol.peers[0].persistentKeepalive"])

        // A list of strings is one field: two different edits of it conflict.
        let a = try changed([("[\"10.0.0.2/32\"]", "[\"10.0.0.3/32\"]")])
        let b = try changed([("[\"10.0.0.2/32\"]", "[\"10.0.0.2/32\",\"fd00::2/128\"]")])
        #expect(ProfileMerge.merge(base: base, ours: a, theirs: b).conflicts.map(\.field) == ["protocol.addresses"])
    }
}
