import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl trust`: the CA certificates profiles trust, kept in the config
/// dir's trust/ one per file and named by SHA-256. vpnctl never generates
/// one; they come from an administrator (`trust add`) or an imported profile.
enum TrustCommand {
    static let spec = CommandSpec(
        name: "trust", abstract: L("List, show, add or remove trust anchors (the CA certificates profiles trust)."),
        subcommands: [listSpec, showSpec, addSpec, removeSpec])

    static let listSpec = CommandSpec(
        name: "list", abstract: L("List the trust anchors: fingerprint, subject, expiry and the profiles that use each."),
        examples: [
            "vpnctl trust list",
            "vpnctl trust list --json",
        ],
        run: runList)

    static let showSpec = CommandSpec(
        name: "show", abstract: L("Show one trust anchor and its certificate (PEM)."),
        examples: [
            "vpnctl trust show 3f2a9c1e",
        ],
        positionals: [PositionalSpec("fingerprint", help: L("Its SHA-256 fingerprint, or 8 or more of its first hex digits."))],
        run: runShow)

    static let addSpec = CommandSpec(
        name: "add", abstract: L("Install the CA certificates of a file (PEM or DER) as trust anchors."),
        discussion: L("A file holding a private key is refused: a trust anchor is a certificate only."),
        examples: [
            "vpnctl trust add corp-ca.pem",
            "vpnctl trust add - < corp-ca.der",
        ],
        positionals: [PositionalSpec("file", help: L("The certificate file ('-' for standard input)."))],
        run: runAdd)

    static let removeSpec = CommandSpec(
        name: "remove", aliases: ["rm"], abstract: L("Remove a trust anchor that no profile uses."),
        examples: [
            "vpnctl trust remove 3f2a9c1e",
        ],
        positionals: [PositionalSpec("fingerprint", help: L("Its SHA-256 fingerprint, or 8 or more of its first hex digits."))],
        run: runRemove)

    struct Row: Encodable {
        let fingerprint: String
        let subject: String
        let issuer: String
        let notBefore: String
        let notAfter: String
        let usedBy: [String]
    }

    struct ListResult: Encodable {
        var schemaVersion = 1
        let anchors: [Row]
    }

    struct ShowResult: Encodable {
        var schemaVersion = 1
        let anchor: Row
        let pem: String
    }

    struct AddResult: Encodable {
        var schemaVersion = 1
        let added: [Row]
    }

    struct RemoveResult: Encodable {
        var schemaVersion = 1
        let removed: String
    }

    static func users(_ fingerprint: String, _ profiles: [Profile]) -> [String] {
        profiles.filter { $0.protocol.anchorReferences.contains(fingerprint) }.map(\.name).sorted()
    }

    static func row(_ e: TrustStore.Entry, _ profiles: [Profile]) -> Row {
        Row(fingerprint: e.fingerprint, subject: e.certificate.subject, issuer: e.certificate.issuer,
            notBefore: e.certificate.notBefore, notAfter: e.certificate.notAfter, usedBy: users(e.fingerprint, profiles))
    }

    static func runList(_ inv: Invocation) throws -> ExitCode {
        let profiles = try inv.store.load()
        let trust = TrustStore(configDirectory: inv.options.configDirectory)
        // One broken anchor file is shown as such; it does not hide the others.
        let rows = try trust.fingerprints().map { fp -> Row in
            do {
                return row(try trust.entry(fp), profiles)
            } catch {
                return Row(fingerprint: fp, subject: "(unreadable: \(VPNError.from(error).message))", issuer: "", notBefore: "",
                           notAfter: "", usedBy: users(fp, profiles))
            }
        }
        if inv.options.json {
            inv.output.emit(ListResult(anchors: rows))
            return .ok
        }
        if rows.isEmpty {
            inv.output.note(L("no trust anchors (import a profile that brings its CA, or: vpnctl trust add FILE)"))
            return .ok
        }
        inv.output.table([L("FINGERPRINT"), L("SUBJECT"), L("EXPIRES"), L("USED BY")],
                         rows.map { [String($0.fingerprint.prefix(16)), $0.subject, String($0.notAfter.prefix(10)),
                                     $0.usedBy.isEmpty ? "-" : $0.usedBy.joined(separator: ",")] })
        return .ok
    }

    static func runShow(_ inv: Invocation) throws -> ExitCode {
        let profiles = try inv.store.load()
        let trust = TrustStore(configDirectory: inv.options.configDirectory)
        let e = try trust.entry(try trust.resolve(inv.args.positionals[0]))
        let r = row(e, profiles)
        if inv.options.json {
            inv.output.emit(ShowResult(anchor: r, pem: e.certificate.pem))
            return .ok
        }
        // The values line up one space after the widest label, as translated.
        let fields = [(L("fingerprint:"), r.fingerprint), (L("subject:"), r.subject), (L("issuer:"), r.issuer),
                      (L("valid:"), L("\(r.notBefore) to \(r.notAfter)")),
                      (L("used by:"), r.usedBy.isEmpty ? L("(no profile)") : r.usedBy.joined(separator: ", ")),
                      (L("file:"), trust.path(r.fingerprint))]
        let width = fields.map { $0.0.terminalWidth }.max() ?? 0
        for (label, value) in fields {
            inv.output.line(label + String(repeating: " ", count: width - label.terminalWidth + 1) + value)
        }
        for l in e.certificate.pem.split(separator: "\n") { inv.output.line(String(l)) }
        return .ok
    }

    static func runAdd(_ inv: Invocation) throws -> ExitCode {
        let file = inv.args.positionals[0]
        let bytes = try ImportCommand.readInput(file, inv)
        let text = String(decoding: bytes, as: UTF8.self)
        if text.containsUTF8("PRIVATE KEY-----") {
            throw VPNError(.configurationInvalid, L("\(file) holds a private key; a trust anchor is a certificate only"),
                           hint: L("give the CA certificate alone (and treat that key as exposed)"))
        }
        let certs: [Crypto.Certificate]
        do {
            certs = text.containsUTF8("-----BEGIN") ? try Crypto.certificates(pem: text) : [try Crypto.certificate(der: bytes)]
        } catch let p as Crypto.Problem {
            throw VPNError(.configurationInvalid, "\(file): \(p.message)", hint: L("give a PEM or DER X.509 certificate"))
        }
        guard !certs.isEmpty else { throw VPNError(.configurationInvalid, L("\(file): no certificate in it")) }
        let trust = TrustStore(configDirectory: inv.options.configDirectory)
        for c in certs { try trust.install(Array(c.pem.utf8), fingerprint: c.fingerprint) }
        let profiles = try inv.store.load()
        let rows = certs.map { c in Row(fingerprint: c.fingerprint, subject: c.subject, issuer: c.issuer, notBefore: c.notBefore,
                                        notAfter: c.notAfter, usedBy: users(c.fingerprint, profiles)) }
        if inv.options.json {
            inv.output.emit(AddResult(added: rows))
        } else {
            for r in rows { inv.output.line(L("trust anchor: \(r.fingerprint) \(r.subject) (expires \(r.notAfter))")) }
        }
        return .ok
    }

    static func runRemove(_ inv: Invocation) throws -> ExitCode {
        let profiles = try inv.store.load()
        let trust = TrustStore(configDirectory: inv.options.configDirectory)
        let fp = try trust.resolve(inv.args.positionals[0])
        let using = users(fp, profiles)
        if !using.isEmpty {
            throw VPNError(.configurationInvalid, L("trust anchor \(fp.prefix(16))… is used by \(using.map { "'\($0)'" }.joined(separator: ", ")); it was not removed"),
                           hint: L("remove or edit those profiles first"))
        }
        try trust.remove(fp)
        if inv.options.json {
            inv.output.emit(RemoveResult(removed: fp))
        } else {
            inv.output.line(L("removed trust anchor \(fp)"))
        }
        return .ok
    }
}
