#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

/// `Files` in memory, for unit tests of every layer (a target of its own
/// under Tests/, so that the core's and the service's tests share it and
/// vpnctl never holds it): a map
/// of normalized paths to files, directories, symlinks and FIFOs, each with
/// an owner and a mode, so that the trust checks can refuse a symlink or a
/// stranger's file as on a disk. It records the calls that change something
/// and can fail any of them (`failures`).
///
/// Symlinks are followed only by `followedInfo` and only as a last
/// component; one test's, used from one thread.
public final class MemoryFiles: Files, @unchecked Sendable {
    public enum Node: Equatable, Sendable {
        case file([UInt8])
        case directory
        case symlink(to: String)
        case fifo
    }

    public struct Entry: Equatable, Sendable {
        public var node: Node
        public var owner: UInt32
        public var mode: UInt32
        public init(_ node: Node, owner: UInt32, mode: UInt32) {
            self.node = node
            self.owner = owner
            self.mode = mode
        }
    }

    public private(set) var entries: [String: Entry] = [:]
    public var effectiveUser: UInt32
    public var workingDirectory = "/"
    /// "write PATH", "append PATH", "rename A B", "remove PATH", "mkdir PATH",
    /// "lock PATH", "unlock PATH": what changed, in order.
    public private(set) var calls: [String] = []
    /// A call ("write PATH", as recorded) that fails with this errno instead.
    public var failures: [String: Errno] = [:]
    /// Locks held now (a held lock makes `tryLock` answer nil).
    public private(set) var held: Set<String> = []

    /// "/" (root's, 0755) and `directories` (the effective user's, 0755).
    public init(effectiveUser: UInt32 = 1000, directories: [String] = []) {
        self.effectiveUser = effectiveUser
        entries["/"] = Entry(.directory, owner: 0, mode: 0o755)
        for d in directories { addDirectory(d) }
    }

    /// A directory and its missing parents, owned by `owner` (default: the effective user).
    public func addDirectory(_ path: String, owner: UInt32? = nil, mode: UInt32 = 0o755) {
        let path = FileSystem.normalized(path)
        let parent = FileSystem.parentDirectory(of: path)
        if parent != path, entries[parent] == nil { addDirectory(parent, owner: owner, mode: mode) }
        entries[path] = Entry(.directory, owner: owner ?? effectiveUser, mode: mode)
    }

    /// Puts `node` at `path` as it is, without the checks or a record: the
    /// state a test starts from (a planted symlink, a stranger's file).
    public func plant(_ path: String, _ node: Node, owner: UInt32? = nil, mode: UInt32 = 0o600) {
        entries[FileSystem.normalized(path)] = Entry(node, owner: owner ?? effectiveUser, mode: mode)
    }

    /// The bytes of a regular file, or nil.
    public func contents(_ path: String) -> [UInt8]? {
        if case .file(let b)? = entries[FileSystem.normalized(path)]?.node { return b }
        return nil
    }

    func record(_ call: String) throws {
        if let e = failures[call] { throw SystemError(String(call.prefix { $0 != " " }), path: String(call.drop { $0 != " " }.dropFirst()), errno: e) }
        calls.append(call)
    }

    /// A new entry's parent must be a directory, as for the kernel.
    func checkParent(_ path: String) throws {
        let parent = FileSystem.parentDirectory(of: path)
        guard let p = entries[parent] else { throw SystemError("create", path: path, errno: .notFound) }
        if p.node != .directory { throw SystemError("create", path: path, errno: Errno(ENOTDIR)) }
    }

    static func info(_ e: Entry) -> FileSystem.Info {
        var size = 0
        var directory = false, symlink = false, regular = false
        switch e.node {
        case .file(let b): regular = true; size = b.count
        case .directory: directory = true
        case .symlink(let target): symlink = true; size = target.utf8.count
        case .fifo: break
        }
        return FileSystem.Info(isDirectory: directory, isSymlink: symlink, isRegular: regular, owner: e.owner, mode: e.mode, size: size)
    }

    public func info(_ path: String) throws -> FileSystem.Info? {
        entries[FileSystem.normalized(path)].map(MemoryFiles.info)
    }

    public func followedInfo(_ path: String) throws -> FileSystem.Info? {
        let path = FileSystem.normalized(path)
        guard let e = entries[path] else { return nil }
        guard case .symlink(let target) = e.node else { return MemoryFiles.info(e) }
        let resolved = target.hasPrefix("/") ? target : FileSystem.parentDirectory(of: path) + "/" + target
        return entries[FileSystem.normalized(resolved)].map(MemoryFiles.info)
    }

