#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// A third-party packet-tunnel provider as its manifest declares it
/// (`/usr/lib/vpnctl/providers/*.json`, `/etc/vpnctl/providers/*.json`).
public struct PluginManifest: Equatable, Sendable {
    public static let packetTunnel = "packet-tunnel"
    /// The largest manifest read.
    public static let maximumSize = 64 << 10

    public var identifier: String
    /// An absolute path.
    public var executable: String
    public var version: String
    public var capabilities: [String]
    /// The account the plugin runs as (never root).
    public var user: String
    /// The manifest file.
    public var path: String

    public init(identifier: String, executable: String, version: String, capabilities: [String], user: String, path: String) {
        self.identifier = identifier
        self.executable = executable
        self.version = version
        self.capabilities = capabilities
        self.user = user
        self.path = path
    }

    /// Reverse-DNS style: letters, digits, '.', '-' and '_', 1 to 255 of them.
    public static func isValidIdentifier(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 255 && s.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    /// Parses a manifest's bytes; throws a message naming the field.
    public static func parse(_ bytes: [UInt8], path: String) throws -> PluginManifest {
        let value: JSONValue
        do { value = try JSONSyntax.parse(bytes) } catch { throw PluginProblem("is not JSON (\(error))") }
        let r = JSONReader(value)
        do {
            if let v = try r.int("schemaVersion"), v != 1 { throw PluginProblem("has schemaVersion \(v); this vpnctl reads 1") }
            guard let identifier = try r.string("identifier"), isValidIdentifier(identifier) else {
                throw PluginProblem("has no valid identifier (letters, digits, '.', '-', '_')")
            }
            guard let executable = try r.string("executable"), executable.hasPrefix("/"), !executable.utf8.contains(0) else {
                throw PluginProblem("names no executable by absolute path")
            }
            guard let user = try r.string("user"), !user.isEmpty else {
                throw PluginProblem("names no user to run as")
            }
            return PluginManifest(identifier: identifier, executable: FileSystem.normalized(executable),
                                  version: try r.string("version") ?? "", capabilities: try r.strings("capabilities"),
                                  user: user, path: path)
        } catch let p as JSONDecodeProblem {
            throw PluginProblem("is not a manifest: \(p)")
        }
    }
}

/// Why a manifest or its plugin cannot be used, in words that follow the file name.
public struct PluginProblem: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ text: String) { description = text }
}

/// What the catalog needs from the system: file facts without following
/// symlinks, file contents, accounts, and the checked walk down an
/// executable's path (PathWalkFiles). Unit tests use a fake.
public protocol PluginFiles: PathWalkFiles {
    func info(_ path: String) throws -> FileSystem.Info?
    func read(_ path: String) throws -> [UInt8]
    func list(_ directory: String) throws -> [String]
    func user(_ name: String) -> UserIdentity?
}

public struct SystemPluginFiles: PluginFiles {
    let walk = SystemPathWalkFiles()
    public init() {}
    public func info(_ path: String) throws -> FileSystem.Info? { try FileSystem.info(path) }
    public func read(_ path: String) throws -> [UInt8] {
        try FileSystem.readFileIfPresent(path, limit: PluginManifest.maximumSize) ?? []
    }
    public func list(_ directory: String) throws -> [String] { try FileSystem.list(directory) }
    public func user(_ name: String) -> UserIdentity? { UserIdentity.lookup(name) }
    public func openRoot() throws -> (Int32, PathEntry) { try walk.openRoot() }
    public func open(_ name: String, in parent: Int32) throws -> (Int32, PathEntry)? { try walk.open(name, in: parent) }
    public func readLink(_ handle: Int32) throws -> String { try walk.readLink(handle) }
    public func openFile(_ name: String, in parent: Int32, as entry: PathEntry) throws -> Int32? {
        try walk.openFile(name, in: parent, as: entry)
    }
    public func head(_ handle: Int32, _ count: Int) throws -> [UInt8] { try walk.head(handle, count) }
    public func followed(_ path: String) throws -> PathEntry? { try walk.followed(path) }
    public func close(_ handle: Int32) { walk.close(handle) }
}

/// A plugin that may run: its manifest, its account, and its executable
/// as the checked walk left it, open (closed with this object), so that the
/// file that was checked is the file that runs.
public final class CheckedPlugin {
    public let manifest: PluginManifest
    public let user: UserIdentity
    public let executable: CheckedExecutable
    let release: () -> Void

    public init(manifest: PluginManifest, user: UserIdentity, executable: CheckedExecutable, release: @escaping () -> Void) {
        self.manifest = manifest
        self.user = user
        self.executable = executable
        self.release = release
    }

    deinit { release() }
}

/// The installed plugins: manifests in the package directory, then the
/// administrator's (which wins for an identifier both have), each checked
/// for the right to provide a tunnel (the "entitlement").
public struct PluginCatalog {
    public static let packageDirectory = "/usr/lib/vpnctl/providers"

