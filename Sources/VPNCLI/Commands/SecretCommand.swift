import FoundationEssentials
import VPNCore
import VPNSystem

enum SecretCommand {
    static let spec = CommandSpec(
        name: "secret", abstract: L("Set, list or remove a profile's secrets (values are never printed)."),
        examples: [
            "vpnctl secret set office password < pw.txt",
            "vpnctl secret list office",
        ],
        subcommands: [setSpec, listSpec, removeSpec])

    static let setSpec = CommandSpec(
        name: "set", abstract: L("Set a secret; the value is read from standard input, never from the command line."),
        discussion: L("""
        One trailing newline is removed. On a terminal, vpnctl asks for the value
        without echoing it. A name the profile does not refer to is refused (exit
        2, naming the ones it does) unless --force is given.
        """),
        examples: [
            "vpnctl secret set office password < pw.txt",
            "vpnctl secret set office private-key   # asks, without echo",
        ],
        options: [OptionSpec("force", help: L("Store a secret the profile does not refer to (yet)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID.")),
                      PositionalSpec("name", kind: .secret, help: L("The secret's name, as the profile refers to it (e.g. private-key, password)."))],
        run: runSet)

    static let listSpec = CommandSpec(
        name: "list", abstract: L("List a profile's secrets by name, and which the profile needs."),
        examples: [
            "vpnctl secret list office",
            "vpnctl secret list office --json",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: runList)

    static let removeSpec = CommandSpec(
        name: "remove", aliases: ["rm"], abstract: L("Remove one of a profile's secrets."),
        discussion: L("""
        A secret the profile still refers to can be removed: 'vpnctl start'
        then names it as missing. A name that is not set is a usage error (exit 2).
        """),
        examples: [
            "vpnctl secret remove office password",
            "vpnctl secret rm office old-key --json",
        ],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID.")),
                      PositionalSpec("name", kind: .secret, help: L("The secret's name, as 'vpnctl secret list' shows it."))],
        run: runRemove)

    struct RemoveResult: Encodable {
        var schemaVersion = 1
        let profile: String
        let secret: String
        let referenced: Bool
    }

    static func runRemove(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let name = inv.args.positionals[1]
        let stored = try manager.store.secrets.names(profile.id)
        guard SecretStore.isValidName(name), stored.contains(name) else {
            let close = Suggest.closest(to: name, among: stored, limit: 3)
            throw VPNError(.usage, L("'\(profile.name)' has no secret named \(name.quotedForMessage)") + didYouMean(close),
                           hint: stored.isEmpty ? L("it has no secrets set") : L("its secrets: \(stored.sorted().joined(separator: ", "))"))
        }
        try manager.store.secrets.remove(profile.id, name: name)
        let reference = profile.secretReferences.first { $0.name == name }
        if inv.options.json {
            inv.output.emit(RemoveResult(profile: profile.name, secret: name, referenced: reference != nil))
        } else {
            inv.output.line(L("removed secret '\(name)' of '\(profile.name)'"))
            if let reference {
                inv.output.note(L("note: '\(profile.name)' still refers to it (\(reference.field)); set it again before starting: vpnctl secret set \(profile.name.shellQuoted) \(name)"))
            }
        }
        return .ok
    }

    static func didYouMean(_ close: [String]) -> String { close.isEmpty ? "" : " (\(Suggest.question(close)))" }

    /// `field` as in `show --json`'s secrets: one name for one concept.
    struct Row: Encodable {
        let name: String
        let isSet: Bool
        let field: String?
        enum CodingKeys: String, CodingKey { case name, isSet = "set", field }
    }

    struct ListResult: Encodable {
        var schemaVersion = 1
        let profile: String
        let secrets: [Row]
    }

    struct SetResult: Encodable {
        var schemaVersion = 1
        let profile: String
        let secret: String
        let referenced: Bool
    }

