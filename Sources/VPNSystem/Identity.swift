#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// The system's user and group databases, read from /etc/passwd and
/// /etc/group (what glibc's "files" source reads) for a uid the kernel
/// vouched for: nothing here trusts a name a client sent. Not through NSS:
/// vpnctl is a static executable, and glibc's NSS modules (libnss_systemd
/// and the like) crash when a static program loads them, so a caller whose
/// uid only such a module knows has no name, and only its primary group.
public enum UserDatabase {
    public static var passwdPath = "/etc/passwd"
    public static var groupPath = "/etc/group"

    /// The colon-separated records of a database file.
    static func records(_ path: String) -> [[Substring]] {
        guard let bytes = try? FileSystem.readFileIfPresent(path, followSymlinks: true) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") || line.hasPrefix("+") || line.hasPrefix("-") { return nil }
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            return fields.count >= 4 ? fields : nil
        }
    }

    /// The passwd name of `uid`, or nil (the first entry wins, as in getpwuid).
    public static func userName(_ uid: uid_t) -> String? {
        records(passwdPath).first { $0[2] == Substring(String(uid)) }.map { String($0[0]) }
    }

    /// The group name of `gid`, or nil.
    public static func groupName(_ gid: gid_t) -> String? {
        records(groupPath).first { $0[2] == Substring(String(gid)) }.map { String($0[0]) }
    }

    /// The names of every group a user is in: the primary group (`gid`),
    /// then each group that lists the user as a member (what getgrouplist
    /// returns from the files source), each once.
    public static func groupNames(uid: uid_t, gid: gid_t, userName: String?) -> [String] {
        let groups = records(groupPath)
        var names: [String] = []
        let primary = Substring(String(gid))
        if let g = groups.first(where: { $0[2] == primary }) { names.append(String(g[0])) }
        if let user = userName.map({ Substring($0) }) {
            for g in groups where g[3].split(separator: ",").contains(user) && !names.contains(String(g[0])) {
                names.append(String(g[0]))
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
