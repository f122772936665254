#if canImport(Glibc)
import Glibc
#endif

/// What a walk down a path sees of one entry, without following it.
public struct PathEntry: Equatable, Sendable {
    public enum Kind: Equatable, Sendable { case directory, symlink, regular, other(String) }
    public let kind: Kind
    public let owner: UInt32
    public let mode: UInt32
    /// st_dev and st_ino: the same pair is the same file.
    public let device: UInt64
    public let inode: UInt64

    public init(kind: Kind, owner: UInt32, mode: UInt32, device: UInt64, inode: UInt64) {
        self.kind = kind
        self.owner = owner
        self.mode = mode
        self.device = device
        self.inode = inode
    }
}

/// The few calls a checked walk makes, on handles (fds for the system, a
/// table's rows for a test's fake). Every check is made on the handle that
/// the next step uses, so nothing can be swapped between a check and a use.
public protocol PathWalkFiles {
    /// "/", opened (oPath | O_DIRECTORY).
    func openRoot() throws -> (Int32, PathEntry)
    /// `name` in the directory `parent`, not followed (openat oPath | O_NOFOLLOW);
    /// nil when there is no such entry.
    func open(_ name: String, in parent: Int32) throws -> (Int32, PathEntry)?
    /// A symlink's target (readlinkat on the handle).
    func readLink(_ handle: Int32) throws -> String
    /// `name` in `parent` opened for reading and executing (O_RDONLY |
    /// O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); nil when it is not `entry` any more.
    func openFile(_ name: String, in parent: Int32, as entry: PathEntry) throws -> Int32?
    /// The first bytes of an opened file (pread at 0).
    func head(_ handle: Int32, _ count: Int) throws -> [UInt8]
    /// What `path` names now, symlinks followed (stat); nil when nothing.
    func followed(_ path: String) throws -> PathEntry?
    func close(_ handle: Int32)
}

/// Why an executable's path is not one only root can change, by the entry
/// at fault. `via` is the symlink that led there, if one did.
public struct ExecutablePathProblem: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case missing
        case directoryMissing
        case notDirectory
        case directoryOwner(UInt32)
        case directoryWritable(UInt32)
        case symlinkOwner(UInt32)
        case tooManySymlinks
        case isSymlink
        case notRegular(String)
        case owner(UInt32)
        case writable(UInt32)
        case notExecutable
        /// The resolution found one file, and the path names another now.
        case changed(resolved: String)
        case interpreterNotAbsolute(String)
        case interpreterTooDeep
        /// The script's interpreter (`path`) is refused for `problem`.
        indirect case interpreter(String, ExecutablePathProblem)
    }
    public let kind: Kind
    /// The entry at fault (a directory of the resolved path, the file, a symlink).
    public let path: String
    public let via: String?

    public init(_ kind: Kind, _ path: String, via: String? = nil) {
        self.kind = kind
        self.path = path
        self.via = via
    }

    /// English (VPNCore words it for people).
    public var description: String { "\(path): \(kind)" }
}

/// An executable found by a checked walk: open, and the path it resolved to.
public struct CheckedExecutable: Sendable {
    /// O_RDONLY | O_CLOEXEC: what is run (execveat AT_EMPTY_PATH).
    public let handle: Int32
    /// The path with every symlink resolved.
    public let resolved: String
    /// It starts with "#!": the kernel runs `interpreter` on it.
    public let isScript: Bool
    /// The interpreter's resolved path, checked the same way.
    public let interpreter: String?

    public init(handle: Int32, resolved: String, isScript: Bool, interpreter: String?) {
        self.handle = handle
        self.resolved = resolved
        self.isScript = isScript
        self.interpreter = interpreter
    }
}

/// The walk behind a plugin's executable: from "/", one component at a
/// time, never following an entry before it is checked. Every directory of
/// the resolved path (a symlinked directory's target and each directory
/// above it, not only the link) must be root's and not writable by group or
/// others (unless sticky, as /tmp: there nobody else can rename root's
/// entries); a symlink on the way must be root's, in such a directory; the
/// file must be a regular file, root's, writable by root alone and
/// executable. A path whose resolution changed meanwhile is refused. The
/// file stays open, so the one that was checked is the one that runs.
public enum ExecutablePath {
    /// As the kernel's MAXSYMLINKS.
    public static let maximumSymlinks = 40
    /// As the kernel's BINPRM_BUF_SIZE: a "#!" line longer than this is not run.
    public static let shebangLength = 256

