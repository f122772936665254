/// Records the keys a decoder asked each object for, so that the members it
/// never asked for (a misspelt or unknown key, which a decoder would drop
/// silently) can be named with the key it most likely meant. Strict reads
/// only: a profile a person wrote or edited, and the preferences on load.
///
/// A counting tracker only answers whether there is an unknown key: it is
/// made for one document and keeps, for each object of it, a word with a
/// bit for each member found and one for having been asked at all; no
/// strings, no registration, so that a store of a thousand profiles loads
/// at nearly the cost of an unchecked read. On the rare file that has an
/// unknown key, a second, full read names it.
public final class KeyTracker {
    struct Entry {
        let object: JSONReader
        var asked: [String] = []
    }
    let full: Bool
    var entries: [Entry] = []
    /// Counting: the document, and a word for each of its tokens (used for
    /// objects only): bit 63 once asked, bit n once member n was found.
    let counted: JSONDocument?
    let marks: UnsafeMutableBufferPointer<UInt64>
    static let askedBit: UInt64 = 1 << 63

    /// A full tracker: keeps every asked key and every object, for `unknownKeys()`.
    public init() {
        full = true
        counted = nil
        marks = UnsafeMutableBufferPointer(start: nil, count: 0)
    }

    /// A counting tracker, for readers of `document` only.
    public init(counting document: JSONDocument) {
        full = false
        counted = document
        marks = .allocate(capacity: document.tokens.count)
        marks.initialize(repeating: 0)
    }

    deinit {
        marks.deallocate()
    }

    /// The slot of the object at `token`: an entry of a full tracker, the
    /// token itself for a counting one.
    func register(_ document: JSONDocument, _ token: Int, root: String) -> Int {
        guard full else {
            precondition(document === counted, "a counting tracker reads only the document it was made for")
            return token
        }
        entries.append(Entry(object: JSONReader(document, at: token, root: root, tracker: nil)))
        return entries.count - 1
    }

    func asked(_ key: String, found position: Int?, in slot: Int) {
        guard slot >= 0 else { return }
        if full {
            entries[slot].asked.append(key)
            return
        }
        var mark = marks[slot] | KeyTracker.askedBit
        if let position, position < 63 { mark |= 1 << UInt64(position) }
        marks[slot] = mark
    }

    /// Whether some object has a member its decoder never asked for (an
    /// object of more than 63 members counts as having one: no decoder
    /// reads that many).
    public var hasUnknownKeys: Bool {
        if full { return !unknownKeys().isEmpty }
        guard let document = counted else { return false }
        for (token, mark) in marks.enumerated() where mark & KeyTracker.askedBit != 0 {
            let members = Int(document.tokens[token].count)
            if members > 63 || (mark & ~KeyTracker.askedBit).nonzeroBitCount != members { return true }
        }
        return false
    }

    /// A member no decoder asked for, with the known keys closest to it.
    public struct UnknownKey: Equatable, Sendable, CustomStringConvertible {
        /// Where the object is, e.g. profiles[2].protocol.peers[0]; empty at the top.
        public let path: String
        public let key: String
        public let suggestions: [String]

        public var description: String {
            let at = path.isEmpty ? "" : " in \(path)"
            let hint = suggestions.isEmpty ? "" : " (\(Suggest.question(suggestions)))"
            return "unknown key \(key.quotedForMessage)\(at)\(hint)"
        }
    }

    /// Unknown members in document order (a full tracker's; a counting
    /// one has none to name). Only objects whose decoder read at least one
    /// key are checked: an object read as a whole (a value the decoder
    /// skipped) is not the decoder's to judge.
    public func unknownKeys() -> [UnknownKey] {
        var out: [UnknownKey] = []
        for e in entries where !e.asked.isEmpty {
            for key in (try? e.object.keys()) ?? [] where !e.asked.contains(key) {
                var seen = Set<String>()
                let known = e.asked.filter { seen.insert($0).inserted }
                out.append(UnknownKey(path: e.object.path, key: key,
                                      suggestions: Suggest.closest(to: key, among: known, limit: 2)))
            }
        }
        return out
    }
}

