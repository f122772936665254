#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

/// The system's user and group databases (NSS), read for a uid the kernel
/// vouched for: nothing here trusts a name a client sent.
public enum UserDatabase {
    /// The passwd name of `uid`, or nil. The corresponding C call is getpwuid_r().
    public static func userName(_ uid: uid_t) -> String? {
        var pw = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        guard getpwuid_r(uid, &pw, &buffer, buffer.count, &result) == 0, result != nil, let name = pw.pw_name else { return nil }
        return String(cString: name)
    }

    /// The group name of `gid`, or nil. The corresponding C call is getgrgid_r().
    public static func groupName(_ gid: gid_t) -> String? {
        var gr = group()
        var result: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 65536)
        guard getgrgid_r(gid, &gr, &buffer, buffer.count, &result) == 0, result != nil, let name = gr.gr_name else { return nil }
        return String(cString: name)
    }

    /// Every group of `user` (primary `gid` included), as gids. The
    /// corresponding C call is getgrouplist().
    public static func groupIDs(of user: String, primary gid: gid_t) -> [gid_t] {
        var max: Int32 = 64
        while max <= 65536 {
            var groups = [UInt32](repeating: 0, count: Int(max))
            let n = vpn_group_list(user, gid, &groups, max)
            if n >= 0 { return Array(groups.prefix(Int(n))) }
            max *= 4
        }
        return [gid]
    }

    /// The names of every group a user is in, primary first; a uid with no
    /// passwd entry has its primary group only.
    public static func groupNames(uid: uid_t, gid: gid_t, userName: String?) -> [String] {
        let ids = userName.map { groupIDs(of: $0, primary: gid) } ?? [gid]
        var seen = Set<gid_t>()
        return ([gid] + ids).filter { seen.insert($0).inserted }.compactMap(groupName)
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
