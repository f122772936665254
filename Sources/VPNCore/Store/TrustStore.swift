import VPNSystem

/// vpnctl's trust anchors: `<config-dir>/trust/<sha256>.pem`, one PEM
/// certificate per file, named by the SHA-256 of its DER; installed by an
/// administrator or an imported profile. vpnctl never generates a CA.
public struct TrustStore: Sendable {
    public let directory: String

    public init(configDirectory: String) { directory = configDirectory + "/trust" }

    public func path(_ fingerprint: String) -> String { "\(directory)/\(fingerprint).pem" }

    public func exists(_ fingerprint: String) -> Bool { FileSystem.exists(path(fingerprint)) }

    /// Installs one certificate (as `PEM.encode` writes it). A file already
    /// there with other content is replaced: the name decides the content.
    public func install(_ pem: [UInt8], fingerprint: String) throws {
        do {
            try FileSystem.ensurePrivateDirectory(FileSystem.parentDirectory(of: directory))
            try FileSystem.ensurePrivateDirectory(directory, mode: 0o755)
            if try FileSystem.readFileIfPresent(path(fingerprint)) != pem {
                try AtomicFile.write(pem, to: path(fingerprint), mode: 0o644)
            }
        } catch {
            throw storeError(error)
        }
    }

    /// The certificate of an anchor, checked: the file must hold exactly one
    /// PEM certificate whose SHA-256 is the file's name.
    public func certificate(_ fingerprint: String) throws -> String {
        let file = path(fingerprint)
        guard TrustAnchor.isFingerprint(fingerprint) else {
            throw VPNError(.configurationInvalid, L("'\(OpenVPNDirectives.shown(fingerprint))' is not a trust anchor fingerprint (64 hex digits)"),
                           remedy: .edit(profile: nil, field: "caFingerprints"))
        }
        let bytes: [UInt8]
        do {
            guard let b = try FileSystem.readFileIfPresent(file) else {
                throw VPNError(.configurationInvalid, L("trust anchor \(file) is not installed"),
                               hint: L("import the profile again, or install that CA certificate as \(file)"))
            }
            bytes = b
        } catch let e as SystemError {
            throw VPNError(.configurationInvalid, L("cannot read trust anchor \(file): \(e)"))
        }
        let blocks = PEM.blocks(String(decoding: bytes, as: UTF8.self))
        let certificates = blocks.filter { $0.label == "CERTIFICATE" }.count
        guard blocks.count == 1, certificates == 1, let der = blocks[0].der, SHA256.hex(der) == fingerprint else {
            let held = certificates == blocks.count ? "\(certificates) certificate\(certificates == 1 ? "" : "s")"
                : "\(certificates) certificate\(certificates == 1 ? "" : "s") and \(blocks.count - certificates) other PEM block\(blocks.count - certificates == 1 ? "" : "s")"
            let what = blocks.count == 1 && certificates == 1 ? "a certificate whose SHA-256 is not its name" : held
            throw VPNError(.configurationInvalid, L("trust anchor \(file) holds \(what); an anchor is exactly one certificate, named by its SHA-256"),
                           hint: L("or leave in the file only the certificate whose SHA-256 is its name"), remedy: .reimport)
        }
        return PEM.encode(label: "CERTIFICATE", der: der)
    }

    /// The CA bundle openvpn gets for one run: exactly these anchors, each checked.
    public func bundle(_ fingerprints: [String]) throws -> [UInt8] {
        guard !fingerprints.isEmpty else {
            throw VPNError(.configurationInvalid, L("the profile names no trust anchor"), hint: L("import the profile again with its <ca>"))
        }
        return Array(try fingerprints.map(certificate).joined().utf8)
    }
}
