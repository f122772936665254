import FoundationEssentials
import VPNSystem

/// What a plan does to one profile.
public enum ImportChange: String, Encodable, Sendable {
    case created, updated, unchanged, removed
}

/// One profile's part of an import plan.
public struct PlannedChange: Sendable {
    public let change: ImportChange
    /// The profile as it will be stored (unchanged or removed: as it is
    /// stored); after a commit, as stored, with its new revision.
    public internal(set) var profile: Profile
    /// The stored profile this updates, leaves or removes (nil when created).
    public let previous: Profile?
    /// The secret values the file carried, by name; a commit writes them
    /// for a created or updated profile.
    public let secrets: [String: [UInt8]]
    /// Secrets the stored profile names and the new one no longer does,
    /// removed once the store is written (a replace).
    public let secretsToRemove: [String]
    /// Secrets the file leaves out that keep the value set here (a replace).
    public let keptSecrets: [String]
    /// The trust anchors the file carried for this profile, by fingerprint.
    public let anchors: [String: [UInt8]]
    /// What the file said to the user about this profile.
    public let notes: [String]
    /// What the file says that has no effect here (for the summary).
    public let noEffect: [String]
    /// The file it came from (removed: the file or configuration profile it had come from).
    public let source: String

    /// What the tunnel will do.
    public var summary: ImportSummary {
        ImportSummary.of(profile, noEffect: noEffect, stored: Set(secrets.keys).union(keptSecrets))
    }
    /// Whether a commit writes this profile.
    public var writes: Bool { change == .created || change == .updated }
}

/// What an import would do, computed without changing anything: the value a
/// front end prints for a dry run and hands to `ProfileImport.commit`.
public struct ImportPlan: Sendable {
    public internal(set) var changes: [PlannedChange]
    /// Every trust anchor to install, by fingerprint.
    public let anchors: [String: [UInt8]]

    /// Whether anything would change.
    public var changed: Bool { changes.contains { $0.change != .unchanged } }
    /// The stored profiles the plan removes.
    public var removed: [Profile] { changes.filter { $0.change == .removed }.compactMap(\.previous) }
}

/// What a commit could not finish after the store was written: files of a
/// removed profile, or a secret a replaced profile no longer names.
public struct ImportLeftover: Sendable {
    public let profile: Profile
    /// The secret's name; nil for a removed profile's files.
    public let secret: String?
    public let error: VPNError
}

/// A committed plan: the changes with the profiles as stored.
public struct ImportOutcome: Sendable {
    public let plan: ImportPlan
    public let leftovers: [ImportLeftover]
}

/// A profile a set of files asks for (a .mobileconfig's VPN payload, or a
/// file `apply` reads), before it is matched with the store.
public struct DesiredProfile: Sendable {
    public var origin: ProfileOrigin
    public var result: ImportResult
    public var source: String

    public init(origin: ProfileOrigin, result: ImportResult, source: String) {
        (self.origin, self.result, self.source) = (origin, result, source)
    }

    /// The profile of a single file apply manages: its origin names the file.
    public static func file(_ path: String, _ result: ImportResult) -> DesiredProfile {
        let fileName = path.split(separator: "/").last.map(String.init) ?? path
        return DesiredProfile(origin: ProfileOrigin(profileIdentifier: "file:" + fileName, payloadIdentifier: fileName, managedByApply: true),
                              result: result, source: path)
    }
}

/// Which stored profiles a set of desired profiles replaces.
public enum ImportScope: Sendable {
    /// The profiles a .mobileconfig with this PayloadIdentifier made, read from `source`.
    case configurationProfile(identifier: String, source: String)
    /// The profiles `apply` made.
    case managed
}

/// The one path by which profiles come into the store: `import`,
/// `import --replace`, `create`, a .mobileconfig and `apply`. A file is
/// parsed by its reader, then planned against the store (created, updated,
/// unchanged, removed), then committed with undo. Nothing here prints.
public struct ProfileImport {
    public let store: PreferencesStore
    public let trust: TrustStore
    /// The run directory's records, removed with a removed profile.
    public let runtime: RuntimeStore

    public init(store: PreferencesStore, runtime: RuntimeStore) {
        self.store = store
        self.runtime = runtime
        trust = TrustStore(configDirectory: store.directory)
    }

