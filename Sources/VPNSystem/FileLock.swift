#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// An exclusive flock(2) on a lock file, released in deinit.
public final class FileLock {
    private let fd: Int32
    public let path: String

    /// Opens (creating, 0600) `path` and blocks until the exclusive lock is held.
    public init(path: String) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { throw SystemError("open lock file", path: path, errno: .current) }
        let r = vpn_flock_exclusive(fd)
        if r < 0 {
            close(fd)
            throw SystemError("lock", path: path, errno: Errno(-r))
        }
        self.fd = fd
    }

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Takes the lock only if nobody holds it; nil when it is held.
    public static func tryLock(path: String) throws -> FileLock? {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { throw SystemError("open lock file", path: path, errno: .current) }
        let r = vpn_flock_try_exclusive(fd)
        if r == -EWOULDBLOCK { close(fd); return nil }
        if r < 0 {
            close(fd)
            throw SystemError("lock", path: path, errno: Errno(-r))
        }
        return FileLock(fd: fd, path: path)
    }

    deinit { close(fd) }
}
