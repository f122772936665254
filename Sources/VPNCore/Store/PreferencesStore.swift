#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Synchronization
import VPNSystem

/// The on-disk form of the preferences.
public struct Preferences: Encodable, Equatable, Sendable {
    public static let currentSchemaVersion = 1
    public var schemaVersion: Int
    public var profiles: [Profile]

    public init(profiles: [Profile] = []) {
        schemaVersion = Preferences.currentSchemaVersion
        self.profiles = profiles
    }
}

/// The JSON preferences store: one file, replaced atomically under a lock.
/// The counterpart of the system preferences behind NEVPNManager.
public final class PreferencesStore: @unchecked Sendable {
    public let directory: String
    public var path: String { directory + "/preferences.json" }
    var lockPath: String { directory + "/.preferences.lock" }
    public let secrets: SecretStore
    /// Runs between the synced temp write and the rename. Tests inject
    /// failures here; VPNCTL_TEST_FAULT=crash-before-rename makes it a crash.
    public var beforeReplace: (() throws -> Void)? = nil

    /// The most `load` reads: far more than any set of profiles needs.
    public static let maximumSize = 16 << 20

    public init(directory: String) {
        self.directory = directory
        secrets = SecretStore(configDirectory: directory)
    }

    /// Reads every profile. A missing file is an empty store; a malformed one
    /// is reported with its path, line and column, and left untouched.
    public func load() throws -> [Profile] {
        try read().profiles
    }

    func read() throws -> Preferences {
        let bytes: [UInt8]
        do {
            // Root acts on what this file says: a directory or file that
            // somebody else can write is refused before it is read.
            guard try FileSystem.info(FileSystem.normalized(directory)) != nil else { return Preferences() }
            try FileSystem.checkTrustedDirectory(directory)
            guard try FileSystem.checkTrustedFile(path) != nil,
                  let b = try FileSystem.readFileIfPresent(path, limit: PreferencesStore.maximumSize) else { return Preferences() }
            bytes = b
        } catch {
            throw storeError(error)
        }
        if let last = PreferencesStore.lastRead.withLock({ $0[path] }), last.bytes == bytes { return last.preferences }
        let preferences = try PreferencesCodec.decode(bytes, path: path)
        PreferencesStore.lastRead.withLock { $0[path] = (bytes, preferences) }
        return preferences
    }

    /// The last file read at each path and what it decoded to: the agent
    /// reads the store for every request (to decide, then to answer), and
    /// the same bytes decode the same. The file is read each time.
    static let lastRead = Mutex<[String: (bytes: [UInt8], preferences: Preferences)]>([:])

    /// Saves one profile: a new one (revision 0) is added; an existing one must
    /// carry the stored revision, or the save fails with configurationStale.
    /// Returns the profile as stored, with its new revision.
    @discardableResult
    public func save(_ profile: Profile) throws -> Profile {
        try transaction { prefs in try place(profile, in: &prefs) }
    }

    /// Saves and removes several profiles in one write: every change or none.
    /// Each save follows `save`'s rules. The removed profiles' secrets stay:
    /// the caller removes them once the write is done. Returns the saved
    /// profiles as stored.
    @discardableResult
    public func commit(saving: [Profile], removing: [UUID] = []) throws -> [Profile] {
        let saved: [Profile] = try transaction { prefs in
            for id in removing {
                guard let i = prefs.profiles.firstIndex(where: { $0.id == id }) else {
                    throw VPNError(.configurationStale, L("profile \(id.lowercasedString) was removed meanwhile"), remedy: .list(again: true))
                }
                prefs.profiles.remove(at: i)
            }
            return try saving.map { try place($0, in: &prefs) }
        }
        return saved
    }

    /// One save inside a transaction: a new profile added, an existing one
    /// replaced if it carries the stored revision.
    func place(_ profile: Profile, in prefs: inout Preferences) throws -> Profile {
        var saved = profile
        if let i = prefs.profiles.firstIndex(where: { $0.id == profile.id }) {
            let stored = prefs.profiles[i]
            guard stored.revision == profile.revision else {
                throw VPNError(.configurationStale,
                               L("profile '\(stored.name)' changed since it was loaded (loaded revision \(profile.revision), stored revision \(stored.revision))"),
                               hint: L("load it again and redo the change"))
            }
            try checkUniqueName(profile, in: prefs.profiles)
            let (next, overflow) = stored.revision.addingReportingOverflow(1)
            guard !overflow else {
                throw VPNError(.configurationReadWriteFailed, L("profile '\(stored.name)' is at the highest revision (\(stored.revision))"),
                               hint: L("set its revision in \(path) to a smaller number by hand"))
            }
            saved.revision = next
            prefs.profiles[i] = saved
        } else {
            guard profile.revision == 0 else {
                throw VPNError(.configurationStale,
                               L("profile '\(profile.name)' was removed since it was loaded"),
                               remedy: .list(again: true))
            }
            try checkUniqueName(profile, in: prefs.profiles)
            saved.revision = 1
            prefs.profiles.append(saved)
        }
        return saved
    }

