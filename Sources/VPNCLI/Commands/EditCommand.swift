#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

enum EditCommand {
    static let spec = CommandSpec(
        name: "edit", abstract: "Edit a profile's JSON in $VISUAL or $EDITOR, then validate and save it.",
        discussion: """
        The edited profile is saved only if it is valid and nobody saved the profile
        meanwhile (otherwise exit 7, configuration stale). If it cannot be saved, your
        edit is kept in a file whose path is printed. Secrets are not in the JSON; set
        them with 'vpnctl secret set'.
        """,
        positionals: [PositionalSpec("profile", help: "The profile's name or UUID.")],
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
        let editor = try chooseEditor(env)
        let manager = try inv.loadedManager()
        let original = try manager.profile(named: inv.args.positionals[0])
        let before = try json(original)

        let dir = try makePrivateTempDirectory(env["TMPDIR"] ?? "/tmp")
        let file = "\(dir)/\(safeFileName(original.name)).json"
        var keep = false
        defer {
            if !keep {
                try? FileSystem.remove(file)
                try? FileSystem.removeDirectory(dir)
            }
        }
        do { try AtomicFile.write(before, to: file, mode: 0o600) } catch { throw VPNError.from(error) }

        let after = try edit(file, with: editor, inv)
        if after == before || after.isEmpty {
            reportUnchanged(original, emptyFile: after.isEmpty, inv)
            return .ok
        }
        func failKeeping(_ e: VPNError) -> VPNError {
            keep = true
            let hint = "your edit is kept in \(file)" + (Hints.text(for: e).map { "; \($0)" } ?? "")
            return VPNError(e.code, e.message, hint: hint, problems: e.problems)
        }
        let validator = ProfileValidator(secretExists: { manager.store.secrets.exists(original.id, name: $0) })
        let edited = try checkedEdit(after, of: original, file: file, validator: validator, failKeeping: failKeeping)
        let saved: Profile
        do {
            saved = try manager.save(edited)
        } catch let e as VPNError {
            throw failKeeping(e)
        }
        reportSaved(saved, validator: validator, inv)
        return .ok
    }

    /// $VISUAL, else $EDITOR; an empty one counts as unset.
    static func chooseEditor(_ env: [String: String]) throws -> String {
        guard let editor = [env["VISUAL"], env["EDITOR"]].compactMap({ $0 }).first(where: { !$0.isEmpty }) else {
            throw VPNError(.usage, "no editor: neither VISUAL nor EDITOR is set", hint: "set one, e.g. EDITOR=vi vpnctl edit PROFILE")
        }
        return editor
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
            throw VPNError(.failure, "\(error)", hint: "check VISUAL / EDITOR")
        }
        guard status == 0 else {
            throw VPNError(.failure, "the editor exited with status \(status); nothing was saved")
        }
        do {
            return try FileSystem.readFileIfPresent(file, limit: maximumSize) ?? []
        } catch let e as FileSystem.FileProblem {
            throw VPNError(.failure, "cannot read the edited profile: \(e)", hint: "save the profile as a regular file; nothing was saved")
        } catch {
            throw VPNError.from(error)
        }
    }

    /// The edited profile, parsed and valid, with the revision loaded before
    /// the editor opened. Its errors go through `failKeeping`.
    static func checkedEdit(_ bytes: [UInt8], of original: Profile, file: String, validator: ProfileValidator,
                            failKeeping: (VPNError) -> VPNError) throws -> Profile {
        var edited: Profile
        do {
            edited = try Profile.parse(bytes)
        } catch let problem as JSONSyntax.Problem {
            throw failKeeping(VPNError(.configurationInvalid, "\(file):\(problem.line):\(problem.column): malformed JSON: \(problem.message)"))
        } catch let problem as JSONDecodeProblem {
            throw failKeeping(VPNError(.configurationInvalid, "\(file): \(problem)"))
        }
        if edited.id != original.id {
            throw failKeeping(VPNError(.configurationInvalid, "the profile's id cannot change (it was \(original.id.lowercasedString))"))
        }
        // The revision is the store's business: the save is checked against
        // the revision loaded before the editor opened, whatever the file says.
        edited.revision = original.revision
        let problems = validator.problems(in: edited)
        if !problems.isEmpty {
            throw failKeeping(.invalid("the edited profile is not valid (\(problems.count) problem\(problems.count == 1 ? "" : "s"))", problems: problems))
        }
        return edited
    }

    static func reportUnchanged(_ original: Profile, emptyFile: Bool, _ inv: Invocation) {
        if inv.options.json {
            inv.output.emit(Result(name: original.name, id: original.id.lowercasedString, revision: original.revision, changed: false))
        } else {
            inv.output.line(emptyFile ? "empty file; nothing saved" : "no changes to '\(original.name)'")
        }
    }

    static func reportSaved(_ saved: Profile, validator: ProfileValidator, _ inv: Invocation) {
        for missing in validator.missingSecrets(in: saved) {
            inv.output.note("warning: \(missing); set it with: vpnctl secret set \(saved.name) <name>")
        }
        if inv.options.json {
            inv.output.emit(Result(name: saved.name, id: saved.id.lowercasedString, revision: saved.revision, changed: true))
        } else {
            inv.output.line("saved '\(saved.name)' (revision \(saved.revision))")
        }
    }

    /// One profile's JSON is a few KiB.
    static let maximumSize = 1 << 20

    static func makePrivateTempDirectory(_ base: String) throws -> String {
        var template = Array("\(base)/vpnctl-edit-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw VPNError(.failure, "cannot create a temporary directory in \(base): \(Errno.current)")
        }
        return String(cString: template)
    }

    static func safeFileName(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" })
    }
}
