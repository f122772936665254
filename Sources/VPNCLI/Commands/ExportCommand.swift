#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNSystem

/// `vpnctl export`: a profile as a file another machine imports. Secrets
/// stay behind (named) unless root asks for them with --include-secrets.
enum ExportCommand {
    static let spec = CommandSpec(
        name: "export", abstract: L("Write a profile as a file another machine can import (wg-quick, .ovpn, .mobileconfig, JSON)."),
        discussion: L("""
        The default format is the profile's own: wg-quick for WireGuard, .ovpn for OpenVPN,
        .mobileconfig for IKEv2 and providers. Secrets are left out and named (in a comment,
        or the profile's PayloadDescription) unless --include-secrets is given, by root.
        The file goes to standard output, or to --output FILE (created 0600 when it holds secrets).
        """),
        examples: [
            "vpnctl export office > office.conf",
            "vpnctl export office --format mobileconfig --output office.mobileconfig",
        ],
        options: [OptionSpec("format", value: "format", kind: .choice(ProfileExport.Format.allCases.map(\.rawValue)),
                             help: L("json, wg-quick, ovpn or mobileconfig (default: the profile's own).")),
                  OptionSpec("include-secrets", help: L("Write the secret values too (root only).")),
                  OptionSpec("output", value: "file", help: L("Write to FILE instead of standard output (refused if it exists)."))],
        positionals: [PositionalSpec("profile", help: L("The profile's name or UUID."))],
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let format: ProfileExport.Format
        if let f = inv.args.value("format") {
            guard let parsed = ProfileExport.Format(rawValue: f) else {
                throw VPNError.usage(L("unknown format \(f.quotedForMessage)"), hint: L("use json, wg-quick, ovpn or mobileconfig"))
            }
            format = parsed
        } else {
            format = profile.protocol.model.defaultExportFormat
        }
        let include = inv.args.flag("include-secrets")
        if include && geteuid() != 0 {
            throw VPNError(.permissionDenied, L("--include-secrets writes secret values, and only root may"),
                           hint: L("run it as root, or export without --include-secrets and set the secrets on the other machine"))
        }
        if include && inv.args.value("output") == nil && inv.context.stdoutIsTerminal {
            throw VPNError.usage(L("--include-secrets would print secrets on a terminal"), hint: L("write them to a file: --output FILE"))
        }
        let store = manager.store
        var unreadable: [String: VPNError] = [:]
        let trust = TrustStore(configDirectory: inv.options.configDirectory)
        let out = try ProfileExport.export(profile, as: format, secret: { name in
            guard include else { return nil }
            do { return try store.secrets.read(profile.id, name: name) } catch { unreadable[name] = VPNError.from(error); return nil }
        }, anchor: { try trust.certificate($0) })
        if include, let (name, e) = unreadable.first {
            throw e.prefixed("secret '\(name)': ")
        }
        if let path = inv.args.value("output") {
            do {
                guard try FileSystem.info(path) == nil else {
                    throw VPNError(.failure, L("\(path.abbreviated(200)) already exists; vpnctl export does not overwrite"), hint: L("choose another --output, or remove it"))
                }
                try AtomicFile.write(out.bytes, to: path, mode: include ? 0o600 : 0o644)
            } catch let e as VPNError {
                throw e
            } catch {
                throw VPNError.from(error)
            }
        } else {
            inv.context.stdout.write(String(decoding: out.bytes, as: UTF8.self))
        }
        if !out.secretsLeftOut.isEmpty && !include {
            inv.output.note(L("note: secrets left out: \(out.secretsLeftOut.joined(separator: ", ")) (set them on the other machine with 'vpnctl secret set', or export with --include-secrets as root)"))
        }
        return .ok
    }
}