    public func currentDirectory() throws -> String { workingDirectory }

    public func makeDirectory(_ path: String, mode: UInt32) throws {
        let path = FileSystem.normalized(path)
        if entries[path] != nil { return }
        try checkParent(path)
        try record("mkdir \(path)")
        entries[path] = Entry(.directory, owner: effectiveUser, mode: mode)
    }

    public func readFileIfPresent(_ path: String, limit: Int) throws -> [UInt8]? {
        guard let e = entries[FileSystem.normalized(path)] else { return nil }
        switch e.node {
        case .file(let b):
            if b.count > limit { throw FileSystem.FileProblem(path: path, kind: .tooLarge(limit: limit)) }
            return b
        case .symlink: throw FileSystem.FileProblem(path: path, kind: .symlink)
        case .directory: throw FileSystem.FileProblem(path: path, kind: .notRegular("directory"))
        case .fifo: throw FileSystem.FileProblem(path: path, kind: .notRegular("FIFO"))
        }
    }

    /// rename(2) replaces a symlink itself, never its target: so does this.
    public func writeAtomically(_ bytes: [UInt8], to path: String, mode: UInt32, durable: Bool) throws {
        let path = FileSystem.normalized(path)
        try checkParent(path)
        if entries[path]?.node == .directory { throw SystemError("replace", path: path, errno: Errno(EISDIR)) }
        try record("write \(path)")
        entries[path] = Entry(.file(bytes), owner: effectiveUser, mode: mode)
    }

    public func append(_ bytes: [UInt8], to path: String, mode: UInt32) throws {
        let path = FileSystem.normalized(path)
        var entry = entries[path]
        switch entry?.node {
        case nil:
            try checkParent(path)
            entry = Entry(.file([]), owner: effectiveUser, mode: mode)
        case .file?: break
        case .symlink?: throw SystemError("open", path: path, errno: Errno(ELOOP))
        case .fifo?: throw FileSystem.FileProblem(path: path, kind: .notRegular("FIFO"))
        case .directory?: throw SystemError("open", path: path, errno: Errno(EISDIR))
        }
        try record("append \(path)")
        guard var e = entry, case .file(let old) = e.node else { return }
        e.node = .file(old + bytes)
        entries[path] = e
    }

    public func rename(_ path: String, to newPath: String) throws {
        let (from, to) = (FileSystem.normalized(path), FileSystem.normalized(newPath))
        guard let e = entries[from] else { throw SystemError("rename", path: path, errno: .notFound) }
        try checkParent(to)
        try record("rename \(from) \(to)")
        entries[from] = nil
        entries[to] = e
    }

    public func listAll(_ path: String) throws -> [String] {
        let path = FileSystem.normalized(path)
        guard let e = entries[path] else { return [] }
        if e.node != .directory { throw SystemError("list", path: path, errno: Errno(ENOTDIR)) }
        let prefix = path == "/" ? "/" : path + "/"
        return entries.keys.filter { $0.hasPrefix(prefix) && $0.count > prefix.count && !$0.dropFirst(prefix.count).contains("/") }
            .map { String($0.dropFirst(prefix.count)) }.sorted()
    }

    public func remove(_ path: String) throws {
        let path = FileSystem.normalized(path)
        guard let e = entries[path] else { return }
        if e.node == .directory { throw SystemError("remove", path: path, errno: Errno(EISDIR)) }
        try record("remove \(path)")
        entries[path] = nil
    }

    /// A held lock: recorded as released when the caller lets it go.
    final class Held {
        weak var files: MemoryFiles?
        let path: String
        init(_ files: MemoryFiles, _ path: String) {
            self.files = files
            self.path = path
        }
        deinit {
            files?.calls.append("unlock \(path)")
            files?.held.remove(path)
        }
    }

    public func lock(_ path: String) throws -> AnyObject {
        let path = FileSystem.normalized(path)
        // One thread: a lock held here would block for ever on a disk.
        if held.contains(path) { throw SystemError("lock", path: path, errno: Errno(EDEADLK)) }
        return try takeLock(path)
    }

    public func tryLock(_ path: String) throws -> AnyObject? {
        let path = FileSystem.normalized(path)
        return held.contains(path) ? nil : try takeLock(path)
    }

    func takeLock(_ path: String) throws -> AnyObject {
        switch entries[path]?.node {
        case nil:
            try checkParent(path)
            entries[path] = Entry(.file([]), owner: effectiveUser, mode: 0o600)
        case .file?: break
        default: throw SystemError("open lock file", path: path, errno: Errno(ELOOP))
        }
        try record("lock \(path)")
        held.insert(path)
        return Held(self, path)
    }
}