    /// Removes a profile and its secrets. With `revision`, refuses if it changed meanwhile.
    public func remove(id: UUID, revision: Int? = nil) throws {
        try transaction { prefs in
            guard let i = prefs.profiles.firstIndex(where: { $0.id == id }) else {
                throw VPNError(.configurationUnknown, L("no profile with id \(id.lowercasedString)"))
            }
            if let revision, prefs.profiles[i].revision != revision {
                throw VPNError(.configurationStale, L("profile '\(prefs.profiles[i].name)' changed since it was loaded"),
                               hint: L("load it again and redo the change"))
            }
            prefs.profiles.remove(at: i)
        }
        try secrets.removeAll(id)
    }

    /// Under the lock no other writer is mid-write, so any temp file left
    /// here belongs to a writer that crashed before its rename.
    func removeAbandonedTempFiles() {
        guard let names = try? FileSystem.listAll(directory) else { return }
        for name in names where name.hasPrefix(".preferences.json.tmp-") {
            try? FileSystem.remove(directory + "/" + name)
        }
    }

    func checkUniqueName(_ profile: Profile, in profiles: [Profile]) throws {
        if profiles.contains(where: { $0.name == profile.name && $0.id != profile.id }) {
            throw VPNError(.configurationInvalid, L("a profile named '\(profile.name)' already exists"),
                           hint: L("choose another name (import --name NAME)"))
        }
    }

    /// Read-modify-write under the lock. The file is replaced only when
    /// `body` returns; a throw leaves it as it was.
    func transaction<T>(_ body: (inout Preferences) throws -> T) throws -> T {
        let lock: FileLock
        do {
            try FileSystem.ensurePrivateDirectory(directory)
            lock = try FileLock(path: lockPath)
        } catch {
            throw storeError(error)
        }
        defer { withExtendedLifetime(lock) {} }
        removeAbandonedTempFiles()
        var prefs = try read()
        let result = try body(&prefs)
        let bytes = try PreferencesCodec.encode(prefs)
        do {
            try AtomicFile.write(bytes, to: path, mode: 0o600, beforeRename: beforeReplace)
        } catch {
            throw storeError(error)
        }
        return result
    }
}

/// JSON in and out, with error positions a person can act on.
public enum PreferencesCodec {
    public static func encode(_ prefs: Preferences) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(prefs)) + [0x0A]
    }

    public static func decode(_ bytes: [UInt8], path: String) throws -> Preferences {
        var hint: String { L("fix the file by hand (vpnctl never rewrites a file it cannot read)") }
        let prefs: Preferences
        let document: JSONDocument
        let tally: KeyTracker
        do {
            document = try JSONDocument(parsing: bytes)
            tally = KeyTracker(counting: document)
            prefs = try Preferences(json: JSONReader(document, tracker: tally))
        } catch let problem as JSONSyntax.Problem {
            throw VPNError(.configurationReadWriteFailed,
                           L("\(path):\(problem.line):\(problem.column): malformed JSON: \(problem.message)"), hint: hint)
        } catch let problem as JSONDecodeProblem {
            throw VPNError(.configurationReadWriteFailed, "\(path): \(problem)", hint: hint)
        }
        // A key this vpnctl does not know would be dropped by the next save:
        // refuse to load rather than lose it.
        let tracker = KeyTracker()
        if tally.hasUnknownKeys, (try? Preferences(json: JSONReader(document, tracker: tracker))) != nil,
           let unknown = tracker.unknownKeys().first, prefs.schemaVersion <= Preferences.currentSchemaVersion {
            let line = JSONSyntax.line(ofKey: unknown.key, in: bytes).map { ":\($0)" } ?? ""
            throw VPNError(.configurationReadWriteFailed, "\(path)\(line): \(unknown)",
                           hint: L("rename or remove the key by hand (vpnctl never rewrites a file it cannot read)"))
        }
        if prefs.schemaVersion > Preferences.currentSchemaVersion {
            throw VPNError(.configurationReadWriteFailed,
                           L("\(path): schemaVersion \(prefs.schemaVersion) is newer than this vpnctl understands (\(Preferences.currentSchemaVersion))"),
                           hint: L("upgrade vpnctl"))
        }
        if prefs.schemaVersion < 1 {
            throw VPNError(.configurationReadWriteFailed, L("\(path): schemaVersion \(prefs.schemaVersion) is not valid"))
        }
        // Ids as text: a Set<UUID> costs a start-up search of every
        // conformance in this static binary for UUID's Hashable (~250,000
        // instructions, a sixth of a `status --json`); String's is found already.
        var seen = Set<String>(), names = Set<String>()
        for p in prefs.profiles {
            var which: String { L("profile \(p.id.lowercasedString)") }
            if let problem = ProfileName.problems(p.name).first {
                throw VPNError(.configurationReadWriteFailed, L("\(path): \(which) has an invalid name \(p.name.quotedForMessage): \(problem)"),
                               hint: hint)
            }
            if p.revision < 0 {
                throw VPNError(.configurationReadWriteFailed,
                               L("\(path): \(which): revision \(p.revision) is out of range (0–\(Int.max))"), hint: hint)
            }
            if !seen.insert(p.id.lowercasedString).inserted {
                throw VPNError(.configurationReadWriteFailed, L("\(path): two profiles share the id \(p.id.lowercasedString)"))
            }
            if !names.insert(p.name).inserted {
                throw VPNError(.configurationReadWriteFailed, L("\(path): two profiles share the name \(p.name.quotedForMessage)"))
            }
        }
        return prefs
    }
}
