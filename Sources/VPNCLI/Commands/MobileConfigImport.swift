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
        let store = inv.store
        let existing = try store.load()
        let mine = existing.filter { $0.origin?.profileIdentifier == contents.identifier }

        var saving: [Profile] = []
        var rows: [(ProfileResult, ImportResult?)] = []
        for item in contents.items {
            var p = item.result.profile
            p.origin = ProfileOrigin(profileIdentifier: contents.identifier, payloadIdentifier: item.payloadIdentifier)
            if let old = mine.first(where: { $0.origin?.payloadIdentifier == item.payloadIdentifier }) {
                p.id = old.id
                p.revision = old.revision
                // What the administrator set here stays: enabled and who may control it.
                p.enabled = old.enabled
                p.policy = old.policy
                p.origin?.managedByApply = old.origin?.managedByApply ?? false
                let sameSecrets = item.result.secrets.allSatisfy { name, value in
                    (try? store.secrets.read(old.id, name: name)) == value
                }
                if p == old && sameSecrets {
                    rows.append((row(old, item, "unchanged"), nil))
                    continue
                }
                saving.append(p)
                rows.append((row(p, item, "updated"), item.result))
            } else {
                if let clash = existing.first(where: { $0.name == p.name }) {
                    let whose = clash.origin.map { "imported from \($0.profileIdentifier.quotedForMessage)" } ?? "made by hand"
                    throw VPNError(.configurationInvalid, L("\(source): a profile named '\(p.name)' already exists (\(whose)); nothing was imported"),
                                   hint: L("remove or rename the other profile, or import with --name NAME (one VPN payload only)"))
                }
                saving.append(p)
                rows.append((row(p, item, "created"), item.result))
            }
        }
        let kept = Set(contents.items.map(\.payloadIdentifier))
        let dropped = mine.filter { !kept.contains($0.origin?.payloadIdentifier ?? "") }

        var allAnchors: [String: [UInt8]] = [:]
        for a in contents.anchors { allAnchors[a.fingerprint] = Array(a.pem.utf8) }
        for item in contents.items { allAnchors.merge(item.result.anchors) { a, _ in a } }

        // Profiles the new version dropped are stopped before they go.
        for old in dropped {
            let controller = inv.controller
            let current = try controller.derive(old)
            if current.supervisorAlive {
                let (_, stopped) = try TunnelActions.stop(inv, old, wait: true, timeout: 10)
                if stopped.supervisorAlive {
                    throw VPNError(.failure, L("'\(old.name)' (dropped from \(source)) is still running; nothing was changed"),
                                   hint: L("stop it with: vpnctl stop \(old.name)"))
                }
                inv.output.note(L("stopped '\(old.name)' before removing it (its payload is gone from \(source))"))
            }
        }

        try write(store, inv, saving: saving, rows: rows, dropped: dropped, anchors: allAnchors)
        for old in dropped {
            do {
                try store.secrets.removeAll(old.id)
                try inv.controller.runtime.remove(old.id)
            } catch {
                inv.output.note(L("note: '\(old.name)' was removed, but not all of its files: \(VPNError.from(error).message)"))
            }
        }

        var results = rows.map(\.0).map { r -> ProfileResult in
            guard r.change != "unchanged", let saved = saving.first(where: { $0.id.lowercasedString == r.id }) else { return r }
            return ProfileResult(id: r.id, name: r.name, protocol: r.protocol, revision: saved.revision + 1,
                                 payloadIdentifier: r.payloadIdentifier, change: r.change, secrets: r.secrets)
        }
        results += dropped.map {
            ProfileResult(id: $0.id.lowercasedString, name: $0.name, protocol: $0.protocol.kind.rawValue, revision: $0.revision,
                          payloadIdentifier: $0.origin?.payloadIdentifier ?? "", change: "removed", secrets: [])
        }
        let anchorRows = contents.anchors.map { Anchor(fingerprint: $0.fingerprint, subject: $0.subject, notAfter: $0.notAfter) }
        let signer = contents.signer.map { Signer(subject: $0.subject, issuer: $0.issuer, notAfter: $0.notAfter, chainVerified: contents.chainVerified) }
        let notes = contents.notes + contents.items.flatMap(\.result.notes)
        for note in notes { inv.output.note(L("note: \(note)")) }
        let changed = results.contains { $0.change != "unchanged" }
        if inv.options.json {
            inv.output.emit(Result(identifier: contents.identifier, signer: signer, changed: changed, profiles: results,
                                   trustAnchors: anchorRows, notes: notes))
            return .ok
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
        return .ok
    }

    static func row(_ p: Profile, _ item: MobileConfig.Item, _ change: String) -> ProfileResult {
        ProfileResult(id: p.id.lowercasedString, name: p.name, protocol: p.protocol.kind.rawValue, revision: p.revision,
                      payloadIdentifier: item.payloadIdentifier, change: change, secrets: item.result.secrets.keys.sorted(),
                      summary: ImportSummary.of(p, noEffect: item.result.noEffect))
    }

    /// Secrets, anchors, then one store write. On failure the secrets are put
    /// back as they were, so a failed import leaves nothing behind.
    static func write(_ store: PreferencesStore, _ inv: Invocation, saving: [Profile], rows: [(ProfileResult, ImportResult?)],
                      dropped: [Profile], anchors: [String: [UInt8]]) throws {
        var undo: [() -> Void] = []
        do {
            for (row, result) in rows {
                guard let result, let p = saving.first(where: { $0.id.lowercasedString == row.id }) else { continue }
                let isNew = row.change == "created"
                if isNew { undo.append { try? store.secrets.removeAll(p.id) } }
                for (name, value) in result.secrets.sorted(by: { $0.key < $1.key }) {
                    if !isNew {
                        let old = try? store.secrets.read(p.id, name: name)
                        undo.append {
                            if let old { try? store.secrets.set(p.id, name: name, value: old) } else { try? store.secrets.remove(p.id, name: name) }
                        }
                    }
                    try store.secrets.set(p.id, name: name, value: value)
                }
            }
            let trust = TrustStore(configDirectory: inv.options.configDirectory)
            for (fingerprint, pem) in anchors.sorted(by: { $0.key < $1.key }) {
                try trust.install(pem, fingerprint: fingerprint)
            }
            if !saving.isEmpty || !dropped.isEmpty {
                try store.commit(saving: saving, removing: dropped.map(\.id))
            }
        } catch {
            for step in undo.reversed() { step() }
            throw error
        }
    }
}
