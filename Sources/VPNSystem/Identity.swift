#if canImport(Glibc)
import Glibc
#endif
import CVPNShims
import Synchronization

/// The system's user and group databases, read from /etc/passwd and
/// /etc/group (what glibc's "files" source reads) for a uid the kernel
/// vouched for: nothing here trusts a name a client sent. Not through NSS:
/// vpnctl is a static executable, and glibc's NSS modules (libnss_systemd
/// and the like) crash when a static program loads them, so a caller whose
/// uid only such a module knows has no name, and only its primary group.
public enum UserDatabase {
    public static var passwdPath = "/etc/passwd"
    public static var groupPath = "/etc/group"

    /// One line of a database file, its fields as bytes (no String is made
    /// until a name is returned: the agent asks for every request).
    typealias Record = [ArraySlice<UInt8>]

    /// The colon-separated records of a database file, parsed again only
    /// when the file changed (another inode, size, mtime or ctime): every
    /// decision sees the file as it is now, without parsing it each time.
    static func records(_ path: String) -> [Record] {
        var st = stat()
        guard stat(path, &st) == 0 else { return [] }
        let stamp = FileStamp(st)
        return cache.withLock { entries in
            if let hit = entries[path], hit.stamp == stamp { return hit.records }
            guard let bytes = try? FileSystem.readFileIfPresent(path, followSymlinks: true) else { return [] }
            let records = parse(bytes)
            entries[path] = (stamp, records)
            return records
        }
    }

    static func parse(_ bytes: [UInt8]) -> [Record] {
        bytes.split(separator: 0x0A).compactMap { line in
            // Comments and NIS compat lines ("+", "-") are not entries.
            if let first = line.first, first == UInt8(ascii: "#") || first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { return nil }
            let fields = line.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            return fields.count >= 4 ? fields : nil
        }
    }

    struct FileStamp: Equatable {
        let device: UInt64, inode: UInt64, size: Int64
        let modified: (Int, Int), changed: (Int, Int)

        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            size = Int64(st.st_size)
            modified = (st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
            changed = (st.st_ctim.tv_sec, st.st_ctim.tv_nsec)
        }

        static func == (a: FileStamp, b: FileStamp) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified == b.modified && a.changed == b.changed
        }
    }

    static let cache = Mutex<[String: (stamp: FileStamp, records: [Record])]>([:])

    static func text(_ field: ArraySlice<UInt8>) -> String { String(decoding: field, as: UTF8.self) }

    /// The passwd name of `uid`, or nil (the first entry wins, as in getpwuid).
    public static func userName(_ uid: uid_t) -> String? {
        let id = Array(String(uid).utf8)
        return records(passwdPath).first { $0[2].elementsEqual(id) }.map { text($0[0]) }
    }

    /// The primary group of `uid` in passwd, or nil.
    public static func primaryGroup(_ uid: uid_t) -> gid_t? {
        let id = Array(String(uid).utf8)
        return records(passwdPath).first { $0[2].elementsEqual(id) }.flatMap { gid_t(text($0[3])) }
    }

    /// The group name of `gid`, or nil.
    public static func groupName(_ gid: gid_t) -> String? {
        let id = Array(String(gid).utf8)
        return records(groupPath).first { $0[2].elementsEqual(id) }.map { text($0[0]) }
    }

    /// The names of every group a user is in: the primary group (`gid`),
    /// then each group that lists the user as a member (what getgrouplist
    /// returns from the files source), each once.
    public static func groupNames(uid: uid_t, gid: gid_t, userName: String?) -> [String] {
        let groups = records(groupPath)
        var names: [String] = []
        let primary = Array(String(gid).utf8)
        if let g = groups.first(where: { $0[2].elementsEqual(primary) }) { names.append(text(g[0])) }
        if let user = userName.map({ Array($0.utf8) }) {
            for g in groups where g[3].split(separator: UInt8(ascii: ",")).contains(where: { $0.elementsEqual(user) }) {
                let name = text(g[0])
                if !names.contains(name) { names.append(name) }
            }
        }
        return names
    }
}

/// The identity of the process at the other end of a unix socket.
public struct PeerCredentials: Equatable, Sendable {
    public let pid: pid_t
    public let uid: uid_t
    public let gid: gid_t

    /// SO_PEERCRED: what the kernel recorded when the peer connected.
    public static func of(_ fd: Int32) throws -> PeerCredentials {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        let r = vpn_peer_credentials(fd, &pid, &uid, &gid)
        if r < 0 { throw SystemError("read the peer credentials of", path: "socket", errno: Errno(-r)) }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}

/// The parts of systemd's protocols a service needs, without libsystemd.
public enum Systemd {
    /// The first socket passed by socket activation (LISTEN_PID is us,
    /// LISTEN_FDS >= 1): fd 3, marked close-on-exec. nil when none.
    public static func activatedSocket(environment: [String: String]) -> Int32? {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1 else { return nil }
        let fd: Int32 = 3
        guard fcntl(fd, F_GETFD) >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        return fd
    }

    /// sd_notify: "READY=1", "STOPPING=1", "STATUS=..." to NOTIFY_SOCKET.
    /// Nothing happens when it is not set.
    @discardableResult
    public static func notify(_ message: String, environment: [String: String]) -> Bool {
        guard let address = environment["NOTIFY_SOCKET"], !address.isEmpty else { return false }
        return vpn_sd_notify(address, message) == 0
    }
}
