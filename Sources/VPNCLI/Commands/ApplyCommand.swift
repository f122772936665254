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
        var desired: [DesiredProfile] = []
        var allAnchors: [String: [UInt8]] = [:]
        var notes: [String] = skipped.map { L("\($0): not a file; apply reads a directory's files, not what is below them") }
        var problems: [String] = []
        for path in paths {
            do {
                let file = try FleetFile(try read(path), path: path, signerAnchors: anchors)
                desired += file.profiles
                allAnchors.merge(file.anchors) { _, b in b }
                notes += file.notes
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
        let imports = ProfileImport(store: inv.store, runtime: inv.controller.runtime)
        var plan = try imports.planReconcile(desired, scope: .managed, anchors: allAnchors)
        // An empty set is more often a missing mount or copy than an intent.
        if desired.isEmpty && !plan.removed.isEmpty && !inv.args.flag("allow-empty") {
            let given = inv.args.positionals.joined(separator: " "), count = plan.removed.count
            throw VPNError.usage(count == 1 ? L("no profile files in \(given): that would remove all 1 profile apply made")
                                            : L("no profile files in \(given): that would remove all \(count) profiles apply made"),
                                 hint: L("give --allow-empty to remove them all"))
        }
        let dryRun = inv.args.flag("dry-run")
        if !dryRun {
            if plan.changed {
                try MobileConfigImport.stopRemoved(inv, plan) { old in
                    (VPNError(.failure, L("'\(old.name)' is still running; apply changed nothing"), hint: L("stop it with: vpnctl stop \(old.name)")),
                     L("stopped '\(old.name)' before removing it"))
                }
            }
            let outcome = try imports.commit(plan)
            MobileConfigImport.noteLeftovers(inv, outcome)
            plan = outcome.plan
        }
        for note in notes { inv.output.note(L("note: \(note)")) }
        let rows = plan.changes.map { c in
            Row(name: c.profile.name, id: c.profile.id.lowercasedString, protocol: c.profile.protocol.kind.rawValue, change: c.change.rawValue, source: c.source)
        }
        if inv.options.json {
            inv.output.emit(Result(dryRun: dryRun, changed: plan.changed, profiles: rows, notes: notes))
            return .ok
        }
        if dryRun { inv.output.line(L("dry run: nothing was changed; the plan:")) }
        for r in rows { inv.output.line(planLine(r, dryRun: dryRun)) }
        if rows.isEmpty { inv.output.line(L("nothing to apply: no profile files and no managed profiles")) }
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
}