    /// `import FILE`: a new profile named `name`, or with `replace` the one of
    /// that name updated in place. With `keepID` the profile takes the id the
    /// file names.
    public func planImport(_ result: ImportResult, name: String, source: String, replace: Bool, keepID: Bool) throws -> ImportPlan {
        var result = result
        let existing = try store.load()
        let named = existing.first { $0.name == name }
        if keepID {
            guard let id = result.fileID else {
                throw VPNError.usage(L("\(source) names no profile id (vpnctl's exports do: a '# vpnctl profile id:' line, or the JSON id)"),
                                     hint: L("import it without --keep-id (it gets a new id)"))
            }
            if let other = existing.first(where: { $0.id == id }), other.name != name {
                throw VPNError(.configurationInvalid, L("the id \(id.lowercasedString) is the profile '\(other.name)''s"),
                               hint: L("update that one with: vpnctl import \(source.shellQuoted) --name \(other.name.shellQuoted) --replace"))
            }
            if let named, named.id != id {
                throw VPNError(.configurationInvalid, L("'\(name)' has the id \(named.id.lowercasedString), and \(source) names \(id.lowercasedString)"),
                               hint: L("leave out --keep-id to update '\(name)' keeping its id, or import under another --name"))
            }
            result.profile.id = id
        }
        guard let named else {
            return ImportPlan(changes: [Self.created(result.profile, result, source: source)], anchors: result.anchors)
        }
        guard replace else {
            throw VPNError(.configurationInvalid, L("a profile named '\(name)' already exists"),
                           hint: L("update it in place with --replace, choose another name with --name NAME, or remove the old one first"))
        }
        if named.origin?.managedByApply == true {
            throw VPNError(.configurationInvalid, L("'\(name)' is managed by 'vpnctl apply'; its file there decides what it is"),
                           hint: L("change the file that 'vpnctl apply' reads, or import under another --name"))
        }
        return ImportPlan(changes: [replacing(named, with: result, source: source)], anchors: result.anchors)
    }

    /// `import --replace`: the file decides the tunnel; what the user set here
    /// stays (who may use it, on-demand, enabled). A JSON profile is the whole
    /// profile. Secrets the file leaves out keep their values.
    func replacing(_ old: Profile, with result: ImportResult, source: String) -> PlannedChange {
        var p = result.profile
        p.id = old.id
        p.revision = old.revision
        p.origin = old.origin
        if !result.isWholeProfile {
            var kept = old
            kept.protocol = p.protocol
            p = kept
        }
        let names = p.secretReferences.map(\.name)
        let stale = old.secretReferences.map(\.name).filter { !names.contains($0) }
        let kept = names.filter { result.secrets[$0] == nil && store.secrets.exists(old.id, name: $0) }
        var notes = result.notes
        if !kept.isEmpty {
            notes.removeAll { $0.hasPrefix(ExportMarker.unsetNote([])) }
            notes.append(L("the secrets the file leaves out keep the values set here: \(kept.joined(separator: ", "))"))
        }
        return PlannedChange(change: .updated, profile: p, previous: old, secrets: result.secrets, secretsToRemove: stale,
                             keptSecrets: kept, anchors: result.anchors, notes: notes, noEffect: result.noEffect, source: source)
    }

    /// `create`: a new profile made from options, checked as it would be
    /// saved (its secrets by its provider), its name not taken.
    public func planCreate(_ made: ImportResult) throws -> ImportPlan {
        let profile = made.profile, name = profile.name
        let provider = try ProviderRegistry.provider(for: profile)
        for (n, v) in made.secrets.sorted(by: { $0.key < $1.key }) { try provider.checkSecret(name: n, value: v) }
        let problems = ProfileValidator(secretExists: { made.secrets[$0] != nil }).problems(in: profile)
        if !problems.isEmpty {
            throw VPNError.invalid(problems.count == 1 ? L("profile '\(name)' would be invalid (1 problem)")
                                                       : L("profile '\(name)' would be invalid (\(problems.count) problems)"), problems: problems)
        }
        if try store.load().contains(where: { $0.name == name }) {
            throw VPNError(.configurationInvalid, L("a profile named '\(name)' already exists"), hint: L("choose another name, or remove the old one first"))
        }
        return ImportPlan(changes: [Self.created(profile, made, source: name)], anchors: made.anchors)
    }

    static func created(_ p: Profile, _ result: ImportResult, source: String) -> PlannedChange {
        PlannedChange(change: .created, profile: p, previous: nil, secrets: result.secrets, secretsToRemove: [], keptSecrets: [],
                      anchors: result.anchors, notes: result.notes, noEffect: result.noEffect, source: source)
    }
}