    static func runSet(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let name = inv.args.positionals[1]
        guard SecretStore.isValidName(name) else {
            throw VPNError(.usage, L("\(name.quotedForMessage) is not a valid secret name"),
                           hint: L("use letters, digits, '.', '_' and '-' (at most 64 characters)"))
        }
        // Checked before the value is read: nobody should type a password
        // only to learn that the name was misspelt.
        let referenced = profile.secretReferences.map(\.name)
        if !referenced.contains(name), !inv.args.flag("force") {
            let close = Suggest.closest(to: name, among: referenced, limit: 2)
            throw VPNError(.usage, L("'\(profile.name)' does not refer to a secret named \(name.quotedForMessage)") + didYouMean(close),
                           hint: referenced.isEmpty
                               ? L("it refers to no secrets; --force stores it anyway")
                               : L("it refers to: \(referenced.joined(separator: ", ")); --force stores another name anyway"))
        }
        var value: [UInt8]
        if inv.context.stdinIsTerminal {
            value = inv.context.readSecretFromTerminal("value for secret '\(name)' of '\(profile.name)': ")
            if value.count > SecretStore.maximumSize {
                throw VPNError(.usage, L("the value is longer than \(FileSystem.sizeText(SecretStore.maximumSize)), the limit for a secret"))
            }
        } else {
            do {
                value = try inv.context.readStdin(SecretStore.maximumSize)
            } catch let e as FileSystem.FileProblem {
                guard case .tooLarge(let limit) = e.kind else { throw VPNError(.failure, e.description) }
                throw VPNError(.usage, L("the value on standard input is larger than \(FileSystem.sizeText(limit)), the limit for a secret"),
                               hint: L("a secret is a key or a password: vpnctl secret set \(profile.name) \(name) < file"))
            } catch let e as SystemError {
                throw VPNError(.failure, e.description)
            }
        }
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
        if value.isEmpty {
            throw VPNError(.usage, L("no value on standard input for secret '\(name)'"),
                           hint: L("pipe the value in: vpnctl secret set \(profile.name) \(name) < file"))
        }
        let reference = profile.secretReferences.first { $0.name == name }
        try checkShape(value, name: name, field: reference?.field, profile: profile.name)
        // A provider checks the values it can (a WireGuard key must be a key).
        if let provider = try? ProviderRegistry.provider(for: profile) { try provider.checkSecret(name: name, value: value) }
        try manager.store.secrets.set(profile.id, name: name, value: value)
        if inv.options.json {
            inv.output.emit(SetResult(profile: profile.name, secret: name, referenced: reference != nil))
        } else {
            inv.output.line(L("set secret '\(name)' for '\(profile.name)'"))
            if reference == nil {
                inv.output.note(L("note: '\(profile.name)' does not refer to a secret named '\(name)' (it refers to: \(profile.secretReferences.map(\.name).joined(separator: ", ")))"))
            }
        }
        return .ok
    }

    /// Keys and passwords are one line of text; PEM keys and static keys span
    /// lines, and an IKEv2 identity or a plugin's secret may be binary.
    static func checkShape(_ value: [UInt8], name: String, field: String?, profile: String) throws {
        let field = field ?? ""
        let binary = field == "identitySecret" || field.hasPrefix("secrets.")
        let multiLine = binary || ["keySecret", "tlsCryptSecret", "tlsAuthSecret", "tlsCryptV2Secret"].contains(field)
        let bad: UInt8?
        if binary { bad = nil } else if multiLine { bad = value.first { $0 == 0 } } else { bad = value.first { $0 == 0 || $0 == 0x0A || $0 == 0x0D } }
        guard let bad else { return }
        let what = bad == 0 ? L("a NUL byte") : L("a line break")
        throw VPNError(.configurationInvalid,
                       multiLine ? L("the value for secret '\(name)' contains \(what)")
                                 : L("the value for secret '\(name)' contains \(what); this secret is one line (one trailing newline is removed)"),
                       hint: L("check the file: vpnctl secret set \(profile) \(name) < file"))
    }

    static func runList(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let stored = Set(try manager.store.secrets.names(profile.id))
        var rows: [Row] = profile.secretReferences.map { Row(name: $0.name, isSet: stored.contains($0.name), field: $0.field) }
        let referenced = Set(rows.map(\.name))
        rows += stored.subtracting(referenced).sorted().map { Row(name: $0, isSet: true, field: nil) }
        if inv.options.json {
            inv.output.emit(ListResult(profile: profile.name, secrets: rows))
            return .ok
        }
        if rows.isEmpty {
            inv.output.note(L("'\(profile.name)' has no secrets"))
            return .ok
        }
        inv.output.table([L("NAME"), L("SET"), L("USED BY")], rows.map { [$0.name, $0.isSet ? L("yes") : L("no"), $0.field ?? "-"] })
        return .ok
    }
}
