#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// nft's `socket cgroupv2 level N` counted N from the root of the whole
/// cgroup tree until Linux 6.11 (which adds the depth of the cgroup
/// namespace of whoever loads the rule). Inside a cgroup namespace (a
/// container) paths start at the namespace's root, somewhere below the
/// tree's: on an older kernel the levels of the paths seen here are short by
/// the root's own depth, which nothing in the namespace tells. The
/// supervisor finds what this kernel needs by asking nft: a probe table with one
/// counting rule per candidate level for its own cgroup, one marked UDP
/// datagram to the discard port on loopback, and the rule that counted it.
public enum CgroupLevels {
    /// The initial cgroup namespace's inode (the kernel's PROC_CGROUP_INIT_INO).
    public static let initialNamespace = "cgroup:[4026531835]"

    /// Whether this process is in the initial cgroup namespace (its paths are whole).
    public static var inInitialNamespace: Bool {
        var buf = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/self/ns/cgroup", &buf, buf.count - 1)
        return n <= 0 || String(cString: buf) == initialNamespace
    }

    /// How many levels this namespace's root is below the tree's: 0 in the
    /// initial namespace, else measured with `firewall`.
    public static func offset(tree: CgroupTree, firewall: FirewallPort, log: (String) -> Void) throws -> Int {
        if inInitialNamespace { return 0 }
        guard let mine = CgroupTree.cgroup(of: getpid()), mine != "/", !mine.hasPrefix("/.."), let path = tree.nftPath(mine) else {
            throw VPNError(.failure, "in a cgroup namespace, and this process is at its root: the depth of the namespace cannot be measured") // English: the supervisor's
        }
        let depth = CgroupTree.level(mine)
        let table = "vpnctl_probe_\(getpid())"
        let mark: UInt32 = 0x7661_fffe
        var lines = ["table inet \(table)", "delete table inet \(table)", "table inet \(table) {", "\tchain output {",
                     "\t\ttype filter hook output priority -300; policy accept;"]
        for k in depth...(depth + 32) {
            lines.append("\t\tmeta mark 0x\(String(mark, radix: 16)) udp dport 9 socket cgroupv2 level \(k) \"\(path)\" counter comment \"level \(k)\"")
        }
        lines += ["\t}", "}"]
        try firewall.run(lines.joined(separator: "\n") + "\n")
        defer { try? firewall.run(KillSwitchRules.removal(table)) }
        do {
            let s = try IPSocket(ipv6: false, .udp)
            try s.setMark(mark)
            try s.connect(to: [127, 0, 0, 1], port: 9, deadlineMs: monotonicMilliseconds() + 1000)
            try s.send([0], deadlineMs: monotonicMilliseconds() + 1000)
        } catch {
            throw VPNError(.failure, "the cgroup level probe could not send on loopback: \(error)") // English: the supervisor's
        }
        guard let listing = firewall.list(table) else { throw VPNError(.failure, "the cgroup level probe's table could not be read") } // English: the supervisor's
        for line in listing.split(separator: "\n") where !line.contains("packets 0 ") && line.contains("packets ") {
            let parts = line.components(separatedBy: "comment \"level ")
            if parts.count == 2, let k = Int(parts[1].prefix { $0.isNumber }) {
                log("[#] cgroup namespace: its root is \(k - depth) levels below the tree's (measured with nft)")
                return k - depth
            }
        }
        throw VPNError(.failure, "the cgroup level probe counted nothing (levels \(depth) to \(depth + 32) of \(mine))") // English: the supervisor's
    }
}
