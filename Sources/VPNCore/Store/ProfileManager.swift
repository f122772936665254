import FoundationEssentials

/// The NEVPNManager shape over the preferences store: nothing is known until
/// `load()`, and a save or start works only from a freshly loaded view.
public final class ProfileManager {
    public let store: PreferencesStore
    public private(set) var profiles: [Profile] = []
    public private(set) var isLoaded = false

    public init(store: PreferencesStore) {
        self.store = store
    }

    /// loadFromPreferences
    public func load() throws {
        profiles = try store.load()
        isLoaded = true
    }

    /// Keeps only the profiles `keep` accepts (those an agent's caller may
    /// see): the others read as absent.
    public func restrict(to keep: (Profile) -> Bool) {
        profiles = profiles.filter(keep)
    }

    /// Status before a load is `invalid`, never a guess. Runtime status comes
    /// from the run directory and the live system (the tunnel issue).
    public func status(of id: UUID) -> VPNStatus {
        guard isLoaded, profiles.contains(where: { $0.id == id }) else { return .invalid }
        return .disconnected
    }

    /// Finds a profile by exact name, or by UUID (any case).
    public func profile(named reference: String) throws -> Profile {
        guard isLoaded else {
            throw VPNError(.configurationStale, L("the preferences were not loaded"), hint: L("load before reading"))
        }
        if let id = UUID(uuidString: reference), let p = profiles.first(where: { $0.id == id }) { return p }
        if let p = profiles.first(where: { $0.name == reference }) { return p }
        let names = profiles.map(\.name)
        let close = Suggest.closest(to: reference, among: names, limit: 3)
        let message = L("no profile named \(reference.quotedForMessage)")
        if !close.isEmpty {
            throw VPNError(.configurationUnknown, message, hint: Suggest.question(close))
        }
        throw VPNError(.configurationUnknown, message, remedy: names.isEmpty ? .importFirst : .list(again: false))
    }

    /// saveToPreferences: refuses when this manager's view is older than the store.
    @discardableResult
    public func save(_ profile: Profile) throws -> Profile {
        guard isLoaded else {
            throw VPNError(.configurationStale, L("cannot save '\(profile.name)' before the preferences are loaded"),
                           hint: L("load the preferences first"))
        }
        let saved = try store.save(profile)
        if let i = profiles.firstIndex(where: { $0.id == saved.id }) { profiles[i] = saved } else { profiles.append(saved) }
        return saved
    }

    /// removeFromPreferences
    public func remove(_ profile: Profile) throws {
        try store.remove(id: profile.id, revision: profile.revision)
        profiles.removeAll { $0.id == profile.id }
    }
}

/// Close matches for "did you mean", by edit distance.
public enum Suggest {
    /// "did you mean 'a'?", "did you mean 'a', 'b' or 'c'?"; empty with none.
    /// The one wording of every suggestion vpnctl makes.
    public static func question(_ close: [String]) -> String {
        guard let last = close.last else { return "" }
        if close.count == 1 { return L("did you mean \(last.quotedForMessage)?") }
        return L("did you mean \(close.dropLast().map(\.quotedForMessage).joined(separator: ", ")) or \(last.quotedForMessage)?")
    }

    public static func closest(to word: String, among candidates: [String], limit: Int = 1) -> [String] {
        guard word.utf8.count <= 256 else { return [] }
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        let threshold = max(2, word.count / 3)
        // A word it starts, or one close enough that most of the word is kept
        // ('imp' is not 'app': two of its three letters changed).
        return scored.filter { $0.1 <= threshold && $0.1 < word.count - 1 || $0.0.lowercased().hasPrefix(word.lowercased()) }
            // Closest first; at the same distance one the word starts, then one of
            // the word's own length (a transposition: 'stauts' is 'status' before 'stats').
            .sorted {
                if $0.1 != $1.1 { return $0.1 < $1.1 }
                let p0 = $0.0.lowercased().hasPrefix(word.lowercased()), p1 = $1.0.lowercased().hasPrefix(word.lowercased())
                if p0 != p1 { return p0 }
                let l0 = abs($0.0.count - word.count), l1 = abs($1.0.count - word.count)
                return l0 != l1 ? l0 < l1 : $0.0 < $1.0
            }
            .prefix(limit).map(\.0)
    }

    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count)
        var cur = [Int](repeating: 0, count: b.count + 1)
        var before = prev
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                // Two neighbours swapped is one typo (optimal string alignment).
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { cur[j] = min(cur[j], before[j - 2] + 1) }
            }
            before = prev
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
