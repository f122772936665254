#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// Secrets live outside the preferences, one 0600 file each, under
/// `<config-dir>/secrets/<profile-id>/<name>`. Profiles refer to them by name.
/// Values are never printed, logged or put in JSON.
public struct SecretStore: Sendable {
    public let directory: String

    /// The largest secret: keys and passwords are far smaller.
    public static let maximumSize = 64 << 10

    public init(configDirectory: String) {
        directory = configDirectory + "/secrets"
    }

    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && !name.hasPrefix(".")
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }
    }

    func profileDirectory(_ id: UUID) -> String { "\(directory)/\(id.lowercasedString)" }

    public func path(_ id: UUID, _ name: String) -> String { "\(profileDirectory(id))/\(name)" }

    public func set(_ id: UUID, name: String, value: [UInt8]) throws {
        guard SecretStore.isValidName(name) else {
            throw VPNError.usage(L("\(name.quotedForMessage) is not a valid secret name"),
                                 hint: L("use letters, digits, '.', '_' and '-' (at most 64 characters)"))
        }
        if value.count > SecretStore.maximumSize {
            throw VPNError(.configurationInvalid, L("secret '\(name)' is larger than \(FileSystem.sizeText(SecretStore.maximumSize)), the limit for a secret"))
        }
        do {
            try FileSystem.ensurePrivateDirectory(FileSystem.parentDirectory(of: directory))
            try FileSystem.ensurePrivateDirectory(directory)
            try FileSystem.ensurePrivateDirectory(profileDirectory(id))
            try AtomicFile.write(value, to: path(id, name), mode: 0o600)
        } catch {
            throw storeError(error)
        }
    }

    public func exists(_ id: UUID, name: String) -> Bool {
        guard SecretStore.isValidName(name), let i = try? FileSystem.info(path(id, name)) else { return false }
        return i.isRegular
    }

    /// Checks that a set secret can be trusted before anything uses it: the
    /// secret directories and the file belong to us (or root), nobody else can
    /// write them, and nobody else can read the file. Throws `not set` when missing.
    public func check(_ id: UUID, name: String) throws {
        let p = path(id, name)
        do {
            for dir in [directory, profileDirectory(id)] where try FileSystem.info(dir) != nil {
                try FileSystem.checkTrustedDirectory(dir)
            }
            guard let info = try FileSystem.checkTrustedFile(p) else {
                throw VPNError(.configurationInvalid, L("secret '\(name)' is not set"),
                               remedy: .setSecret(profile: nil, name: name))
            }
            if info.mode & 0o077 != 0 {
                throw VPNError(.permissionDenied, L("secret file \(p) is readable by others (mode \(String(info.mode, radix: 8)))"),
                               hint: "chmod 600 \(p)") // English: a command line
            }
        } catch let e as VPNError {
            throw e
        } catch {
            throw storeError(error)
        }
    }

    /// Reads a secret for a provider, after `check`.
    public func read(_ id: UUID, name: String) throws -> [UInt8] {
        try check(id, name: name)
        do {
            return try FileSystem.readFileIfPresent(path(id, name), limit: SecretStore.maximumSize) ?? []
        } catch {
            throw storeError(error)
        }
    }

    public func names(_ id: UUID) throws -> [String] {
        do { return try FileSystem.list(profileDirectory(id)) } catch { throw storeError(error) }
    }

    public func remove(_ id: UUID, name: String) throws {
        do { try FileSystem.remove(path(id, name)) } catch { throw storeError(error) }
    }

    public func removeAll(_ id: UUID) throws {
        do {
            for name in try FileSystem.list(profileDirectory(id)) {
                try FileSystem.remove(path(id, name))
            }
            try FileSystem.removeDirectory(profileDirectory(id))
        } catch {
            throw storeError(error)
        }
    }
}

/// Maps a system failure on vpnctl's own files to the documented error.
func storeError(_ error: Error) -> VPNError {
    if let e = error as? VPNError { return e }
    if let e = error as? SystemError {
        if e.errno.isPermission {
            return VPNError(.permissionDenied, e.description, remedy: .privileges, cause: .system(e.errno.rawValue))
        }
        return VPNError(.configurationReadWriteFailed, e.description)
    }
    if let f = error as? FileSystem.FileProblem {
        switch f.kind {
        case .symlink:
            return VPNError(.permissionDenied, f.description, hint: L("replace the symlink with the file itself"))
        case .notRegular:
            return VPNError(.configurationReadWriteFailed, f.description, hint: L("replace it with a regular file, or remove it"))
        case .tooLarge:
            return VPNError(.configurationReadWriteFailed, f.description, hint: L("that is not a file vpnctl wrote; move it away"))
        }
    }
    if let t = error as? FileSystem.TrustProblem {
        return VPNError(.permissionDenied, t.description, hint: t.hint)
    }
    return VPNError(.configurationReadWriteFailed, "\(error)")
}
