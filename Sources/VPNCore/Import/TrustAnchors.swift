import FoundationEssentials
import VPNSystem

extension ProtocolConfiguration {
    /// The trust anchors (SHA-256 fingerprints) this configuration trusts.
    public var anchorReferences: [String] { model.anchorReferences }
}

extension TrustStore {
    /// One installed anchor, read and checked.
    public struct Entry: Sendable {
        public let fingerprint: String
        public let certificate: Crypto.Certificate
    }

    /// The fingerprints of the installed anchors (files named `<sha256>.pem`), sorted.
    public func fingerprints() throws -> [String] {
        do {
            guard try FileSystem.info(directory) != nil else { return [] }
            return try FileSystem.list(directory).filter { $0.hasSuffix(".pem") }.map { String($0.dropLast(4)) }
                .filter(TrustAnchor.isFingerprint).sorted()
        } catch {
            throw storeError(error)
        }
    }

    /// The anchor's certificate, checked against its name and read by libcrypto.
    public func entry(_ fingerprint: String) throws -> Entry {
        let pem = try certificate(fingerprint)
        guard let der = PEM.blocks(pem).first?.der else {
            throw VPNError(.configurationInvalid, L("trust anchor \(path(fingerprint)) is not a PEM certificate"))
        }
        do {
            return Entry(fingerprint: fingerprint, certificate: try Crypto.certificate(der: der))
        } catch let p as Crypto.Problem {
            throw VPNError(.configurationInvalid, L("trust anchor \(path(fingerprint)): \(p.message)"), remedy: .reimport)
        }
    }

    /// An installed fingerprint from a full one or a unique prefix of at least 8 hex digits.
    public func resolve(_ reference: String) throws -> String {
        let ref = reference.lowercased()
        let all = try fingerprints()
        if all.contains(ref) { return ref }
        guard ref.count >= 8, ref.allSatisfy(\.isHexDigit) else {
            throw VPNError(.configurationUnknown, L("no trust anchor \(reference.quotedForMessage)"),
                           hint: L("name an anchor by its SHA-256 fingerprint, or 8 or more of its first hex digits (vpnctl trust list)"))
        }
        let matches = all.filter { $0.hasPrefix(ref) }
        if matches.count == 1 { return matches[0] }
        if matches.isEmpty {
            throw VPNError(.configurationUnknown, L("no trust anchor starts with \(reference.quotedForMessage)"), hint: L("list them with: vpnctl trust list"))
        }
        throw VPNError(.usage, L("\(matches.count) trust anchors start with \(reference.quotedForMessage)"), hint: L("give more of the fingerprint"))
    }

    public func remove(_ fingerprint: String) throws {
        do { try FileSystem.remove(path(fingerprint)) } catch { throw storeError(error) }
    }
}
