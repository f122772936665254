#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file atomically: write a temp file in the same directory,
/// fsync it, rename it over the target, then fsync the directory.
/// A failure at any step leaves the old file as it was.
public enum AtomicFile {
    /// `beforeRename` runs after the temp file is synced and before it
    /// replaces the target; the tests use it to inject a failure or a crash.
    /// `durable: false` skips both fsyncs but keeps the rename, so readers
    /// still never see a half-written file: for state that does not outlive a
    /// boot anyway (the run directory is a tmpfs), where an fsync only adds latency.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, durable: Bool = true,
                             beforeRename: (() throws -> Void)? = nil) throws {
        let dir = FileSystem.parentDirectory(of: path)
        let base = path.split(separator: "/").last.map(String.init) ?? path
        var template = Array("\(dir)/.\(base).tmp-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 { throw SystemError("create a temporary file in", path: dir, errno: .current) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let tempPath = String(cString: template)
        var renamed = false
        defer {
            if !renamed { unlink(tempPath) }
        }
        do {
            defer { close(fd) }
            if fchmod(fd, mode) != 0 { throw SystemError("set mode on", path: tempPath, errno: .current) }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { buf in
                    Glibc.write(fd, buf.baseAddress! + offset, buf.count - offset)
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SystemError("write", path: tempPath, errno: .current)
                }
                offset += n
            }
            if durable && fsync(fd) != 0 { throw SystemError("fsync", path: tempPath, errno: .current) }
        }
        try beforeRename?()
        if rename(tempPath, path) != 0 { throw SystemError("replace", path: path, errno: .current) }
        renamed = true
        if durable { try syncDirectory(dir) }
    }

    public static func syncDirectory(_ dir: String) throws {
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd < 0 { throw SystemError("open directory", path: dir, errno: .current) }
        defer { close(dfd) }
        if fsync(dfd) != 0 { throw SystemError("fsync directory", path: dir, errno: .current) }
    }
}
