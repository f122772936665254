#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// Plain file operations with the safety rules vpnctl needs for privileged
/// paths: no symlinks, a known owner, explicit modes.
public enum FileSystem {
    /// Reads a whole file. The path must not be a symlink.
    /// Returns nil when it does not exist.
    public static func readFileIfPresent(_ path: String, followSymlinks: Bool = false) throws -> [UInt8]? {
        let flags = O_RDONLY | O_CLOEXEC | (followSymlinks ? 0 : O_NOFOLLOW)
        let fd = retryingOnInterrupt { open(path, flags) }
        if fd < 0 {
            let e = Errno.current
            if e == .notFound { return nil }
            if e == .tooManyLinks {
                throw SystemError("read", path: path, errno: e)
            }
            throw SystemError("read", path: path, errno: e)
        }
        defer { close(fd) }
        return try readAll(fd: fd, path: path)
    }

    /// Reads until EOF. /proc files arrive in page-sized chunks, so one read is not enough.
    public static func readAll(fd: Int32, path: String) throws -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { buf in read(fd, buf.baseAddress, buf.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path: path, errno: .current)
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// The bytes of a file from `offset` to its end (empty when shorter).
    public static func readFile(_ path: String, from offset: Int) throws -> [UInt8] {
        let fd = retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if fd < 0 { throw SystemError("read", path: path, errno: .current) }
        defer { close(fd) }
        if lseek(fd, off_t(offset), SEEK_SET) < 0 { throw SystemError("seek in", path: path, errno: .current) }
        return try readAll(fd: fd, path: path)
    }

    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Facts about a path without following a final symlink.
    public struct Info: Sendable {
        public let isDirectory: Bool
        public let isSymlink: Bool
        public let isRegular: Bool
        public let owner: UInt32
        public let mode: UInt32
        public let size: Int
    }

    public static func info(_ path: String) throws -> Info? {
        var st = stat()
        if lstat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("inspect", path: path, errno: .current)
        }
        let type = st.st_mode & S_IFMT
        return Info(isDirectory: type == S_IFDIR, isSymlink: type == S_IFLNK, isRegular: type == S_IFREG,
                    owner: st.st_uid, mode: st.st_mode & 0o7777, size: Int(st.st_size))
    }

    /// Creates a directory (and missing parents) with `mode`, then checks that
    /// the final directory is a real directory owned by us (or root) and not
    /// writable by others.
    public static func ensurePrivateDirectory(_ path: String, mode: mode_t = 0o700) throws {
        if try info(path) == nil {
            let parent = parentDirectory(of: path)
            if parent != path, try info(parent) == nil {
                try ensureDirectory(parent, mode: 0o755)
            }
            if mkdir(path, mode) != 0 && errno != EEXIST {
                throw SystemError("create directory", path: path, errno: .current)
            }
        }
        try checkTrustedDirectory(path)
    }

