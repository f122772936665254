#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

enum EditCommand {
    static let spec = CommandSpec(
        name: "edit", abstract: L("Edit a profile's JSON in your editor (or apply a file), then validate and save it."),
        discussion: L("""
        The editor is $VISUAL, else $EDITOR, else 'editor' or 'vi' from PATH
        (vpnctl says which it used). The edited profile is saved only if it is
        valid, has no key vpnctl does not know, and nobody saved the profile
        meanwhile (otherwise exit 7, configuration stale). If it cannot be
        saved, your edit is kept in a file whose path is printed; on a terminal
        vpnctl offers to reopen it, and 'vpnctl edit PROFILE --from FILE'
        applies it later. Secrets are not in the JSON; set them with
        'vpnctl secret set'.
        """),
        examples: [
            "vpnctl edit office",
            "EDITOR=nano vpnctl edit office",
            "vpnctl edit office --from /tmp/vpnctl-edit-Ab12Cd/office.json",
            "vpnctl edit office --from /tmp/vpnctl-edit-Ab12Cd/office.json --rebase",
        ],
        options: [OptionSpec("from", value: "file", help: L("Apply this profile JSON instead of opening an editor (its revision is checked).")),
                  OptionSpec("rebase", help: L("With --from: apply a kept edit on the current revision (a merge; refused where both changed a field)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let name: String
        let id: String
        let revision: Int
        let changed: Bool
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let env = inv.context.environment
        let temporary = env["TMPDIR"] ?? "/tmp"
        if inv.args.flag("rebase") && inv.args.value("from") == nil {
            throw VPNError.usage(L("'--rebase' needs '--from <file>'"), hint: L("See 'vpnctl help edit'."))
        }
        let from = inv.args.value("from")
        let cleanUp = KeptEdits.removeOld(in: temporary, except: from.map(FileSystem.parentDirectory(of:)))
        for line in KeptEdits.report(cleanUp, base: temporary) { inv.output.note(line) }
        if let from { return try apply(from, rebase: inv.args.flag("rebase"), inv) }
        let editor = try chooseEditor(env)
        if let note = editor.note { inv.output.note(note) }
        let manager = try inv.loadedManager()
        let original = try manager.profile(named: inv.args.positionals[0])
        let before = try json(original)

        let dir = try makePrivateTempDirectory(temporary)
        let file = "\(dir)/\(safeFileName(original.name)).json"
        var keep = false
        defer {
            if !keep {
                try? FileSystem.remove(file)
                try? FileSystem.remove(KeptEdits.basePath(of: file))
                try? FileSystem.removeDirectory(dir)
            }
        }
        do {
            try AtomicFile.write(before, to: file, mode: 0o600)
            // The revision the edit is made from, for a later --rebase.
            try AtomicFile.write(before, to: KeptEdits.basePath(of: file), mode: 0o600)
        } catch { throw VPNError.from(error) }

        func failKeeping(_ e: VPNError) -> VPNError {
            keep = true
            let command = "vpnctl edit \(original.name.shellQuoted) --from \(file)"
            if e.code == .configurationStale {
                // Its revision is no longer the stored one: --from alone would fail the same way.
                return VPNError(e.code, e.message, hint: L("your edit is kept in \(file); apply it on the current revision with: \(command + " --rebase")"),
                                problems: e.problems)
            }
            let hint = L("your edit is kept in \(file); apply it with: \(command)")
                + (Hints.text(for: e).map { "; \($0)" } ?? "")
            return VPNError(e.code, e.message, hint: hint, problems: e.problems)
        }
        let validator = ProfileValidator(secretExists: { manager.store.secrets.exists(original.id, name: $0) })
        while true {
            let after = try edit(file, with: editor.command, inv)
            if after == before || after.isEmpty {
                reportUnchanged(original, emptyFile: after.isEmpty, inv)
                return .ok
            }
            do {
                let edited = try checkedEdit(after, of: original, file: file, validator: validator, keepRevision: false)
                let saved = try manager.save(edited)
                reportSaved(saved, validator: validator, inv)
                return .ok
            } catch let e as VPNError {
                // A stale profile cannot be fixed in the editor; anything else can.
                guard e.code != .configurationStale, offersToReopen(inv) else { throw failKeeping(e) }
                inv.output.error(e)
                guard inv.context.ask("Edit again? [Y/n] ") else { throw failKeeping(e) }
            }
        }
    }

    /// Reopening the editor needs a person at a terminal, and no JSON reader.
    static func offersToReopen(_ inv: Invocation) -> Bool {
        inv.context.stdinIsTerminal && inv.context.stderrIsTerminal && !inv.options.json
    }

    /// `edit PROFILE --from FILE`: the file is checked as an edit would be;
    /// its revision (when it has one) must still be the stored one, so a
    /// kept edit cannot overwrite a later save. With `rebase`, the change
    /// the file makes to the revision it was made from (FILE.base) is
    /// applied on the stored profile instead.
    static func apply(_ file: String, rebase: Bool, _ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let original = try manager.profile(named: inv.args.positionals[0])
        let bytes = try readProfileFile(file, hint: L("give the path of a profile JSON file"))
        let validator = ProfileValidator(secretExists: { manager.store.secrets.exists(original.id, name: $0) })
        if rebase { return try applyRebased(bytes, file: file, on: original, manager: manager, validator: validator, inv) }
        if bytes == (try json(original)) {
            reportUnchanged(original, emptyFile: false, inv)
            return .ok
        }
        let edited = try checkedEdit(bytes, of: original, file: file, validator: validator, keepRevision: true)
        do {
            reportSaved(try manager.save(edited), validator: validator, inv)
        } catch let e as VPNError where e.code == .configurationStale && FileSystem.exists(KeptEdits.basePath(of: file)) {
            throw VPNError(e.code, e.message, hint: L("apply it on the current revision with: \("vpnctl edit \(original.name.shellQuoted) --from \(file) --rebase")"),
                           problems: e.problems)
        }
        return .ok
    }

    /// A profile JSON file, read as --from reads it (a regular file, 1 MiB at most).
    static func readProfileFile(_ file: String, hint: String) throws -> [UInt8] {
        do {
            guard let read = try FileSystem.readFileIfPresent(file, limit: maximumSize) else {
                throw VPNError(.failure, L("cannot read \(file): no such file"), hint: hint)
            }
            return read
        } catch let e as FileSystem.FileProblem {
            throw VPNError(.failure, L("cannot read \(file): \(e)"), hint: L("give the path of a regular file"))
        }
    }

    /// `--from FILE --rebase`: a three-way merge of the profile's fields, with
    /// FILE.base as the base, the stored profile as theirs and FILE as ours;
    /// refused (exit 7) naming every field both changed.
    static func applyRebased(_ bytes: [UInt8], file: String, on current: Profile, manager: ProfileManager,
                             validator: ProfileValidator, _ inv: Invocation) throws -> ExitCode {
        let basePath = KeptEdits.basePath(of: file)
        let again = "vpnctl edit \(current.name.shellQuoted)"
        let baseBytes = try readProfileFile(basePath, hint: L("--rebase needs the revision the edit was made from, which vpnctl keeps beside a kept edit; redo the change with: \(again)"))
        let base: Profile
        do {
            base = try Profile.parseStrictly(baseBytes).profile
        } catch {
            throw VPNError(.failure, L("\(basePath) is not the profile a kept edit was made from: \(error)"), hint: L("redo the change with: \(again)"))
        }
        guard base.id == current.id else {
            throw VPNError(.failure, L("\(file) was kept from another profile (id \(base.id.lowercasedString)), not '\(current.name)'"),
                           hint: L("name that profile, or redo the change with: \(again)"))
        }
        // The kept file itself, checked as any --from file is (its own line numbers).
        _ = try checkedEdit(bytes, of: current, file: file, validator: validator, keepRevision: false)
        let theirs = try json(current)
        let parsed: (base: JSONValue, ours: JSONValue, theirs: JSONValue)
        do {
            parsed = (try JSONSyntax.parse(baseBytes), try JSONSyntax.parse(bytes), try JSONSyntax.parse(theirs))
        } catch {
            throw VPNError.from(error)
        }
        let result = ProfileMerge.merge(base: parsed.base, ours: parsed.ours, theirs: parsed.theirs)
        if !result.conflicts.isEmpty {
            let what = result.conflicts.count == 1
                ? L("cannot rebase \(file) on revision \(current.revision) of '\(current.name)': 1 field was changed both there and meanwhile")
                : L("cannot rebase \(file) on revision \(current.revision) of '\(current.name)': \(result.conflicts.count) fields were changed both there and meanwhile")
            throw VPNError(.configurationStale, what,
                           hint: L("redo the change to \(result.conflicts.map(\.field).joined(separator: ", ")) with: \(again) (\(file) stays as it is)"),
                           problems: result.conflicts.map(\.text))
        }
        if result.fromOurs.isEmpty {
            reportUnchanged(current, emptyFile: false, inv)
            return .ok
        }
        let merged = try checkedEdit(Array(result.merged.serialized.utf8), of: current, file: file, validator: validator, keepRevision: false)
        if base.revision != current.revision {
            inv.output.note(L("rebased on revision \(current.revision) (the edit was made on revision \(base.revision)): the edit changes \(result.fromOurs.joined(separator: ", "))"))
        }
        reportSaved(try manager.save(merged), validator: validator, inv)
        return .ok
    }

    /// The editor to run: $VISUAL, else $EDITOR (an empty one counts as
    /// unset), else Debian's 'editor' alternative, else vi; a fallback is
    /// named in a note.
    static func chooseEditor(_ env: [String: String]) throws -> (command: String, note: String?) {
        if let editor = [env["VISUAL"], env["EDITOR"]].compactMap({ $0 }).first(where: { !$0.isEmpty }) {
            return (editor, nil)
        }
        for fallback in ["editor", "vi"] {
            if let path = Processes.which(fallback, path: env["PATH"]) {
                return (path, L("VISUAL and EDITOR are not set; using \(path)"))
            }
        }
        throw VPNError(.usage, L("no editor: neither VISUAL nor EDITOR is set, and neither 'editor' nor 'vi' is on PATH"),
                       hint: L("set one, e.g. EDITOR=nano vpnctl edit PROFILE, or apply a file with --from FILE"))
    }

    /// The profile as the user edits it: pretty, sorted JSON and a final newline.
    static func json(_ profile: Profile) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(profile)) + [0x0A]
    }

    /// Runs the editor on `file` and reads back what it left there.
    static func edit(_ file: String, with editor: String, _ inv: Invocation) throws -> [UInt8] {
        let status: Int32
        do {
            status = try inv.context.runEditor(editor, file, inv.context.environment)
        } catch {
            throw VPNError(.failure, "\(error)", hint: L("check VISUAL / EDITOR"))
        }
        guard status == 0 else {
            throw VPNError(.failure, L("the editor exited with status \(status); nothing was saved"))
        }
        do {
            return try FileSystem.readFileIfPresent(file, limit: maximumSize) ?? []
        } catch let e as FileSystem.FileProblem {
            throw VPNError(.failure, L("cannot read the edited profile: \(e)"), hint: L("save the profile as a regular file; nothing was saved"))
        } catch {
            throw VPNError.from(error)
        }
    }

    /// The edited profile, parsed and valid. Its revision is the one loaded
    /// before the editor opened (the store checks it), or the file's own
    /// with `keepRevision` (a file applied with --from).
    static func checkedEdit(_ bytes: [UInt8], of original: Profile, file: String, validator: ProfileValidator,
                            keepRevision: Bool) throws -> Profile {
        var edited: Profile
        let unknown: [KeyTracker.UnknownKey]
        do {
            (edited, unknown) = try Profile.parseStrictly(bytes)
        } catch let problem as JSONSyntax.Problem {
            throw VPNError(.configurationInvalid, L("\(file):\(problem.line):\(problem.column): malformed JSON: \(problem.message)"))
        } catch let problem as JSONDecodeProblem {
            throw VPNError(.configurationInvalid, "\(file): \(problem)")
        }
        if edited.id != original.id {
            throw VPNError(.configurationInvalid, L("the profile's id cannot change (it was \(original.id.lowercasedString))"))
        }
        if !keepRevision || !hasMember("revision", bytes) {
            edited.revision = original.revision
        }
        let problems = unknown.map { u in
            JSONSyntax.line(ofKey: u.key, in: bytes).map { "line \($0): \(u)" } ?? "\(u)"
        } + validator.problems(in: edited)
        if !problems.isEmpty {
            throw VPNError.invalid(problems.count == 1 ? L("the edited profile is not valid (1 problem)")
                                                       : L("the edited profile is not valid (\(problems.count) problems)"), problems: problems)
        }
        return edited
    }

    static func hasMember(_ key: String, _ bytes: [UInt8]) -> Bool {
        guard case .object(let object)? = try? JSONSyntax.parse(bytes) else { return false }
        return object[key] != nil
    }

    static func reportUnchanged(_ original: Profile, emptyFile: Bool, _ inv: Invocation) {
        if inv.options.json {
            inv.output.emit(Result(name: original.name, id: original.id.lowercasedString, revision: original.revision, changed: false))
        } else {
            inv.output.line(emptyFile ? L("empty file; nothing saved") : L("no changes to '\(original.name)'"))
        }
    }

    static func reportSaved(_ saved: Profile, validator: ProfileValidator, _ inv: Invocation) {
        // A password that is not stored is asked for at start: no warning.
        let asked = saved.protocol.model.passwordSecret.map { [$0] } ?? []
        for missing in validator.missingSecrets(in: saved, except: asked) {
            inv.output.note(L("warning: \(missing); set it with: vpnctl secret set \(saved.name) <name>"))
        }
        for w in validator.warnings(in: saved) { inv.output.note(L("warning: \(w)")) }
        if inv.options.json {
            inv.output.emit(Result(name: saved.name, id: saved.id.lowercasedString, revision: saved.revision, changed: true))
        } else {
            inv.output.line(L("saved '\(saved.name)' (revision \(saved.revision))"))
        }
    }

    /// One profile's JSON is a few KiB.
    static let maximumSize = 1 << 20

    static func makePrivateTempDirectory(_ base: String) throws -> String {
        var template = Array("\(base)/vpnctl-edit-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw VPNError(.failure, L("cannot create a temporary directory in \(base): \(Errno.current)"))
        }
        return String(cString: template)
    }

    static func safeFileName(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
    }
}
