#if canImport(Glibc)
import Glibc
#endif

/// The file operations vpnctl's state directories need, as a port: the run
/// directory's records, events and locks go through one, so that the
/// controller can be unit-tested on `MemoryFiles` without root or a real
/// directory. `SystemFiles` is the kernel's (the static `FileSystem`).
///
/// The trust rules (no symlinks, a known owner, nobody else may write) are
/// written once, in the extension below, over `info`, `followedInfo` and
/// `effectiveUser`: the fake is held to the same checks as the system.
public protocol Files: Sendable {
    /// lstat(2): facts about `path` itself; nil when it does not exist.
    func info(_ path: String) throws -> FileSystem.Info?
    /// stat(2): facts about what `path` names in the end.
    func followedInfo(_ path: String) throws -> FileSystem.Info?
    /// geteuid(2): besides root, the one owner vpnctl trusts.
    var effectiveUser: UInt32 { get }
    /// getcwd(3), for the ancestors of a relative path.
    func currentDirectory() throws -> String
    /// mkdir(2); a directory that exists already is no error.
    func makeDirectory(_ path: String, mode: UInt32) throws
    /// A regular file's bytes, at most `limit`; never through a symlink. Nil when absent.
    func readFileIfPresent(_ path: String, limit: Int) throws -> [UInt8]?
    /// Replaces `path` at once (`AtomicFile`): a reader sees the old bytes or the new ones.
    func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32, durable: Bool) throws
    /// Appends to a regular file (created with `mode`, never through a
    /// symlink, never blocking on a FIFO).
    func append(_ bytes: [UInt8], to path: String, mode: UInt32) throws
    /// rename(2).
    func rename(_ path: String, to newPath: String) throws
    /// Every name in a directory but "." and "..", sorted; empty when it does not exist.
    func listAll(_ path: String) throws -> [String]
    /// unlink(2); a file that is not there is no error.
    func remove(_ path: String) throws
    /// An exclusive lock on `path` (created 0600), held until the returned
    /// object goes; blocks while another holds it.
    func lock(_ path: String) throws -> AnyObject
    /// The lock only if nobody holds it; nil when it is held.
    func tryLock(_ path: String) throws -> AnyObject?
}

extension Files {
    public func exists(_ path: String) -> Bool { ((try? info(path)) ?? nil) != nil }

    /// Lists the names in a directory, excluding dot files.
    public func list(_ path: String) throws -> [String] { try listAll(path).filter { !$0.hasPrefix(".") } }

    /// Creates a directory (and missing parents, 0755) with `mode`, then
    /// checks that it is a real directory owned by us (or root) and not
    /// writable by others.
    public func ensurePrivateDirectory(_ path: String, mode: UInt32 = 0o700) throws {
        if try info(path) == nil {
            let parent = FileSystem.parentDirectory(of: path)
            if parent != path, try info(parent) == nil { try ensureDirectory(parent, mode: 0o755) }
            try makeDirectory(path, mode: mode)
        }
        try checkTrustedDirectory(path)
    }

    func ensureDirectory(_ path: String, mode: UInt32) throws {
        if try info(path) != nil { return }
        let parent = FileSystem.parentDirectory(of: path)
        if parent != path { try ensureDirectory(parent, mode: mode) }
        try makeDirectory(path, mode: mode)
    }

    /// A state directory must be a real directory, owned by the effective user
    /// (or root), and writable by nobody else; each directory above it must be
    /// owned by the effective user or root and not writable by others unless
    /// sticky (as /tmp), so nobody else can swap it.
    public func checkTrustedDirectory(_ path: String) throws {
        let path = FileSystem.normalized(path)
        guard let i = try info(path) else {
            throw SystemError("open directory", path: path, errno: .notFound)
        }
        if i.isSymlink { throw FileSystem.TrustProblem.symlink(path) }
        if !i.isDirectory { throw FileSystem.TrustProblem.notDirectory(path) }
        try checkOwnerAndMode(path, i)
        try checkAncestors(of: path)
    }