    public let directories: [String]
    let files: any PluginFiles

    public init(directories: [String], files: any PluginFiles = SystemPluginFiles()) {
        self.directories = directories
        self.files = files
    }

    /// The package directory (VPNCTL_PROVIDERS_DIR replaces it) and
    /// `<config dir>/providers` (/etc/vpnctl/providers by default).
    public static func standard(configDirectory: String, environment: [String: String]) -> PluginCatalog {
        let package = environment["VPNCTL_PROVIDERS_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? packageDirectory
        return PluginCatalog(directories: [package, FileSystem.normalized(configDirectory + "/providers")])
    }

    /// The process's own environment's choice (the supervisor passes it on).
    public static func standard(configDirectory: String) -> PluginCatalog {
        var env: [String: String] = [:]
        if let p = getenv("VPNCTL_PROVIDERS_DIR") { env["VPNCTL_PROVIDERS_DIR"] = String(cString: p) }
        return standard(configDirectory: configDirectory, environment: env)
    }

    /// One manifest file and what became of it.
    public struct Entry: Sendable {
        public let path: String
        public let manifest: PluginManifest?
        /// Why it may not run (nil: it may), as "FILE: reason".
        public let problem: String?
        /// The account it runs as, once checked.
        public let identity: UserIdentity?
        /// Another manifest of the same identifier that takes precedence.
        public let shadowedBy: String?
    }

    /// Every manifest, in precedence order (the administrator's first);
    /// a later one of an identifier already seen is shadowed.
    public func entries() -> [Entry] {
        var raw: [(String, PluginManifest?, String?, UserIdentity?)] = []
        for dir in directories.reversed() {
            let names: [String]
            do {
                if try files.info(dir) == nil { continue }
                try checkOwnership(dir, isDirectory: true)
                try checkAncestors(of: dir)
                names = try files.list(dir).filter { $0.hasSuffix(".json") }
            } catch {
                raw.append((dir, nil, "\(dir): \(error)", nil))
                continue
            }
            for name in names {
                let path = "\(dir)/\(name)"
                do {
                    let (m, who, exe) = try check(path)
                    files.close(exe.handle)
                    raw.append((path, m, nil, who))
                } catch let p as PluginParsed {
                    raw.append((path, p.manifest, "\(p.file): \(p.problem)", nil))
                } catch {
                    raw.append((path, nil, "\(path): \(error)", nil))
                }
            }
        }
        var first: [String: String] = [:]
        return raw.map { path, m, problem, who in
            var shadow: String? = nil
            if let id = m?.identifier {
                if let f = first[id] { shadow = f } else { first[id] = path }
            }
            return Entry(path: path, manifest: m, problem: problem, identity: who, shadowedBy: shadow)
        }
    }

    /// A manifest parsed but refused: the problem names the file at fault
    /// (the manifest or its executable).
    struct PluginParsed: Error {
        let manifest: PluginManifest
        let file: String
        let problem: String
    }

    /// Reads and checks one manifest and its executable and user; the
    /// executable comes back open (the caller closes it).
    func check(_ path: String) throws -> (PluginManifest, UserIdentity, CheckedExecutable) {
        // Read first (never through a symlink, never a FIFO), so that a refusal names the identifier.
        let m = try PluginManifest.parse(try files.read(path), path: path)
        func refuse(_ file: String, _ problem: String) -> PluginParsed { PluginParsed(manifest: m, file: file, problem: problem) }
        do {
            try checkOwnership(path, isDirectory: false)
        } catch {
            throw refuse(path, "\(error)")
        }
        guard m.capabilities.contains(PluginManifest.packetTunnel) else {
            throw refuse(path, "does not declare the capability '\(PluginManifest.packetTunnel)' (capabilities: \(m.capabilities.isEmpty ? "none" : m.capabilities.joined(separator: ", ")))")
        }
        guard let who = files.user(m.user) else {
            throw refuse(path, "names the user '\(m.user)', who does not exist")
        }
        if who.uid == 0 || who.gid == 0 {
            throw refuse(path, "names the user '\(m.user)' (uid \(who.uid), gid \(who.gid)); a plugin runs without root, as an unprivileged user")
        }
        let exe: CheckedExecutable
        do {
            exe = try ExecutablePath.open(m.executable, in: files)
        } catch let p as ExecutablePathProblem {
            throw refuse(m.executable, PluginCatalog.words(p, subject: m.executable))
        } catch {
            throw refuse(m.executable, "\(error)")
        }
        return (m, who, exe)
    }

    /// A refused path in words that follow the file's name; a directory's
    /// problem names the directory (and the symlink that led there) and the fix.
    static func words(_ p: ExecutablePathProblem, subject: String) -> String {
        let via = p.via.map { L(" (reached through the symlink \($0))") } ?? ""
        let fix = L("; every directory on the path, symlinks resolved, must be root's and writable only by root: make \(p.path) so (chown root, chmod go-w) or install the plugin elsewhere")
        let elsewhere = p.path == subject ? "" : L(" (\(p.path))")
        switch p.kind {
        case .missing: return L("does not exist") + elsewhere + via
        case .directoryMissing: return L("is in \(p.path), which does not exist") + via
        case .notDirectory: return L("is in \(p.path), which is not a directory") + via
        case .directoryOwner(let uid): return L("is in \(p.path), which is owned by uid \(uid), not root") + via + fix
        case .directoryWritable(let mode):
            return L("is in \(p.path), which is writable by group or others (mode \(String(mode, radix: 8))) and not sticky") + via + fix
        case .symlinkOwner(let uid): return L("is in \(p.path), a symlink owned by uid \(uid), not root") + via + fix
        case .tooManySymlinks: return L("is reached through more than \(ExecutablePath.maximumSymlinks) symlinks (at \(p.path))")
        case .isSymlink: return L("is a symlink; vpnctl follows none here") + elsewhere + via
        case .notRegular: return L("is not a regular file") + elsewhere + via
        case .owner(let uid): return L("is owned by uid \(uid), not root") + elsewhere + via
        case .writable(let mode): return L("is writable by group or others (mode \(String(mode, radix: 8)))") + elsewhere + via
        case .notExecutable: return L("is not executable") + elsewhere + via
        case .changed(let resolved):
            return L("resolved to \(resolved) when checked, but the path leads elsewhere now: its resolution changed during the check, so it is refused; try again, and find what rewrites the path")
        case .interpreterNotAbsolute(let i): return L("is a script whose interpreter '\(i)' is not an absolute path")
        case .interpreterTooDeep: return L("is a script whose interpreter is a script, too many levels deep")
        case .interpreter(let i, let inner): return L("is a script whose interpreter is refused: \(i): \(words(inner, subject: i))")
        }
    }

    /// Every directory above `path`, symlinks resolved, is root's and
    /// writable by root alone (or sticky, as /tmp), so nobody else can swap
    /// what it holds.
    func checkAncestors(of path: String) throws {
        do {
            try ExecutablePath.checkDirectory(FileSystem.parentDirectory(of: path), in: files)
        } catch let p as ExecutablePathProblem {
            throw PluginProblem(PluginCatalog.words(p, subject: path))
        }
    }

    /// Owned by root, writable by root alone, not a symlink.
    func checkOwnership(_ path: String, isDirectory: Bool) throws {
        guard let i = try files.info(path) else { throw PluginProblem("does not exist") }
        if i.isSymlink { throw PluginProblem("is a symlink; vpnctl follows none here") }
        if isDirectory ? !i.isDirectory : !i.isRegular { throw PluginProblem(isDirectory ? "is not a directory" : "is not a regular file") }
        if i.owner != 0 { throw PluginProblem("is owned by uid \(i.owner), not root") }
        if i.mode & 0o022 != 0 {
            throw PluginProblem("is writable by group or others (mode \(String(i.mode, radix: 8)))")
        }
    }

    /// The plugin for `identifier`, checked, or the error `start` reports:
    /// none installed (naming those that are), or refused (naming the file).
    public func plugin(_ identifier: String) throws -> CheckedPlugin {
        let all = entries()
        if let e = all.first(where: { $0.manifest?.identifier == identifier && $0.shadowedBy == nil }) {
            var problem = e.problem
            if e.manifest != nil, e.identity != nil, problem == nil {
                // Checked again, to hold the executable open from the check to the run.
                do {
                    let (m, who, exe) = try check(e.path)
                    return CheckedPlugin(manifest: m, user: who, executable: exe) { [files] in files.close(exe.handle) }
                } catch let p as PluginParsed {
                    problem = "\(p.file): \(p.problem)"
                } catch {
                    problem = "\(e.path): \(error)"
                }
            }
            throw VPNError(.providerUnavailable, L("provider plugin '\(identifier)' may not run: \(problem ?? e.path)"),
                           hint: L("a plugin's manifest and executable must be regular files owned by root and writable only by root, in directories (symlinks resolved) that only root can write, declare '\(PluginManifest.packetTunnel)', and name an existing unprivileged user"))
        }
        let installed = all.filter { $0.shadowedBy == nil }.compactMap { e in e.manifest.map { "\($0.identifier) (\(e.path))" } }
        let near = all.compactMap(\.manifest?.identifier).first { $0.lowercased() == identifier.lowercased() }
        var hint = installed.isEmpty
            ? L("no provider plugins are installed (manifests in \(directories.joined(separator: L(" or "))))")
            : L("installed: \(installed.joined(separator: ", "))")
        if let near { hint += L("; identifiers are compared exactly: did you mean '\(near)'?") }
        let broken = all.filter { $0.manifest == nil }.compactMap(\.problem)
        if !broken.isEmpty { hint += L("; unreadable: \(broken.joined(separator: "; "))") }
        throw VPNError(.providerUnavailable, L("no provider plugin '\(identifier)' is installed"), hint: hint)
    }
}