    /// Checks and opens `path` (absolute). `followFinal`: the last
    /// component may be a symlink (an interpreter such as /usr/bin/python3),
    /// otherwise it is refused. The caller closes the handle.
    public static func open(_ path: String, in files: any PathWalkFiles, followFinal: Bool = false) throws -> CheckedExecutable {
        try walk(path, files, followFinal: followFinal, directory: false, depth: 0)!
    }

    /// Checks that `path` is a directory that only root can change, and
    /// every directory above it, symlinks resolved, the same way.
    public static func checkDirectory(_ path: String, in files: any PathWalkFiles) throws {
        _ = try walk(path, files, followFinal: true, directory: true, depth: 0)
    }

    static func walk(_ path: String, _ files: any PathWalkFiles, followFinal: Bool, directory: Bool, depth: Int) throws -> CheckedExecutable? {
        // A directory's walk ends in ".": every real component is checked as a directory.
        var pending = (components(path) + (directory ? ["."] : [])).reversed() as [String]
        let (root, rootEntry) = try files.openRoot()
        // The resolved directories so far, "/" first.
        var stack: [(handle: Int32, name: String)] = [(root, "")]
        defer { for d in stack { files.close(d.handle) } }
        func here() -> String { stack.count == 1 ? "/" : stack.dropFirst().map { "/" + $0.name }.joined() }
        func join(_ name: String) -> String { (stack.count == 1 ? "" : here()) + "/" + name }
        var via: String? = nil
        try checkDirectory(rootEntry, "/", via: nil)
        var links = 0
        while let name = pending.popLast() {
            if name.isEmpty || name == "." { continue }
            if name == ".." {
                if stack.count > 1 { files.close(stack.removeLast().handle) }
                continue
            }
            let isLast = pending.isEmpty
            let at = join(name)
            guard let (handle, entry) = try files.open(name, in: stack[stack.count - 1].handle) else {
                throw ExecutablePathProblem(isLast ? .missing : .directoryMissing, at, via: via)
            }
            if entry.kind == .symlink {
                defer { files.close(handle) }
                if isLast && !followFinal { throw ExecutablePathProblem(.isSymlink, at, via: via) }
                links += 1
                if links > maximumSymlinks { throw ExecutablePathProblem(.tooManySymlinks, at, via: via) }
                if entry.owner != 0 { throw ExecutablePathProblem(.symlinkOwner(entry.owner), at, via: via) }
                let target = try files.readLink(handle)
                if target.hasPrefix("/") {
                    while stack.count > 1 { files.close(stack.removeLast().handle) }
                }
                pending += components(target).reversed()
                via = at
                continue
            }
            if !isLast {
                guard entry.kind == .directory else {
                    files.close(handle)
                    throw ExecutablePathProblem(.notDirectory, at, via: via)
                }
                do { try checkDirectory(entry, at, via: via) } catch { files.close(handle); throw error }
                stack.append((handle, name))
                continue
            }
            defer { files.close(handle) }
            try checkFile(entry, at, via: via)
            guard let fd = try files.openFile(name, in: stack[stack.count - 1].handle, as: entry) else {
                throw ExecutablePathProblem(.changed(resolved: at), path, via: via)
            }
            do {
                // The path as given must still lead to the file opened.
                guard let now = try files.followed(path), now.device == entry.device, now.inode == entry.inode else {
                    throw ExecutablePathProblem(.changed(resolved: at), path, via: via)
                }
                let (isScript, interpreter) = try shebang(fd, files, depth: depth, of: at)
                return CheckedExecutable(handle: fd, resolved: at, isScript: isScript, interpreter: interpreter)
            } catch {
                files.close(fd)
                throw error
            }
        }
        if directory { return nil }
        throw ExecutablePathProblem(.notRegular("directory"), path, via: via)
    }

    static func checkDirectory(_ e: PathEntry, _ at: String, via: String?) throws {
        guard e.kind == .directory else { throw ExecutablePathProblem(.notDirectory, at, via: via) }
        if e.owner != 0 { throw ExecutablePathProblem(.directoryOwner(e.owner), at, via: via) }
        if e.mode & 0o022 != 0 && e.mode & 0o1000 == 0 { throw ExecutablePathProblem(.directoryWritable(e.mode & 0o7777), at, via: via) }
    }

