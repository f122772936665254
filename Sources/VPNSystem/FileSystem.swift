#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// Plain file operations with the safety rules vpnctl needs for privileged
/// paths: no symlinks, a known owner, explicit modes.
public enum FileSystem {
    /// The most any read without its own limit takes in.
    public static let defaultReadLimit = 16 << 20

    /// Reads a whole regular file, at most `limit` bytes. The path must not be
    /// a symlink unless `followSymlinks`. Returns nil when it does not exist.
    /// Anything but a regular file (a FIFO, a device, a directory) is refused
    /// without blocking; `acceptPipe` lets a pipe through, for paths the user
    /// named explicitly (`/dev/fd/N` from a shell's process substitution).
    /// The size is enforced while reading: a larger file stops at `limit + 1` bytes.
    public static func readFileIfPresent(_ path: String, followSymlinks: Bool = false,
                                         limit: Int = defaultReadLimit, acceptPipe: Bool = false) throws -> [UInt8]? {
        guard let fd = try openRegular(path, followSymlinks: followSymlinks, acceptPipe: acceptPipe) else { return nil }
        defer { close(fd) }
        return try readAll(fd: fd, path: path, limit: limit)
    }

    /// Opens a file for reading without blocking on a FIFO, and refuses what is
    /// not a regular file (or a pipe, with `acceptPipe`) by name. Nil when it does not exist.
    static func openRegular(_ path: String, followSymlinks: Bool, acceptPipe: Bool) throws -> Int32? {
        // Look before opening: opening a device can itself have effects.
        var st = stat()
        if (followSymlinks ? stat(path, &st) : lstat(path, &st)) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("read", path: path, errno: .current)
        }
        try checkReadable(path, mode: st.st_mode, acceptPipe: acceptPipe)
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followSymlinks ? 0 : O_NOFOLLOW)
        let fd = retryingOnInterrupt { open(path, flags) }
        if fd < 0 {
            let e = Errno.current
            if e == .notFound { return nil }
            if e == .tooManyLinks && !followSymlinks { throw FileProblem(path: path, kind: .symlink) }
            throw SystemError("read", path: path, errno: e)
        }
        if fstat(fd, &st) != 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("inspect", path: path, errno: e)
        }
        do { try checkReadable(path, mode: st.st_mode, acceptPipe: acceptPipe) } catch { close(fd); throw error }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    static func checkReadable(_ path: String, mode: mode_t, acceptPipe: Bool) throws {
        let type = mode & S_IFMT
        if type == S_IFREG || (acceptPipe && type == S_IFIFO) { return }
        if type == S_IFLNK { throw FileProblem(path: path, kind: .symlink) }
        throw FileProblem(path: path, kind: .notRegular(typeName(type)))
    }

    /// "FIFO", "character device", ...: what a non-regular file is, for messages.
    public static func typeName(_ type: mode_t) -> String {
        switch type {
        case S_IFIFO: return "FIFO"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        case S_IFDIR: return "directory"
        case S_IFSOCK: return "socket"
        case S_IFLNK: return "symlink"
        default: return "special file"
        }
    }

    /// Reads until EOF, at most `limit` bytes: it stops at `limit + 1` and
    /// throws, so /dev/zero or an endless pipe cannot exhaust memory.
    /// /proc files arrive in page-sized chunks, so one read is not enough.
    public static func readAll(fd: Int32, path: String, limit: Int = defaultReadLimit) throws -> [UInt8] {
        var result: [UInt8] = []
        // A regular file's size, room for it at once: growing by doubling
        // touched (and faulted in) twice the memory for a large store.
        var st = stat()
        if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0 {
            result.reserveCapacity(min(Int(st.st_size), limit) + 1)
        }
        // Not zeroed: the store is read on every call of the D-Bus service,
        // and clearing 64 KiB cost more than reading the file.
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let room = limit - result.count
            let want = room >= chunk.count ? chunk.count : room + 1
            let n = read(fd, chunk.baseAddress, want)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {  // a non-blocking descriptor handed to us (stdin): wait for data
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    _ = poll(&p, 1, -1)
                    continue
                }
                throw SystemError("read", path: path, errno: .current)
            }
            if n == 0 { break }
            result.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
            if result.count > limit { throw FileProblem(path: path, kind: .tooLarge(limit: limit)) }
        }
        return result
    }

    /// The bytes of a regular file from `offset` to its end (empty when shorter).
    public static func readFile(_ path: String, from offset: Int, limit: Int = defaultReadLimit) throws -> [UInt8] {
        guard let fd = try openRegular(path, followSymlinks: false, acceptPipe: false) else {
            throw SystemError("read", path: path, errno: .notFound)
        }
        defer { close(fd) }
        if lseek(fd, off_t(offset), SEEK_SET) < 0 { throw SystemError("seek in", path: path, errno: .current) }
        return try readAll(fd: fd, path: path, limit: limit)
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
        public var isSocket = false
        /// st_dev and st_ino: the same pair is the same file.
        public var device: UInt64 = 0
        public var inode: UInt64 = 0

        public init(isDirectory: Bool, isSymlink: Bool, isRegular: Bool, owner: UInt32, mode: UInt32, size: Int, isSocket: Bool = false) {
            self.isDirectory = isDirectory
            self.isSymlink = isSymlink
            self.isRegular = isRegular
            self.owner = owner
            self.mode = mode
            self.size = size
            self.isSocket = isSocket
        }
    }

    public static func info(_ path: String) throws -> Info? {
        var st = stat()
        if lstat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("inspect", path: path, errno: .current)
        }
        let type = st.st_mode & S_IFMT
        var info = Info(isDirectory: type == S_IFDIR, isSymlink: type == S_IFLNK, isRegular: type == S_IFREG,
                        owner: st.st_uid, mode: st.st_mode & 0o7777, size: Int(st.st_size), isSocket: type == S_IFSOCK)
        info.device = UInt64(st.st_dev)
        info.inode = UInt64(st.st_ino)
        return info
    }

    /// `info` through symlinks (stat(2)): what a path names in the end.
    public static func followedInfo(_ path: String) throws -> Info? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw SystemError("inspect", path: path, errno: .current)
        }
        let type = st.st_mode & S_IFMT
        return Info(isDirectory: type == S_IFDIR, isSymlink: false, isRegular: type == S_IFREG,
                    owner: st.st_uid, mode: st.st_mode & 0o7777, size: Int(st.st_size))
    }

    /// Creates a directory (and missing parents) with `mode`, then checks that
    /// the final directory is a real directory owned by us (or root) and not
    /// writable by others. The rules are `Files`', kept in one place.
    public static func ensurePrivateDirectory(_ path: String, mode: mode_t = 0o700) throws {
        try SystemFiles().ensurePrivateDirectory(path, mode: UInt32(mode))
    }

    /// Why a file was not read: it is not what vpnctl reads, or it is too large.
    public struct FileProblem: Error, CustomStringConvertible, Sendable {
        public enum Kind: Equatable, Sendable {
            case symlink
            case notRegular(String)
            case tooLarge(limit: Int)
        }
        public let path: String
        public let kind: Kind

        public init(path: String, kind: Kind) {
            self.path = path
            self.kind = kind
        }

        public var description: String {
            switch kind {
            case .symlink: return "\(path) is a symlink (vpnctl refuses symlinks here; name the file itself)"
            case .notRegular(let type): return "\(path) is a \(type), not a regular file"
            case .tooLarge(let limit): return "\(path) is larger than \(sizeText(limit)), the most vpnctl reads from it"
            }
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
        if isNormal(path) { return path }
        // Split on the byte '/', as the kernel does (a Character split would
        // keep a slash that a combining mark follows, and costs far more).
        let bytes = Array(path.utf8)
        let parts = bytes.split(separator: 0x2F).filter { !($0.count == 1 && $0.first == 0x2E) }
        var out: [UInt8] = bytes.first == 0x2F ? [0x2F] : []
        for (i, part) in parts.enumerated() {
            if i > 0 { out.append(0x2F) }
            out += part
        }
        return out.isEmpty ? "." : String(decoding: out, as: UTF8.self)
    }

    /// Whether `normalized` would give `path` back: not empty, no empty or
    /// "." component, no slash at the end but the root's.
    static func isNormal(_ path: String) -> Bool {
        var previous: UInt8 = 0x2F, beforePrevious: UInt8 = 0x2F
        var count = 0
        for b in path.utf8 {
            if b == 0x2F && count > 0 && (previous == 0x2F || previous == 0x2E && beforePrevious == 0x2F) { return false }
            if b == 0x2F && count == 1 && previous == 0x2E { return false }
            beforePrevious = previous
            previous = b
            count += 1
        }
        if count == 0 { return false }
        if count == 1 { return true }
        if previous == 0x2F { return false }
        if previous == 0x2E && beforePrevious == 0x2F { return false }
        return true
    }

    /// A state directory must be a real directory, owned by the effective user
    /// (or root), and writable by nobody else; each directory above it must be
    /// owned by the effective user or root and not writable by others unless
    /// sticky (as /tmp), so nobody else can swap it. (`Files.checkTrustedDirectory`.)
    public static func checkTrustedDirectory(_ path: String) throws {
        try SystemFiles().checkTrustedDirectory(path)
    }

    /// A file vpnctl acts on must be a regular file (never a symlink), owned by
    /// the effective user or root and writable by nobody else. Returns nil when
    /// it does not exist.
    @discardableResult
    public static func checkTrustedFile(_ path: String) throws -> Info? {
        try SystemFiles().checkTrustedFile(path)
    }

    /// "1 MiB", "64 KiB", "512 bytes": limits as messages name them.
    public static func sizeText(_ bytes: Int) -> String {
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10 && bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Each directory above `path` must be owned by the effective user or
    /// root and not writable by others unless sticky (what
    /// `checkTrustedDirectory` asks of a state directory's ancestors).
    public static func checkAncestors(of path: String) throws {
        try SystemFiles().checkAncestors(of: path)
    }

    public static func parentDirectory(of path: String) -> String {
        // '/' is one byte of UTF-8, never part of another character's.
        guard let slash = path.utf8.lastIndex(of: 0x2F) else { return "." }
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

    /// Opens a regular file to append (created with `mode`, close-on-exec),
    /// never through a symlink and never blocking: a FIFO, a device or a
    /// socket in its place is refused by name.
    public static func openForAppending(_ path: String, mode: mode_t = 0o600) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode)
        if fd < 0 {
            // ENXIO: a FIFO that nobody reads.
            if errno == ENXIO { throw FileProblem(path: path, kind: .notRegular("FIFO")) }
            if errno == ELOOP { throw FileProblem(path: path, kind: .symlink) }
            throw SystemError("open", path: path, errno: .current)
        }
        var st = stat()
        if fstat(fd, &st) != 0 || st.st_mode & S_IFMT != S_IFREG {
            close(fd)
            throw FileProblem(path: path, kind: .notRegular(typeName(st.st_mode & S_IFMT)))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
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
