import FoundationEssentials
import VPNSystem

/// What `vpnctl import` hands back: a profile plus the secret values that the
/// file carried, to be written to the secret store, never to the preferences.
public struct ImportResult: Sendable {
    public var profile: Profile
    public var secrets: [String: [UInt8]]
    public var notes: [String]
    /// Trust anchors the file carried (a CA), by SHA-256 fingerprint.
    public var anchors: [String: [UInt8]] = [:]
    /// What the file says that has no effect here (directive or key names),
    /// for the import summary; the notes say it in words.
    public var noEffect: [String] = []

    /// The profile id the file names (a vpnctl export's), for `--keep-id`.
    public var fileID: UUID? = nil
    /// The file is a whole vpnctl profile (JSON), not only a tunnel's configuration.
    public var isWholeProfile = false

    /// What the tunnel will do.
    public var summary: ImportSummary { ImportSummary.of(profile, noEffect: noEffect, stored: Set(secrets.keys)) }
}

/// Options an import needs beyond the file itself.
public struct ImportOptions: Sendable {
    public var username: String?
    /// The directory that relative file references in the file are read from.
    public var baseDirectory: String?
    /// `--identity-password-stdin`: the password of a PKCS#12 identity the file carries (.sswan).
    public var identityPassword: String?
    public init(username: String? = nil, baseDirectory: String? = nil, identityPassword: String? = nil) {
        self.username = username
        self.baseDirectory = baseDirectory
        self.identityPassword = identityPassword
    }

    /// A file the imported file names (a key, a CA): a relative path is read
    /// from `baseDirectory`; at most ImportFormat.maximumSize; nil when absent.
    func readReferenced(_ path: String) throws -> [UInt8]? {
        let full = path.hasPrefix("/") ? path : "\(baseDirectory ?? ".")/\(path)"
        return try FileSystem.readFileIfPresent(full, followSymlinks: true, limit: ImportFormat.maximumSize)
    }
}

/// The formats vpnctl recognises, supported or not yet.
public enum ImportFormat: String, Sendable {
    case wgQuick = "wg-quick .conf"
    case openVPN = "OpenVPN .ovpn"
    case mobileconfig = "Apple .mobileconfig"
    case networkManager = "NetworkManager keyfile"
    case json = "vpnctl JSON profile"

    public static let maximumSize = 1 << 20

    /// Decides by content, not by file extension.
    public static func detect(_ text: String) -> ImportFormat? {
        if text.drop(while: { $0.isWhitespace || $0 == "\u{FEFF}" }).first == "{" { return .json }
        if NMKeyfileImport.recognizes(text) { return .networkManager }
        var sawOpenVPN = 0
        for raw in text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline).prefix(400) {
            let line = raw.drop(while: { $0 == " " || $0 == "\t" || $0 == "\u{FEFF}" })
            let lower = line.lowercased()
            if lower.hasPrefix("[interface]") || lower.hasPrefix("[peer]") { return .wgQuick }
            if lower.hasPrefix("<plist") || lower.containsUTF8("<key>payloadtype</key>") { return .mobileconfig }
            if lower.hasPrefix("<ca>") || lower.hasPrefix("<tls-crypt>") || lower.hasPrefix("<tls-auth>") { return .openVPN }
            let word = lower.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) ?? ""
            if ["client", "remote", "dev", "proto", "auth-user-pass", "nobind", "persist-tun", "verb", "cipher", "tls-client"].contains(word) {
                sawOpenVPN += 1
                if sawOpenVPN >= 2 { return .openVPN }
            }
        }
        return nil
    }

    /// Parses `bytes` as a profile named `name`.
    /// What `vpnctl import` accepts: the file parsed, then the profile checked
    /// as it would be saved (the secrets the file carries count as set).
    public static func importChecked(_ bytes: [UInt8], name: String, source: String,
                                     options: ImportOptions = ImportOptions()) throws -> ImportResult {
        let result = try importProfile(bytes, name: name, source: source, options: options)
        let problems = ProfileValidator(secretExists: { result.secrets[$0] != nil }).problems(in: result.profile)
        if !problems.isEmpty {
            throw VPNError.invalid(problems.count == 1 ? L("\(source) imports as an incomplete profile (1 problem)")
                                      : L("\(source) imports as an incomplete profile (\(problems.count) problems)"),
                                   problems: problems, hint: L("fix the file and import it again"))
        }
        return result
    }

    public static func importProfile(_ bytes: [UInt8], name: String, source: String,
                                     options: ImportOptions = ImportOptions()) throws -> ImportResult {
        if bytes.count > maximumSize {
            throw VPNError(.configurationInvalid, L("\(source) is larger than 1 MiB; that is not a VPN configuration file"))
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw VPNError(.configurationInvalid, L("\(source) is not UTF-8 text"),
                           hint: L("vpnctl imports wg-quick .conf and OpenVPN .ovpn files"))
        }
        switch detect(text) {
        case .wgQuick:
            var r = try WGQuick.parse(text, name: name, source: source)
            r.fileID = ExportMarker.profileID(in: text)
            return r
        case .openVPN:
            var r = try OpenVPNImport.parse(text, name: name, source: source, options: options)
            r.fileID = ExportMarker.profileID(in: text)
            return r
        case .networkManager:
            return try NMKeyfileImport.parse(text, name: name, source: source, options: options)
        case .json:
            return try jsonProfile(Array(text.utf8), name: name, source: source, options: options)
        case .mobileconfig:
            throw VPNError(.configurationInvalid, L("\(source) is an \(ImportFormat.mobileconfig.rawValue) file, which may hold several profiles"),
                           hint: L("import it with: vpnctl import FILE"))
        case nil:
            throw VPNError(.configurationInvalid, L("cannot tell what kind of file \(source) is"),
                           hint: L("vpnctl imports wg-quick .conf files (with an [Interface] section), OpenVPN .ovpn files, NetworkManager keyfiles (with a [connection] section), strongSwan .sswan and Apple .mobileconfig files"))
        }
    }

    /// A profile as `vpnctl export --format json` (or `show --json`'s profile) writes
    /// it: a new id and revision here; its secrets are set afterwards.
    static func jsonProfile(_ bytes: [UInt8], name: String, source: String, options: ImportOptions = ImportOptions()) throws -> ImportResult {
        if StrongSwanProfile.recognizes(bytes) { return try StrongSwanProfile.parse(bytes, name: name, source: source, options: options) }
        var p: Profile
        do {
            p = try Profile.parse(bytes)
        } catch let problem as JSONSyntax.Problem {
            throw VPNError(.configurationInvalid, L("\(source):\(problem.line):\(problem.column): malformed JSON: \(problem.message)"))
        } catch let problem as JSONDecodeProblem {
            throw VPNError(.configurationInvalid, L("\(source): not a vpnctl profile: \(problem)"))
        }
        let fileID = p.id
        p.id = UUID()
        p.revision = 0
        p.name = name
        p.origin = nil
        let names = p.secretReferences.map(\.name)
        let notes = names.isEmpty ? [] : ["set its secrets with 'vpnctl secret set \(name) NAME': \(names.joined(separator: ", "))"]
        var result = ImportResult(profile: p, secrets: [:], notes: notes)
        result.fileID = fileID
        result.isWholeProfile = true
        return result
    }
}