    static func checkFile(_ e: PathEntry, _ at: String, via: String?) throws {
        switch e.kind {
        case .regular: break
        case .directory: throw ExecutablePathProblem(.notRegular("directory"), at, via: via)
        case .symlink: throw ExecutablePathProblem(.isSymlink, at, via: via)
        case .other(let t): throw ExecutablePathProblem(.notRegular(t), at, via: via)
        }
        if e.owner != 0 { throw ExecutablePathProblem(.owner(e.owner), at, via: via) }
        if e.mode & 0o022 != 0 { throw ExecutablePathProblem(.writable(e.mode & 0o7777), at, via: via) }
        if e.mode & 0o111 == 0 { throw ExecutablePathProblem(.notExecutable, at, via: via) }
    }

    /// A script's interpreter (the kernel's binfmt_script reading of the
    /// "#!" line: the first word, absolute here) is checked the same way;
    /// the kernel looks it up by that path, which only root can change.
    static func shebang(_ fd: Int32, _ files: any PathWalkFiles, depth: Int, of at: String) throws -> (Bool, String?) {
        let head = try files.head(fd, shebangLength)
        guard head.starts(with: [0x23, 0x21]) else { return (false, nil) }
        let line = head.dropFirst(2).prefix { $0 != 0x0A }
        let word = line.drop { $0 == 0x20 || $0 == 0x09 }.prefix { $0 != 0x20 && $0 != 0x09 && $0 != 0 }
        let interpreter = String(decoding: word, as: UTF8.self)
        guard interpreter.hasPrefix("/") else { throw ExecutablePathProblem(.interpreterNotAbsolute(interpreter), at) }
        guard depth < 3 else { throw ExecutablePathProblem(.interpreterTooDeep, at) }
        do {
            let checked = try walk(interpreter, files, followFinal: true, directory: false, depth: depth + 1)!
            files.close(checked.handle)
            return (true, checked.resolved)
        } catch let p as ExecutablePathProblem {
            throw ExecutablePathProblem(.interpreter(interpreter, p), at)
        }
    }

    static func components(_ path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }
}

/// The walk on the real file system: O_PATH handles, fstat on each.
public struct SystemPathWalkFiles: PathWalkFiles {
    public init() {}

    static func entry(_ st: stat) -> PathEntry {
        let t = st.st_mode & S_IFMT
        let kind: PathEntry.Kind = t == S_IFDIR ? .directory : t == S_IFLNK ? .symlink : t == S_IFREG ? .regular
            : .other(FileSystem.typeName(t))
        return PathEntry(kind: kind, owner: st.st_uid, mode: st.st_mode & 0o7777, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    func stated(_ fd: Int32, _ what: String) throws -> PathEntry {
        var st = stat()
        if fstat(fd, &st) != 0 {
            let e = Errno.current
            Glibc.close(fd)
            throw SystemError("inspect", path: what, errno: e)
        }
        return Self.entry(st)
    }

    public func openRoot() throws -> (Int32, PathEntry) {
        let fd = Glibc.open("/", oPath | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 { throw SystemError("open", path: "/", errno: .current) }
        return (fd, try stated(fd, "/"))
    }

    public func open(_ name: String, in parent: Int32) throws -> (Int32, PathEntry)? {
        let fd = openat(parent, name, oPath | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SystemError("open", path: name, errno: .current)
        }
        return (fd, try stated(fd, name))
    }

    public func readLink(_ handle: Int32) throws -> String {
        var buf = [CChar](repeating: 0, count: 4097)
        let n = readlinkat(handle, "", &buf, buf.count - 1)
        if n < 0 { throw SystemError("read the symlink", path: "fd \(handle)", errno: .current) }
        return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func openFile(_ name: String, in parent: Int32, as entry: PathEntry) throws -> Int32? {
        let fd = openat(parent, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT || errno == ELOOP { return nil }
            throw SystemError("open", path: name, errno: .current)
        }
        let now = try stated(fd, name)
        guard now.device == entry.device, now.inode == entry.inode, now.kind == .regular else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    public func head(_ handle: Int32, _ count: Int) throws -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: count)
        let n = buf.withUnsafeMutableBytes { pread(handle, $0.baseAddress, count, 0) }
        if n < 0 { throw SystemError("read", path: "fd \(handle)", errno: .current) }
        return Array(buf[0..<n])
    }

    public func followed(_ path: String) throws -> PathEntry? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("inspect", path: path, errno: .current)
        }
        return Self.entry(st)
    }

    public func close(_ handle: Int32) { _ = Glibc.close(handle) }
}

/// O_PATH (010000000 on Linux), which Glibc hides behind _GNU_SOURCE.
let oPath: Int32 = 0o10000000
