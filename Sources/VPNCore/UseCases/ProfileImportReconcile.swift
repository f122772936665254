import FoundationEssentials
import VPNSystem

/// A set of files made into profiles: a .mobileconfig's payloads, or the files
/// `apply` manages. Each desired profile is matched by its origin with the
/// stored one it made before (updated in place: same id, next revision, or
/// unchanged), or created; a stored one nothing asks for any more is removed.
extension ProfileImport {
    public func planReconcile(_ desired: [DesiredProfile], scope: ImportScope, anchors: [String: [UInt8]] = [:]) throws -> ImportPlan {
        let existing = try store.load()
        let pool: [Profile]
        switch scope {
        case .configurationProfile(let identifier, _):
            pool = existing.filter { $0.origin?.profileIdentifier == identifier }
        case .managed:
            pool = existing.filter { $0.origin?.managedByApply == true }
            try Self.checkDistinct(desired)
        }
        var changes: [PlannedChange] = []
        for d in desired {
            var p = d.result.profile
            p.origin = d.origin
            guard let old = pool.first(where: { Self.key($0.origin) == Self.key(d.origin) }) else {
                try checkNameFree(p, d, existing: existing, scope: scope)
                changes.append(Self.created(p, d.result, source: d.source))
                continue
            }
            p.id = old.id
            p.revision = old.revision
            // What the administrator set here stays: enabled and who may control it.
            p.enabled = old.enabled
            p.policy = old.policy
            p.origin?.managedByApply = old.origin?.managedByApply ?? false
            if case .managed = scope, let clash = existing.first(where: { $0.name == p.name && $0.id != old.id }) {
                throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) renames '\(old.name)' to '\(p.name)', which another profile has (\(clash.id.lowercasedString))"))
            }
            let same = p == old && d.result.secrets.allSatisfy { name, value in storedSecret(old.id, name) == value }
            changes.append(PlannedChange(change: same ? .unchanged : .updated, profile: same ? old : p, previous: old, secrets: d.result.secrets,
                                         secretsToRemove: [], keptSecrets: [], anchors: d.result.anchors, notes: d.result.notes,
                                         noEffect: d.result.noEffect, source: d.source))
        }
        let keys = Set(desired.map { Self.key($0.origin) })
        for old in pool where !keys.contains(Self.key(old.origin)) {
            changes.append(PlannedChange(change: .removed, profile: old, previous: old, secrets: [:], secretsToRemove: [], keptSecrets: [],
                                         anchors: [:], notes: [], noEffect: [], source: Self.removedSource(old, scope)))
        }
        var all = anchors
        for d in desired { all.merge(d.result.anchors) { a, _ in a } }
        return ImportPlan(changes: changes, anchors: all)
    }

    /// A new profile's name must be free: the profiles made by hand (or
    /// imported by hand) are never touched.
    func checkNameFree(_ p: Profile, _ d: DesiredProfile, existing: [Profile], scope: ImportScope) throws {
        guard let clash = existing.first(where: { $0.name == p.name }) else { return }
        switch scope {
        case .configurationProfile(_, let source):
            let whose = clash.origin.map { "imported from \($0.profileIdentifier.quotedForMessage)" } ?? "made by hand"
            throw VPNError(.configurationInvalid, L("\(source): a profile named '\(p.name)' already exists (\(whose)); nothing was imported"),
                           hint: L("remove or rename the other profile, or import with --name NAME (one VPN payload only)"))
        case .managed:
            let whose = clash.origin.map { "imported from \($0.profileIdentifier.quotedForMessage) by hand" } ?? "made by hand"
            throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) makes a profile named '\(p.name)', and one exists (\(whose)); apply never touches it"),
                           hint: L("remove or rename that profile, or rename the file (or its UserDefinedName)"))
        }
    }

    /// apply: no two files may make the same name or the same payload.
    static func checkDistinct(_ desired: [DesiredProfile]) throws {
        var names: [String: String] = [:], keys = Set<String>()
        for d in desired {
            if let other = names[d.result.profile.name] {
                throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) and \(other) both make a profile named '\(d.result.profile.name)'"))
            }
            names[d.result.profile.name] = d.source
            if !keys.insert(key(d.origin)).inserted {
                throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) repeats PayloadIdentifier \(d.origin.payloadIdentifier.quotedForMessage) of \(d.origin.profileIdentifier.quotedForMessage)"))
            }
        }
    }

    static func key(_ o: ProfileOrigin?) -> String { "\(o?.profileIdentifier ?? "")\u{0}\(o?.payloadIdentifier ?? "")" }

    /// Where a removed profile had come from: apply names the file, or the
    /// configuration profile's identifier.
    static func removedSource(_ old: Profile, _ scope: ImportScope) -> String {
        if case .configurationProfile(_, let source) = scope { return source }
        guard let o = old.origin else { return "" }
        return o.profileIdentifier.hasPrefix("file:") ? String(o.profileIdentifier.dropFirst(5)) : o.profileIdentifier
    }

    /// A stored secret's value, or nil when it is not set or cannot be read:
    /// either way it differs from the file's, and the commit writes it anew.
    func storedSecret(_ id: UUID, _ name: String) -> [UInt8]? {
        do { return try store.secrets.read(id, name: name) } catch { return nil }
    }
}

/// The profiles a file gives `apply`: a .mobileconfig's VPN payloads (its
/// certificate payloads as anchors), or one profile named after the file.
public struct FleetFile: Sendable {
    public var profiles: [DesiredProfile] = []
    public var anchors: [String: [UInt8]] = [:]
    public var notes: [String] = []

    /// With `signerAnchors` (--ca), a .mobileconfig must be signed by a certificate they issued.
    public init(_ bytes: [UInt8], path: String, signerAnchors: [Crypto.Certificate]?) throws {
        let base = ProfileImport.defaultName(path)
        guard MobileConfig.recognizes(bytes) else {
            if let problem = ProfileName.problems(base).first {
                throw VPNError(.configurationInvalid, L("\(path): the file name gives the profile name \(base.quotedForMessage), which \(problem)"))
            }
            let r = try ImportFormat.importChecked(bytes, name: base, source: path,
                                                   options: ImportOptions(baseDirectory: FileSystem.parentDirectory(of: path)))
            profiles = [DesiredProfile.file(path, r)]
            notes = r.notes.map { "\(path): \($0)" }
            return
        }
        let c = try MobileConfig.read(bytes, source: path, defaultName: base,
                                      options: MobileConfig.Options(signerAnchors: Crypto.looksLikeCMS(bytes) ? signerAnchors : nil))
        if signerAnchors != nil && c.signer == nil {
            throw VPNError(.configurationInvalid, L("\(path) is not signed, and --ca asks for signed profiles"))
        }
        for a in c.anchors { anchors[a.fingerprint] = Array(a.pem.utf8) }
        profiles = c.items.map {
            DesiredProfile(origin: ProfileOrigin(profileIdentifier: c.identifier, payloadIdentifier: $0.payloadIdentifier, managedByApply: true),
                           result: $0.result, source: path)
        }
        notes = c.notes + c.items.flatMap(\.result.notes)
    }
}

extension ProfileImport {
    /// The profile name a file gives: its name without the extension
    /// ("imported" for standard input, '-').
    public static func defaultName(_ file: String) -> String {
        if file == "-" { return "imported" }
        var base = file.split(separator: "/").last.map(String.init) ?? file
        if let dot = base.lastIndex(of: "."), dot != base.startIndex { base = String(base[..<dot]) }
        return base
    }
}
