import FoundationEssentials

/// A three-way merge of a profile's JSON at the level of its fields, for
/// `edit --from FILE --rebase`: `base` is the revision the kept edit was made
/// from, `theirs` the profile as stored now, `ours` the kept edit. A field
/// changed on one side only takes that side's value; one changed on both
/// sides to different values is a conflict. Objects are merged member by
/// member; an array is one field, except an array of objects of the same
/// length on all three sides (a WireGuard profile's peers), which is merged
/// element by element. An absent member is a value of its own: adding and
/// removing a field are changes like any other.
public enum ProfileMerge {
    /// A field both sides changed, each to something else; nil is absent.
    public struct Conflict: Equatable, Sendable {
        /// The field's path, as validation names it: `protocol.peers[0].endpoint`.
        public var field: String
        public var base: JSONValue?
        public var ours: JSONValue?
        public var theirs: JSONValue?
    }

    public struct Result: Equatable, Sendable {
        /// The merged profile (with theirs where a field conflicts).
        public var merged: JSONValue
        public var conflicts: [Conflict]
        /// The fields the merge took from ours: the kept edit's changes.
        public var fromOurs: [String]
        /// The fields changed meanwhile that the merge kept.
        public var fromTheirs: [String]
    }

    /// Top-level members the store manages, never merged: theirs is taken.
    public static let managed: Set<String> = ["revision"]

    public static func merge(base: JSONValue, ours: JSONValue, theirs: JSONValue) -> Result {
        var state = Result(merged: theirs, conflicts: [], fromOurs: [], fromTheirs: [])
        guard case .object(let b) = base, case .object(let o) = ours, case .object(let t) = theirs else {
            state.merged = merge("", base, ours, theirs, &state) ?? theirs
            return state
        }
        state.merged = .object(mergeObjects("", b, o, t, &state, skipping: managed))
        return state
    }

    static func merge(_ path: String, _ base: JSONValue?, _ ours: JSONValue?, _ theirs: JSONValue?, _ state: inout Result) -> JSONValue? {
        if ours == theirs { return theirs }
        if ours == base {
            state.fromTheirs += changes(path, base, theirs)
            return theirs
        }
        if theirs == base {
            state.fromOurs += changes(path, base, ours)
            return ours
        }
        switch (base, ours, theirs) {
        case (.object(let b)?, .object(let o)?, .object(let t)?):
            return .object(mergeObjects(path, b, o, t, &state, skipping: []))
        case (nil, .object(let o)?, .object(let t)?):
            // Added on both sides: merged as if from an empty object.
            return .object(mergeObjects(path, JSONObject(), o, t, &state, skipping: []))
        case (.array(let b)?, .array(let o)?, .array(let t)?)
            where b.count == o.count && o.count == t.count && (b + o + t).allSatisfy(\.isObject):
            return .array((0..<b.count).map { i in
                merge("\(path)[\(i)]", b[i], o[i], t[i], &state) ?? t[i]
            })
        default:
            state.conflicts.append(Conflict(field: path, base: base, ours: ours, theirs: theirs))
            return theirs
        }
    }

    /// The fields that differ between `a` and `b`, walked as the merge walks them.
    static func changes(_ path: String, _ a: JSONValue?, _ b: JSONValue?) -> [String] {
        if a == b { return [] }
        switch (a, b) {
        case (.object(let x)?, .object(let y)?):
            var keys = x.members.map(\.key)
            keys += y.members.map(\.key).filter { x[$0] == nil }
            return keys.flatMap { changes(path.isEmpty ? $0 : "\(path).\($0)", x[$0], y[$0]) }
        case (.array(let x)?, .array(let y)?) where x.count == y.count && (x + y).allSatisfy(\.isObject):
            return x.indices.flatMap { changes("\(path)[\($0)]", x[$0], y[$0]) }
        default:
            return [path]
        }
    }

    /// Members in theirs' order, then those only ours has, in ours' order.
    static func mergeObjects(_ path: String, _ b: JSONObject, _ o: JSONObject, _ t: JSONObject, _ state: inout Result,
                             skipping: Set<String>) -> JSONObject {
        var keys = t.members.map(\.key)
        var seen = Set(keys)
        for m in o.members + b.members where !seen.contains(m.key) {
            keys.append(m.key)
            seen.insert(m.key)
        }
        var members: [JSONObject.Member] = []
        for key in keys {
            if skipping.contains(key) {
                if let v = t[key] { members.append((key: key, value: v)) }
                continue
            }
            let field = path.isEmpty ? key : "\(path).\(key)"
            if let v = merge(field, b[key], o[key], t[key], &state) { members.append((key: key, value: v)) }
        }
        return JSONObject(members)
    }
}

extension ProfileMerge.Conflict {
    /// "protocol.mtu: the edit sets 1400, the stored profile now has 1420 (was 1380)".
    public var text: String {
        let d = ProfileMerge.describe
        let here = ours.map { L("the edit sets \(d($0))") } ?? L("the edit removes it")
        let there = theirs.map { L("the stored profile now has \(d($0))") } ?? L("the stored profile no longer has it")
        let before = base.map { L("was \(d($0))") } ?? L("was not set")
        return L("\(field): \(here), \(there) (\(before))")
    }
}

extension ProfileMerge {
    /// A value for a message: its compact JSON, cut to 60 characters.
    static func describe(_ value: JSONValue) -> String {
        value.serialized.abbreviated(60).escapingControls(keepLineBreaks: false)
    }
}

extension JSONValue {
    var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}