    static func ensureDirectory(_ path: String, mode: mode_t) throws {
        if try info(path) != nil { return }
        let parent = parentDirectory(of: path)
        if parent != path { try ensureDirectory(parent, mode: mode) }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw SystemError("create directory", path: path, errno: .current)
        }
    }

    /// The reasons a path may not hold vpnctl's state.
    public enum TrustProblem: Error, CustomStringConvertible, Sendable {
        case symlink(String)
        case notDirectory(String)
        case notRegularFile(String)
        case wrongOwner(String, owner: UInt32, expected: UInt32)
        case writableByOthers(String, mode: UInt32)
        case untrustedAncestor(String, of: String, why: String)

        public var description: String {
            switch self {
            case .symlink(let p): return "\(p) is a symlink (vpnctl refuses symlinks for its state and secrets)"
            case .notDirectory(let p): return "\(p) is not a directory"
            case .notRegularFile(let p): return "\(p) is not a regular file"
            case .wrongOwner(let p, let owner, let expected):
                return "\(p) is owned by uid \(owner), not by uid \(expected) or root"
            case .writableByOthers(let p, let mode):
                return "\(p) is writable by group or others (mode \(String(mode, radix: 8)))"
            case .untrustedAncestor(let a, let p, let why):
                return "\(p) lies under \(a), which \(why)"
            }
        }

        public var path: String {
            switch self {
            case .symlink(let p), .notDirectory(let p), .notRegularFile(let p), .wrongOwner(let p, _, _),
                 .writableByOthers(let p, _):
                return p
            case .untrustedAncestor(let a, _, _): return a
            }
        }

        /// What to do about it.
        public var hint: String {
            switch self {
            case .symlink(let p): return "replace \(p) with a real file or directory, or point vpnctl at the target itself"
            case .notDirectory, .notRegularFile: return "remove \(path), or choose another directory (--config-dir, --run-dir)"
            case .wrongOwner(let p, _, let expected):
                return "chown \(expected == 0 ? "root:root" : String(expected)) \(p), or choose another directory (--config-dir, --run-dir)"
            case .writableByOthers(let p, _): return "chmod go-w \(p)"
            case .untrustedAncestor(let a, _, _): return "fix the owner and mode of \(a) (chown root; chmod go-w), or choose another directory"
            }
        }
    }

    /// "dir/./x//" -> "dir/x": what the kernel resolves, spelled so that the
    /// last component is the real one ("link/." must be checked as "link").
    public static func normalized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        let parts = path.split(separator: "/").filter { $0 != "." }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// A state directory must be a real directory, owned by the effective user
    /// (or root), and writable by nobody else; each directory above it must be
    /// owned by the effective user or root and not writable by others unless
    /// sticky (as /tmp), so nobody else can swap it.
    public static func checkTrustedDirectory(_ path: String) throws {
        let path = normalized(path)
        guard let i = try info(path) else {
            throw SystemError("open directory", path: path, errno: .notFound)
        }
        if i.isSymlink { throw TrustProblem.symlink(path) }
        if !i.isDirectory { throw TrustProblem.notDirectory(path) }
        try checkOwnerAndMode(path, i)
        try checkAncestors(of: path)
    }

    /// A file vpnctl acts on must be a regular file (never a symlink), owned by
    /// the effective user or root and writable by nobody else. Returns nil when
    /// it does not exist.
    @discardableResult
    public static func checkTrustedFile(_ path: String) throws -> Info? {
        guard let i = try info(path) else { return nil }
        if i.isSymlink { throw TrustProblem.symlink(path) }
        if !i.isRegular { throw TrustProblem.notRegularFile(path) }
        try checkOwnerAndMode(path, i)
        return i
    }

    static func checkOwnerAndMode(_ path: String, _ i: Info) throws {
        let me = geteuid()
        if i.owner != me && i.owner != 0 { throw TrustProblem.wrongOwner(path, owner: i.owner, expected: me) }
        if i.mode & 0o022 != 0 { throw TrustProblem.writableByOthers(path, mode: i.mode) }
    }

    static func checkAncestors(of path: String) throws {
        var absolute = path
        if !path.hasPrefix("/") {
            var buf = [CChar](repeating: 0, count: 4096)
            guard getcwd(&buf, buf.count) != nil else { throw SystemError("find the current directory for", path: path, errno: .current) }
            absolute = String(cString: buf) + "/" + path
        }
        let me = geteuid()
        var ancestor = parentDirectory(of: normalized(absolute))
        while true {
            var st = stat()
            // Ancestors may be symlinks (/var/run -> /run): what matters is
            // who can change the directory they lead to.
            if stat(ancestor, &st) != 0 { throw SystemError("inspect", path: ancestor, errno: .current) }
            if st.st_uid != me && st.st_uid != 0 {
                throw TrustProblem.untrustedAncestor(ancestor, of: path, why: "is owned by uid \(st.st_uid)")
            }
            if st.st_mode & 0o022 != 0 && st.st_mode & UInt32(S_ISVTX) == 0 {
                throw TrustProblem.untrustedAncestor(ancestor, of: path,
                                                     why: "others can write (mode \(String(st.st_mode & 0o7777, radix: 8)))")
            }
            if ancestor == "/" { break }
            ancestor = parentDirectory(of: ancestor)
        }
    }

    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Lists the names in a directory, excluding dot files.
    public static func list(_ path: String) throws -> [String] {
        try listAll(path).filter { !$0.hasPrefix(".") }
    }

    /// Lists every name in a directory except "." and "..".
    public static func listAll(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            if errno == ENOENT { return [] }
            throw SystemError("list", path: path, errno: .current)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names.sorted()
    }

    public static func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw SystemError("remove", path: path, errno: .current)
        }
    }

    public static func removeDirectory(_ path: String) throws {
        if rmdir(path) != 0 && errno != ENOENT {
            throw SystemError("remove directory", path: path, errno: .current)
        }
    }
}
