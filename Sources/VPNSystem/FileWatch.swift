#if canImport(Glibc)
import Glibc
#endif

/// inotify on one file itself, for a file rewritten in place (a bind-mounted
/// /etc/resolv.conf inside a network namespace, where a watch on /etc never
/// fires), plus its directory for a replacement by rename or a new file:
/// then the watch moves to the new inode.
public final class FileWatch {
    public let fd: Int32
    public let path: String
    var fileWatch: Int32 = -1
    var directoryWatch: Int32 = -1
    let name: String

    static let fileMask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
    static let directoryMask = UInt32(IN_MOVED_TO | IN_CREATE | IN_DELETE)

    public init(_ path: String) throws {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { throw SystemError("watch", path: path, errno: .current) }
        directoryWatch = inotify_add_watch(fd, directory, FileWatch.directoryMask)
        fileWatch = inotify_add_watch(fd, path, FileWatch.fileMask)
        if directoryWatch < 0 && fileWatch < 0 {
            let e = Errno.current
            close(fd)
            throw SystemError("watch", path: path, errno: e)
        }
    }

    deinit { close(fd) }

    /// Reads the pending events; returns whether any was about the file. A
    /// new file at the path (rename, create) gets the file watch again.
    public func drain() -> Bool {
        var relevant = false
        var rewatch = false
        var buf = [UInt8](repeating: 0, count: 8192)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var o = 0
            while o + 16 <= n {
                let wd = buf.withUnsafeBytes { $0.load(fromByteOffset: o, as: Int32.self) }
                let mask = buf.withUnsafeBytes { $0.load(fromByteOffset: o + 4, as: UInt32.self) }
                let len = Int(buf.withUnsafeBytes { $0.load(fromByteOffset: o + 12, as: UInt32.self) })
                let nameBytes = buf[(o + 16)..<min(n, o + 16 + len)].prefix { $0 != 0 }
                if wd == fileWatch && wd >= 0 {
                    relevant = true
                    if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 { rewatch = true }
                } else if wd == directoryWatch && String(decoding: nameBytes, as: UTF8.self) == name {
                    relevant = true
                    rewatch = true
                }
                o += 16 + len
            }
        }
        if rewatch { fileWatch = inotify_add_watch(fd, path, FileWatch.fileMask) }
        return relevant
    }
}
