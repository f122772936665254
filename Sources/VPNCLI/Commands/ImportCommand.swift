import FoundationEssentials
import VPNCore
import VPNSystem

enum ImportCommand {
    static let spec = CommandSpec(
        name: "import", abstract: L("Import a profile from a wg-quick .conf, OpenVPN .ovpn, NetworkManager .nmconnection, strongSwan .sswan or Apple .mobileconfig file."),
        discussion: L("""
        The format is detected from the content. Keys (PrivateKey, PresharedKey, <key>,
        <tls-crypt>, <tls-auth>, <tls-crypt-v2>) move into secret files; each OpenVPN CA
        certificate becomes a trust anchor of its own (the config dir's trust/, named by
        its SHA-256). Lines that run programs (PostUp, up, down, plugin, script-security 2,
        also inside 'setenv opt') are refused, never run, and so is any directive
        vpnctl cannot carry; what has no effect here is listed. A line says what the
        tunnel will do (full or split, DNS, what stays outside; --json: summary).
        A .mobileconfig (XML or binary, signed or not) imports every VPN payload as a
        profile and every certificate payload as a trust anchor, all or nothing; a
        signed one is checked (--ca FILE also checks its signer's chain), and
        importing one with the same PayloadIdentifier again updates what it made.
        A NetworkManager keyfile (nmcli connection export, or a file of
        /etc/NetworkManager/system-connections) imports a wireguard, openvpn or
        strongswan connection; a secret whose *-flags say NetworkManager keeps it
        elsewhere stays unset, to set with 'vpnctl secret set'. A strongSwan app
        profile (.sswan) imports as an IKEv2 profile (its PKCS#12's password from
        --identity-password-stdin).
        Use '-' to read the file from standard input.
        """),
        examples: [
            "vpnctl import office.conf",
            "vpnctl import client.ovpn --name work",
            "vpnctl import office.nmconnection",
        ],
        options: [OptionSpec("name", value: "name", help: L("Profile name (default: the file name without its extension).")),
                  OptionSpec("username", value: "user", help: L("The auth-user-pass username of an OpenVPN profile.")),
                  OptionSpec("ca", value: "file", help: L("A signed .mobileconfig's signer must chain to this CA (PEM).")),
                  OptionSpec("identity-password-stdin", help: L("Read the password of a .mobileconfig's or .sswan's PKCS#12 identity from standard input.")),
                  OptionSpec("replace", help: L("Update the profile of that name in place (same id, revision bumped); a running tunnel keeps running until restarted.")),
                  OptionSpec("keep-id", help: L("Give the profile the id the file names (a vpnctl export's), not a new one."))],
        positionals: [PositionalSpec("file", help: L("The file to import."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let id: String
        let name: String
        let `protocol`: String
        let revision: Int
        let secrets: [String]
        let trustAnchors: [String]
        let notes: [String]
        /// WireGuard: the interface's public key, for the server's peer entry.
        let publicKey: String?
        /// What the tunnel will do: full or split, routes, DNS, kept outside.
        let summary: ImportSummary
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let file = inv.args.positionals[0]
        let bytes = try readInput(file, inv)
        if MobileConfig.recognizes(bytes), let flag = ["replace", "keep-id"].first(where: inv.args.flag) {
            throw VPNError.usage(L("--\(flag) is for wg-quick, .ovpn and JSON files; a .mobileconfig imported again updates the profiles it made, keeping their ids"),
                                 hint: L("import it without --\(flag)"))
        }
        if MobileConfig.recognizes(bytes) {
            return try MobileConfigImport.run(inv, bytes: bytes, file: file, source: file == "-" ? "standard input" : file,
                                              defaultName: ProfileImport.defaultName(file))
        }
        if inv.args.value("ca") != nil {
            throw VPNError.usage(L("--ca is for a .mobileconfig, and \(file == "-" ? "standard input" : file) is not one"))
        }
        let sswan = StrongSwanProfile.recognizes(bytes)
        if inv.args.flag("identity-password-stdin") && !sswan {
            throw VPNError.usage(L("--identity-password-stdin is for a .mobileconfig or a strongSwan app profile (.sswan), and \(file == "-" ? "standard input" : file) is neither"))
        }
        let name = inv.args.value("name") ?? ProfileImport.defaultName(file)
        if let problem = ProfileName.problems(name).first {
            throw VPNError(.usage, L("invalid profile name \(name.quotedForMessage): \(problem)"), hint: L("choose another with --name NAME"))
        }
        let options = ImportOptions(username: inv.args.value("username"),
                                    baseDirectory: file == "-" ? nil : FileSystem.parentDirectory(of: file),
                                    identityPassword: sswan ? try MobileConfigImport.identityPassword(inv, file: file) : nil)
        let source = file == "-" ? "standard input" : file
        let result = try ImportFormat.importChecked(bytes, name: name, source: source, options: options)
        let imports = ProfileImport(store: inv.store, runtime: inv.controller.runtime)
        let plan = try imports.planImport(result, name: name, source: source, replace: inv.args.flag("replace"), keepID: inv.args.flag("keep-id"))
        let outcome = try imports.commit(plan)
        let c = outcome.plan.changes[0]
        for note in c.notes { inv.output.note(L("note: \(note)")) }
        MobileConfigImport.noteLeftovers(inv, outcome)
        if let replaced = c.previous, (try? inv.controller.derive(replaced))?.isActive == true {
            inv.output.note(L("note: '\(name)' is running and keeps its old settings until restarted: vpnctl stop \(name.shellQuoted); vpnctl start \(name.shellQuoted)"))
        }
        for w in ProfileValidator(secretExists: { _ in true }).warnings(in: c.profile) { inv.output.note(L("warning: \(w)")) }
        let p = c.profile
        render(inv, c, headline: c.change == .updated ? L("updated '\(p.name)' (\(p.protocol.kind.rawValue), id \(p.id.lowercasedString), revision \(p.revision))")
                                                      : L("imported '\(p.name)' (\(p.protocol.kind.rawValue), id \(p.id.lowercasedString))"),
               nextSteps: true)
        return .ok
    }

    /// import's and create's output: the profile as stored, what the tunnel
    /// will do, the secrets and anchors written, and (`nextSteps`) what to do next.
    static func render(_ inv: Invocation, _ c: PlannedChange, headline: String, nextSteps showSteps: Bool) {
        let p = c.profile
        let publicKey = p.protocol.model.publicKey(readingSecret: { name in
            guard let value = c.secrets[name] else { throw VPNError(.failure, L("no secret \(name)")) }
            return value
        })
        if inv.options.json {
            inv.output.emit(Result(id: p.id.lowercasedString, name: p.name, protocol: p.protocol.kind.rawValue,
                                   revision: p.revision, secrets: c.secrets.keys.sorted(),
                                   trustAnchors: c.anchors.keys.sorted(), notes: c.notes, publicKey: publicKey,
                                   summary: c.summary))
            return
        }
        inv.output.line(headline)
        inv.output.line(L("tunnel: \(c.summary.text)"))
        if !c.secrets.isEmpty {
            inv.output.line(L("secrets stored: \(c.secrets.keys.sorted().joined(separator: ", "))"))
        }
        for fp in c.anchors.keys.sorted() { inv.output.line(L("trust anchor: \(fp)")) }
        guard showSteps else { return }
        for step in nextSteps(p, publicKey: publicKey, stored: Set(c.secrets.keys).union(c.keptSecrets)) { inv.output.line(step) }
    }

    /// What the user does next: give the server the public key (WireGuard),
    /// set the secrets the file could not carry, then start.
    static func nextSteps(_ p: Profile, publicKey: String?, stored: Set<String>) -> [String] {
        var steps: [String] = []
        if let publicKey { steps.append(L("public key: \(publicKey) (give this to the server as this peer's key)")) }
        let name = p.name.shellQuoted
        let missing = p.secretReferences.filter { !stored.contains($0.name) }.map(\.name)
        var commands: [String] = []
        for field in p.protocol.model.fieldsToSetBeforeStart {
            // Import's own option for the field, where it has one.
            commands.append(field == "protocol.username" ? L("vpnctl edit \(name) (set protocol.username; or import again with --username)")
                                                         : L("vpnctl edit \(name) (set \(field))"))
        }
        // A password start asks for is not a step: it may be stored instead.
        let asked = p.protocol.model.passwordSecret
        commands += missing.filter { $0 != asked }.map { "vpnctl secret set \(name) \($0)" }
        if let asked, missing.contains(asked) {
            commands.append(L("vpnctl start \(name) (it asks for the password; or store it first: vpnctl secret set \(name) \(asked))"))
        } else {
            commands.append("vpnctl start \(name)")
        }
        steps.append(L("next: \(commands.joined(separator: L("; then ")))"))
        return steps
    }

    /// The file to import: a regular file, or standard input ('-') or a pipe
    /// the shell named (/dev/fd/N, from `<(...)`); at most ImportFormat.maximumSize.
    static func readInput(_ file: String, _ inv: Invocation) throws -> [UInt8] {
        let limit = ImportFormat.maximumSize
        let source = file == "-" ? "standard input" : file
        do {
            if file == "-" { return try inv.context.readStdin(limit) }
            guard let b = try FileSystem.readFileIfPresent(file, followSymlinks: true, limit: limit,
                                                            acceptPipe: isDescriptorPath(file)) else {
                throw VPNError(.failure, L("cannot read \(file.abbreviated(200)): no such file"))
            }
            return b
        } catch let e as SystemError {
            throw VPNError.from(e)
        } catch let e as FileSystem.FileProblem {
            if case .tooLarge = e.kind {
                throw VPNError(.configurationInvalid,
                               L("\(source) is larger than \(FileSystem.sizeText(limit)), the limit for an imported file; that is not a VPN configuration file"))
            }
            throw VPNError(.failure, L("cannot import: \(e.description)"),
                           hint: L("import a regular file, or pipe it in with: vpnctl import - < FILE"))
        }
    }

    /// Paths that name an open descriptor: what `<(...)` hands over.
    static func isDescriptorPath(_ path: String) -> Bool {
        if path == "/dev/stdin" { return true }
        for prefix in ["/dev/fd/", "/proc/self/fd/"] where path.hasPrefix(prefix) {
            let n = path.dropFirst(prefix.count)
            return !n.isEmpty && n.allSatisfy { $0.isASCII && $0.isNumber }
        }
        return false
    }
}
