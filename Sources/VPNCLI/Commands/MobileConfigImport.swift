import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl import x.mobileconfig`: every VPN payload becomes a profile, every
/// certificate payload a trust anchor, in one store write. A re-import of the
/// same PayloadIdentifier updates the profiles it made (same ids), says
/// "unchanged" for those that did not change, and removes those whose payload
/// is gone (stopped first).
enum MobileConfigImport {
    struct ProfileResult: Encodable {
        let id: String
        let name: String
        let `protocol`: String
        let revision: Int
        let payloadIdentifier: String
        /// created, updated, unchanged or removed.
        let change: String
        let secrets: [String]
        /// What the tunnel will do (nil for a removed profile).
        var summary: ImportSummary? = nil
    }

    struct Anchor: Encodable {
        let fingerprint: String
        let subject: String
        let notAfter: String
    }

    struct Signer: Encodable {
        let subject: String
        let issuer: String
        let notAfter: String
        let chainVerified: Bool
    }

    struct Result: Encodable {
        var schemaVersion = 1
        let identifier: String
        let signer: Signer?
        let changed: Bool
        let profiles: [ProfileResult]
        let trustAnchors: [Anchor]
        let notes: [String]
    }

    /// The certificates of `--ca FILE` (PEM, or one DER certificate).
    static func signerAnchors(_ path: String) throws -> [Crypto.Certificate] {
        let bytes: [UInt8]
        do {
            guard let b = try FileSystem.readFileIfPresent(path, followSymlinks: true, limit: ImportFormat.maximumSize) else {
                throw VPNError(.usage, L("--ca \(path.abbreviated(200)): no such file"))
            }
            bytes = b
        } catch let e as VPNError {
            throw e
        } catch {
            throw VPNError(.usage, L("--ca \(path.abbreviated(200)): \(error)"))
        }
        do {
            let text = String(decoding: bytes, as: UTF8.self)
            let certs = text.containsUTF8("-----BEGIN") ? try Crypto.certificates(pem: text) : [try Crypto.certificate(der: bytes)]
            guard !certs.isEmpty else { throw Crypto.Problem("no certificate in it") }
            return certs
        } catch let p as Crypto.Problem {
            throw VPNError(.usage, L("--ca \(path.abbreviated(200)): \(p.message)"), hint: L("give the CA certificate that issued the signer's certificate (PEM)"))
        }
    }

    /// `--identity-password-stdin`: one line from standard input (asked for
    /// without echo on a terminal), never from the command line.
    static func identityPassword(_ inv: Invocation, file: String) throws -> String? {
        guard inv.args.flag("identity-password-stdin") else { return nil }
        if file == "-" {
            throw VPNError.usage(L("--identity-password-stdin reads standard input, which already holds the profile"), hint: L("give the profile as a file"))
        }
        var value: [UInt8]
        if inv.context.stdinIsTerminal {
            value = inv.context.readSecretFromTerminal("password of the profile's PKCS#12 identity: ")
        } else {
            do { value = try inv.context.readStdin(SecretStore.maximumSize) } catch { throw VPNError.from(error) }
        }
        if value.last == 0x0A { value.removeLast() }
        if value.last == 0x0D { value.removeLast() }
        return String(decoding: value, as: UTF8.self)
    }

    static func run(_ inv: Invocation, bytes: [UInt8], file: String, source: String, defaultName: String) throws -> ExitCode {
        let anchors = try inv.args.value("ca").map(signerAnchors)
        let options = MobileConfig.Options(name: inv.args.value("name"), username: inv.args.value("username"), signerAnchors: anchors,
                                           identityPassword: try identityPassword(inv, file: file))
        let contents = try MobileConfig.read(bytes, source: source, defaultName: defaultName, options: options)
        let desired = contents.items.map {
            DesiredProfile(origin: ProfileOrigin(profileIdentifier: contents.identifier, payloadIdentifier: $0.payloadIdentifier),
                           result: $0.result, source: source)
        }
        var certificates: [String: [UInt8]] = [:]
        for a in contents.anchors { certificates[a.fingerprint] = Array(a.pem.utf8) }
        let imports = ProfileImport(store: inv.store, runtime: inv.controller.runtime)
        let plan = try imports.planReconcile(desired, scope: .configurationProfile(identifier: contents.identifier, source: source),
                                             anchors: certificates)
        // Profiles the new version dropped are stopped before they go.
        try stopRemoved(inv, plan) { old in
            (VPNError(.failure, L("'\(old.name)' (dropped from \(source)) is still running; nothing was changed"),
                      hint: L("stop it with: vpnctl stop \(old.name)")),
             L("stopped '\(old.name)' before removing it (its payload is gone from \(source))"))
        }
        let outcome = try imports.commit(plan)
        noteLeftovers(inv, outcome)
        render(inv, contents, outcome.plan)
        return .ok
    }

    static func render(_ inv: Invocation, _ contents: MobileConfig.Contents, _ plan: ImportPlan) {
        let results = plan.changes.map { c in
            ProfileResult(id: c.profile.id.lowercasedString, name: c.profile.name, protocol: c.profile.protocol.kind.rawValue,
                          revision: c.profile.revision, payloadIdentifier: c.profile.origin?.payloadIdentifier ?? "", change: c.change.rawValue,
                          secrets: c.change == .removed ? [] : c.secrets.keys.sorted(),
                          // As before the use case: only an unchanged profile's row carries its summary.
                          summary: c.change == .unchanged ? c.summary : nil)
        }
        let anchorRows = contents.anchors.map { Anchor(fingerprint: $0.fingerprint, subject: $0.subject, notAfter: $0.notAfter) }
        let signer = contents.signer.map { Signer(subject: $0.subject, issuer: $0.issuer, notAfter: $0.notAfter, chainVerified: contents.chainVerified) }
        let notes = contents.notes + contents.items.flatMap(\.result.notes)
        for note in notes { inv.output.note(L("note: \(note)")) }
        if inv.options.json {
            inv.output.emit(Result(identifier: contents.identifier, signer: signer, changed: plan.changed, profiles: results,
                                   trustAnchors: anchorRows, notes: notes))
            return
        }
        if let s = signer {
            inv.output.line(s.chainVerified ? L("signed by: \(s.subject) (signature verified, chain checked against --ca)")
                                            : L("signed by: \(s.subject) (signature verified; the signer was not checked against a CA: give --ca FILE)"))
        } else {
            inv.output.line(L("unsigned profile \(contents.identifier.quotedForMessage)"))
        }
        for r in results {
            switch r.change {
            case "created": inv.output.line(L("imported '\(r.name)' (\(r.protocol), id \(r.id))"))
            case "updated": inv.output.line(L("updated '\(r.name)' (\(r.protocol), id \(r.id), revision \(r.revision))"))
            case "unchanged": inv.output.line(L("unchanged '\(r.name)' (\(r.protocol), id \(r.id))"))
            default: inv.output.line(L("removed '\(r.name)' (its payload is gone from the profile)"))
            }
            if !r.secrets.isEmpty && r.change != "unchanged" && r.change != "removed" {
                inv.output.line(L("  secrets stored: \(r.secrets.joined(separator: ", "))"))
            }
            if let summary = r.summary, r.change != "unchanged" { inv.output.line(L("  tunnel: \(summary.text)")) }
        }
        for a in anchorRows { inv.output.line(L("trust anchor: \(a.fingerprint) \(a.subject) (expires \(a.notAfter))")) }
    }

    /// Stops each running profile the plan removes, before anything is
    /// written; one that keeps running stops the import (`refusal`: the error
    /// and the note for a stopped one, in the front door's words).
    static func stopRemoved(_ inv: Invocation, _ plan: ImportPlan, refusal: (Profile) -> (VPNError, String)) throws {
        for old in plan.removed {
            let current = try inv.controller.derive(old)
            guard current.supervisorAlive else { continue }
            let (_, stopped) = try TunnelActions.stop(inv, old, wait: true, timeout: 10)
            let (error, note) = refusal(old)
            if stopped.supervisorAlive { throw error }
            inv.output.note(note)
        }
    }

    /// What a commit could not remove once the store was written.
    static func noteLeftovers(_ inv: Invocation, _ outcome: ImportOutcome) {
        for left in outcome.leftovers {
            if let secret = left.secret {
                inv.output.note(L("note: '\(left.profile.name)' no longer names the secret \(secret), which could not be removed: \(left.error.message)"))
            } else {
                inv.output.note(L("note: '\(left.profile.name)' was removed, but not all of its files: \(left.error.message)"))
            }
        }
    }
}