    /// A file vpnctl acts on must be a regular file (never a symlink), owned by
    /// the effective user or root and writable by nobody else. Returns nil when
    /// it does not exist.
    @discardableResult
    public func checkTrustedFile(_ path: String) throws -> FileSystem.Info? {
        guard let i = try info(path) else { return nil }
        if i.isSymlink { throw FileSystem.TrustProblem.symlink(path) }
        if !i.isRegular { throw FileSystem.TrustProblem.notRegularFile(path) }
        try checkOwnerAndMode(path, i)
        return i
    }

    func checkOwnerAndMode(_ path: String, _ i: FileSystem.Info) throws {
        let me = effectiveUser
        if i.owner != me && i.owner != 0 { throw FileSystem.TrustProblem.wrongOwner(path, owner: i.owner, expected: me) }
        if i.mode & 0o022 != 0 { throw FileSystem.TrustProblem.writableByOthers(path, mode: i.mode) }
    }

    /// Each directory above `path` must be owned by the effective user or
    /// root and not writable by others unless sticky.
    public func checkAncestors(of path: String) throws {
        var absolute = path
        if !path.hasPrefix("/") {
            do { absolute = try currentDirectory() + "/" + path } catch let e as SystemError {
                throw SystemError(e.operation, path: path, errno: e.errno)
            }
        }
        let me = effectiveUser
        var ancestor = FileSystem.parentDirectory(of: FileSystem.normalized(absolute))
        while true {
            // Ancestors may be symlinks (/var/run -> /run): what matters is
            // who can change the directory they lead to.
            guard let st = try followedInfo(ancestor) else { throw SystemError("inspect", path: ancestor, errno: .notFound) }
            if st.owner != me && st.owner != 0 {
                throw FileSystem.TrustProblem.untrustedAncestor(ancestor, of: path, why: "is owned by uid \(st.owner)")
            }
            if st.mode & 0o022 != 0 && st.mode & UInt32(S_ISVTX) == 0 {
                throw FileSystem.TrustProblem.untrustedAncestor(ancestor, of: path,
                                                                why: "others can write (mode \(String(st.mode, radix: 8)))")
            }
            if ancestor == "/" { break }
            ancestor = FileSystem.parentDirectory(of: ancestor)
        }
    }
}

/// The kernel's files: the static `FileSystem`, `AtomicFile` and `FileLock`.
public struct SystemFiles: Files {
    public init() {}

    public func info(_ path: String) throws -> FileSystem.Info? { try FileSystem.info(path) }

    public func followedInfo(_ path: String) throws -> FileSystem.Info? { try FileSystem.followedInfo(path) }

    public var effectiveUser: UInt32 { geteuid() }

    public func currentDirectory() throws -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buf, buf.count) != nil else { throw SystemError("find the current directory for", path: ".", errno: .current) }
        return String(cString: buf)
    }

    public func makeDirectory(_ path: String, mode: UInt32) throws {
        if mkdir(path, mode_t(mode)) != 0 && errno != EEXIST {
            throw SystemError("create directory", path: path, errno: .current)
        }
    }

    public func readFileIfPresent(_ path: String, limit: Int) throws -> [UInt8]? {
        try FileSystem.readFileIfPresent(path, limit: limit)
    }

    public func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32, durable: Bool) throws {
        try AtomicFile.write(bytes, to: path, mode: mode_t(mode), durable: durable)
    }

    public func append(_ bytes: [UInt8], to path: String, mode: UInt32) throws {
        let fd = try FileSystem.openForAppending(path, mode: mode_t(mode))
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if n != bytes.count { throw SystemError("append to", path: path, errno: n < 0 ? .current : Errno(EIO)) }
    }

    public func rename(_ path: String, to newPath: String) throws {
        if Glibc.rename(path, newPath) != 0 { throw SystemError("rename", path: path, errno: .current) }
    }

    public func listAll(_ path: String) throws -> [String] { try FileSystem.listAll(path) }

    public func remove(_ path: String) throws { try FileSystem.remove(path) }

    public func lock(_ path: String) throws -> AnyObject { try FileLock(path: path) }

    public func tryLock(_ path: String) throws -> AnyObject? { try FileLock.tryLock(path: path) }
}
