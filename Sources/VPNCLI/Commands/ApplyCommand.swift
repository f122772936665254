import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl apply <dir-or-file>...`: the given files become the managed set.
/// New profiles are created, changed ones updated in place (same id, next
/// revision), and profiles an earlier apply made whose file or payload is gone
/// are removed (stopped first). Profiles made or imported by hand are never
/// touched. All or nothing; a second run changes nothing.
enum ApplyCommand {
    static let spec = CommandSpec(
        name: "apply", abstract: L("Make a set of profile files (a directory, or files) the managed profiles, for fleets."),
        discussion: L("""
        Every file (a directory's regular files, dot files left out) is read as 'vpnctl import'
        reads it: a .mobileconfig gives a profile per VPN payload, any other file one profile
        named after the file. The output says created, updated, unchanged or removed per
        profile; with --json, 'changed' is true when anything changed (for Ansible's
        changed_when). Exit 0 whether or not something changed; a bad file changes nothing.
        """),
        examples: [
            "vpnctl apply /etc/vpnctl/fleet.d --dry-run",
            "vpnctl apply /etc/vpnctl/fleet.d --json",
        ],
        options: [OptionSpec("dry-run", help: L("Print the plan; change nothing.")),
                  OptionSpec("allow-empty", help: L("With no profile files, remove every profile apply made (refused otherwise).")),
                  OptionSpec("ca", value: "file", help: L("Signed .mobileconfig files must be signed by a certificate this CA issued (PEM)."))],
        positionals: [PositionalSpec("path", variadic: true, kind: .file, help: L("A directory of profile files, or a file; several may be given."))],
        run: run)

    struct Row: Encodable {
        let name: String
        let id: String
        let `protocol`: String
        let change: String
        let source: String
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let dryRun: Bool
        let changed: Bool
        let profiles: [Row]
        let notes: [String]
    }

    /// One profile the files ask for.
    struct Desired {
        let origin: ProfileOrigin
        var result: ImportResult
        let source: String
    }

    /// The files to read, and the subdirectories left out (named, never silently).
    /// Each file becomes managed profiles (run as root, with secrets and
    /// trust anchors), so the files and the directories given are held to the
    /// config dir's rules before any is read: no symlinks (a directory's or a
    /// file's), owned by the user running vpnctl or root, writable by nobody
    /// else, and every directory above them likewise (sticky ones, as /tmp,
    /// excepted). Every path that breaks them is named, with its fix (exit 11).
    static func files(_ paths: [String]) throws -> (files: [String], skipped: [String]) {
        var out: [String] = [], skipped: [String] = [], untrusted: [FileSystem.TrustProblem] = []
        func trusted(_ check: () throws -> Void) throws -> Bool {
            do { try check(); return true } catch let t as FileSystem.TrustProblem { untrusted.append(t); return false }
            catch { throw VPNError.from(error) }
        }
        for path in paths {
            // As the kernel resolves it: "link/" and "link/." are the link.
            let spelled = FileSystem.normalized(path)
            let info: FileSystem.Info?
            do { info = try FileSystem.info(spelled) } catch { throw VPNError.from(error) }
            guard let info else { throw VPNError(.usage, L("\(path.abbreviated(200)): no such file or directory")) }
            if info.isSymlink {
                untrusted.append(.symlink(spelled))
            } else if info.isDirectory {
                guard try trusted({ try FileSystem.checkTrustedDirectory(spelled) }) else { continue }
                let names: [String]
                do { names = try FileSystem.list(spelled) } catch { throw VPNError.from(error) }
                for name in names {
                    let full = spelled.hasSuffix("/") ? spelled + name : spelled + "/" + name
                    let entry: FileSystem.Info?
                    do { entry = try FileSystem.info(full) } catch { throw VPNError.from(error) }
                    guard let entry else { continue }  // removed since the listing
                    if entry.isRegular || entry.isSymlink {
                        if try trusted({ try FileSystem.checkTrustedFile(full) }) { out.append(full) }
                    } else {
                        skipped.append(full)
                    }
                }
            } else if try trusted({ try FileSystem.checkTrustedFile(spelled); try FileSystem.checkAncestors(of: spelled) }) {
                out.append(path)
            }
        }
        if let first = untrusted.first {
            if untrusted.count == 1 {
                let (what, fix) = wording(first)
                throw VPNError(.permissionDenied, L("apply changed nothing: \(what)"), hint: fix)
            }
            throw VPNError(.permissionDenied, L("apply changed nothing: \(untrusted.count) paths may not be applied"),
                           hint: L("fix each as shown, then apply again"),
                           problems: untrusted.map { let (what, fix) = wording($0); return L("\(what); fix: \(fix)") })
        }
        var seen = Set<String>()
        return (out.filter { seen.insert($0).inserted }, skipped)
    }

    /// What is wrong with a path given to apply, and the fix, in apply's terms
    /// (the config dir's wording names --config-dir).
    static func wording(_ t: FileSystem.TrustProblem) -> (String, String) {
        switch t {
        case .symlink(let p):
            return (L("\(p) is a symlink; apply reads only real files and directories"),
                    L("replace \(p) with what it points to, or give apply that path"))
        case .notDirectory(let p), .notRegularFile(let p):
            return (L("\(p) is not a regular file or directory"), L("give apply a directory of profile files, or a regular file"))
        case .wrongOwner(let p, let owner, let expected):
            return (L("\(p) is owned by uid \(owner), so that user could change the managed profiles"),
                    L("chown \(expected == 0 ? "root:root" : String(expected)) \(p)"))
        case .writableByOthers(let p, let mode):
            return (L("\(p) is writable by group or others (mode \(String(mode, radix: 8))), so they could change the managed profiles"),
                    L("chmod go-w \(p)"))
        case .untrustedAncestor(let a, let p, let why):
            return (L("\(p) lies under \(a), which \(why)"),
                    L("fix the owner and mode of \(a) (chown root; chmod go-w), or keep the files in a directory only root can change"))
        }
    }

    /// A file `files` checked, read without following a symlink (it was
    /// checked as no symlink, and must still be none).
    static func read(_ path: String) throws -> [UInt8] {
        let limit = ImportFormat.maximumSize
        do {
            guard let b = try FileSystem.readFileIfPresent(path, followSymlinks: false, limit: limit) else {
                throw VPNError(.failure, L("cannot read \(path.abbreviated(200)): it was removed while apply read the files"))
            }
            return b
        } catch let e as FileSystem.FileProblem {
            switch e.kind {
            case .tooLarge:
                throw VPNError(.configurationInvalid,
                               L("\(path) is larger than \(FileSystem.sizeText(limit)), the limit for an imported file; that is not a VPN configuration file"))
            case .symlink:
                throw VPNError(.permissionDenied, L("apply changed nothing: \(path) became a symlink while apply read the files"),
                               hint: L("replace it with the file itself, and apply again"))
            case .notRegular:
                throw VPNError(.failure, L("cannot import \(e.description)"))
            }
        } catch let e as VPNError {
            throw e
        } catch {
            throw VPNError.from(error)
        }
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let (paths, skipped) = try files(inv.args.positionals)
        let anchors = try inv.args.value("ca").map(MobileConfigImport.signerAnchors)
        var desired: [Desired] = []
        var allAnchors: [String: [UInt8]] = [:]
        var notes: [String] = skipped.map { L("\($0): not a file; apply reads a directory's files, not what is below them") }
        var problems: [String] = []
        for path in paths {
            do {
                let bytes = try read(path)
                let base = ImportCommand.defaultName(path)
                if MobileConfig.recognizes(bytes) {
                    let c = try MobileConfig.read(bytes, source: path, defaultName: base,
                                                  options: MobileConfig.Options(signerAnchors: Crypto.looksLikeCMS(bytes) ? anchors : nil))
                    if anchors != nil && c.signer == nil {
                        throw VPNError(.configurationInvalid, L("\(path) is not signed, and --ca asks for signed profiles"))
                    }
                    for a in c.anchors { allAnchors[a.fingerprint] = Array(a.pem.utf8) }
                    for item in c.items {
                        desired.append(Desired(origin: ProfileOrigin(profileIdentifier: c.identifier, payloadIdentifier: item.payloadIdentifier,
                                                                     managedByApply: true),
                                               result: item.result, source: path))
                    }
                    notes += c.notes + c.items.flatMap(\.result.notes)
                } else {
                    if let problem = ProfileName.problems(base).first {
                        throw VPNError(.configurationInvalid, L("\(path): the file name gives the profile name \(base.quotedForMessage), which \(problem)"))
                    }
                    let r = try ImportFormat.importChecked(bytes, name: base, source: path,
                                                           options: ImportOptions(baseDirectory: FileSystem.parentDirectory(of: path)))
                    let fileName = path.split(separator: "/").last.map(String.init) ?? path
                    desired.append(Desired(origin: ProfileOrigin(profileIdentifier: "file:" + fileName, payloadIdentifier: fileName,
                                                                 managedByApply: true),
                                           result: r, source: path))
                    notes += r.notes.map { "\(path): \($0)" }
                }
            } catch let e as VPNError {
                if e.code == .permissionDenied { throw e }
                problems.append(e.message)
                problems += e.problems.map { "  \($0)" }
            }
        }
        if !problems.isEmpty {
            let files = problems.filter { !$0.hasPrefix("  ") }.count
            throw VPNError.invalid(files == 1 ? L("apply changed nothing: 1 file cannot be imported")
                                              : L("apply changed nothing: \(files) files cannot be imported"),
                                   problems: problems, hint: L("fix the files and apply again"))
        }
        for d in desired { for (fp, pem) in d.result.anchors { allAnchors[fp] = pem } }

        let store = inv.store
        let existing = try store.load()
        let managed = existing.filter { $0.origin?.managedByApply == true }
        func key(_ o: ProfileOrigin?) -> String { "\(o?.profileIdentifier ?? "")\u{0}\(o?.payloadIdentifier ?? "")" }
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

        var saving: [Profile] = []
        var rows: [(MobileConfigImport.ProfileResult, ImportResult?)] = []
        var applyRows: [Row] = []
        for d in desired {
            var p = d.result.profile
            p.origin = d.origin
            if let old = managed.first(where: { key($0.origin) == key(d.origin) }) {
                p.id = old.id
                p.revision = old.revision
                p.enabled = old.enabled
                p.policy = old.policy
                if let clash = existing.first(where: { $0.name == p.name && $0.id != old.id }) {
                    throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) renames '\(old.name)' to '\(p.name)', which another profile has (\(clash.id.lowercasedString))"))
                }
                let sameSecrets = d.result.secrets.allSatisfy { name, value in (try? store.secrets.read(old.id, name: name)) == value }
                let change = p == old && sameSecrets ? "unchanged" : "updated"
                if change == "updated" { saving.append(p) }
                rows.append((result(p, d, change), change == "updated" ? d.result : nil))
                applyRows.append(Row(name: p.name, id: p.id.lowercasedString, protocol: p.protocol.kind.rawValue, change: change, source: d.source))
            } else {
                if let clash = existing.first(where: { $0.name == p.name }) {
                    let whose = clash.origin.map { "imported from \($0.profileIdentifier.quotedForMessage) by hand" } ?? "made by hand"
                    throw VPNError(.configurationInvalid, L("apply changed nothing: \(d.source) makes a profile named '\(p.name)', and one exists (\(whose)); apply never touches it"),
                                   hint: L("remove or rename that profile, or rename the file (or its UserDefinedName)"))
                }
                saving.append(p)
                rows.append((result(p, d, "created"), d.result))
                applyRows.append(Row(name: p.name, id: p.id.lowercasedString, protocol: p.protocol.kind.rawValue, change: "created", source: d.source))
            }
        }
        let dropped = managed.filter { !keys.contains(key($0.origin)) }
        // An empty set is more often a missing mount or copy than an intent.
        if desired.isEmpty && !dropped.isEmpty && !inv.args.flag("allow-empty") {
            let given = inv.args.positionals.joined(separator: " ")
            throw VPNError.usage(dropped.count == 1 ? L("no profile files in \(given): that would remove all 1 profile apply made")
                                                    : L("no profile files in \(given): that would remove all \(dropped.count) profiles apply made"),
                                 hint: L("give --allow-empty to remove them all"))
        }
        applyRows += dropped.map { Row(name: $0.name, id: $0.id.lowercasedString, protocol: $0.protocol.kind.rawValue, change: "removed",
                                       source: $0.origin.map { $0.profileIdentifier.hasPrefix("file:") ? String($0.profileIdentifier.dropFirst(5)) : $0.profileIdentifier } ?? "") }
        let dryRun = inv.args.flag("dry-run")
        let changed = applyRows.contains { $0.change != "unchanged" }
        if !dryRun && changed {
            for old in dropped {
                let current = try inv.controller.derive(old)
                if current.supervisorAlive {
                    let (_, stopped) = try TunnelActions.stop(inv, old, wait: true, timeout: 10)
                    if stopped.supervisorAlive {
                        throw VPNError(.failure, L("'\(old.name)' is still running; apply changed nothing"), hint: L("stop it with: vpnctl stop \(old.name)"))
                    }
                    inv.output.note(L("stopped '\(old.name)' before removing it"))
                }
            }
            try MobileConfigImport.write(store, inv, saving: saving, rows: rows, dropped: dropped, anchors: allAnchors)
            for old in dropped {
                do {
                    try store.secrets.removeAll(old.id)
                    try inv.controller.runtime.remove(old.id)
                } catch {
                    inv.output.note(L("note: '\(old.name)' was removed, but not all of its files: \(VPNError.from(error).message)"))
                }
            }
        } else if !dryRun && !allAnchors.isEmpty {
            let trust = TrustStore(configDirectory: inv.options.configDirectory)
            for (fp, pem) in allAnchors.sorted(by: { $0.key < $1.key }) where !trust.exists(fp) { try trust.install(pem, fingerprint: fp) }
        }
        for note in notes { inv.output.note(L("note: \(note)")) }
        if inv.options.json {
            inv.output.emit(Result(dryRun: dryRun, changed: changed, profiles: applyRows, notes: notes))
            return .ok
        }
        if dryRun { inv.output.line(L("dry run: nothing was changed; the plan:")) }
        for r in applyRows { inv.output.line(planLine(r, dryRun: dryRun)) }
        if applyRows.isEmpty { inv.output.line(L("nothing to apply: no profile files and no managed profiles")) }
        return .ok
    }

    /// A row of the plan for people, in their language (the JSON keeps `change`).
    static func planLine(_ r: Row, dryRun: Bool) -> String {
        let (name, proto, source) = (r.name, r.protocol, r.source)
        switch (r.change, dryRun) {
        case ("created", false): return L("created '\(name)' (\(proto)) from \(source)")
        case ("created", true): return L("create '\(name)' (\(proto)) from \(source)")
        case ("updated", false): return L("updated '\(name)' (\(proto)) from \(source)")
        case ("updated", true): return L("update '\(name)' (\(proto)) from \(source)")
        case ("removed", false): return L("removed '\(name)' (\(proto)) from \(source)")
        case ("removed", true): return L("remove '\(name)' (\(proto)) from \(source)")
        case ("unchanged", _): return L("unchanged '\(name)' (\(proto)) from \(source)")
        default: return "\(r.change) '\(name)' (\(proto)) from \(source)"
        }
    }

    static func result(_ p: Profile, _ d: Desired, _ change: String) -> MobileConfigImport.ProfileResult {
        MobileConfigImport.ProfileResult(id: p.id.lowercasedString, name: p.name, protocol: p.protocol.kind.rawValue, revision: p.revision,
                                         payloadIdentifier: d.origin.payloadIdentifier, change: change, secrets: d.result.secrets.keys.sorted())
    }
}
