#if canImport(Glibc)
import Glibc
#endif

/// The cgroup v2 tree, where per-app rules find programs: its mount point
/// (`/sys/fs/cgroup` on a unified host, `/sys/fs/cgroup/unified` on a
/// hybrid one), the directories in it, and the processes in each. Paths
/// are relative to the tree's root and start with '/', as
/// `/proc/PID/cgroup` writes them.
public struct CgroupTree: Sendable {
    /// Where cgroup2 is mounted.
    public let mountPoint: String

    public init(mountPoint: String) { self.mountPoint = mountPoint }

    /// The cgroup2 mount of this mount namespace: `/sys/fs/cgroup` first,
    /// then one under it, then any. Nil when cgroup2 is not mounted.
    public static func current(mountinfo: String = "/proc/self/mountinfo") -> CgroupTree? {
        guard let bytes = try? FileSystem.readFileIfPresent(mountinfo, followSymlinks: true) else { return nil }
        return mountPoint(inMountinfo: String(decoding: bytes, as: UTF8.self)).map(CgroupTree.init)
    }

    /// Pure: the cgroup2 mount point `mountinfo`'s text names.
    public static func mountPoint(inMountinfo text: String) -> String? {
        var points: [String] = []
        for line in text.split(separator: "\n") {
            let halves = line.split(separator: " - ", maxSplits: 1)
            guard halves.count == 2, halves[1].split(separator: " ").first == "cgroup2" else { continue }
            let fields = halves[0].split(separator: " ")
            guard fields.count >= 5 else { continue }
            points.append(unescapeMountinfo(String(fields[4])))
        }
        return points.first { $0 == "/sys/fs/cgroup" } ?? points.first { $0.hasPrefix("/sys/fs/cgroup/") } ?? points.first
    }

    /// mountinfo writes a space as \040 (and tab, newline, backslash likewise).
    static func unescapeMountinfo(_ s: String) -> String {
        guard s.contains("\\") else { return s }
        var out: [UInt8] = [], b = Array(s.utf8), i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "\\"), i + 3 < b.count, let v = UInt8(String(decoding: b[i + 1...i + 3], as: UTF8.self), radix: 8) {
                out.append(v)
                i += 4
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path nft resolves a `socket cgroupv2` match by: relative to
    /// `/sys/fs/cgroup` (nft's own base). Nil when this tree is mounted elsewhere.
    public func nftPath(_ path: String) -> String? {
        let base = "/sys/fs/cgroup"
        let rel = path.hasPrefix("/") ? String(path.dropFirst()) : path
        if mountPoint == base { return rel }
        guard mountPoint.hasPrefix(base + "/") else { return nil }
        return String(mountPoint.dropFirst(base.count + 1)) + "/" + rel
    }

    /// A cgroup's level: the number of parts of its path ("/a/b" is 2).
    public static func level(_ path: String) -> Int {
        path.split(separator: "/").count
    }

    public func directory(_ path: String) -> String {
        path == "/" ? mountPoint : mountPoint + path
    }

    public func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(directory(path), &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// Every cgroup whose directory name `matches`, depth first, at most
    /// `limit` directories visited (a tree is a few hundred on a desktop).
    /// A match's own children are not searched: its match covers them.
    public func find(limit: Int = 100_000, _ matches: (String) -> Bool) -> [String] {
        var found: [String] = [], stack = ["/"], visited = 0
        while let path = stack.popLast(), visited < limit {
            visited += 1
            for name in subdirectories(of: path).reversed() {
                let child = path == "/" ? "/" + name : path + "/" + name
                if matches(name) { found.append(child) } else { stack.append(child) }
            }
        }
        return found.sorted()
    }

    /// The names of a cgroup's child cgroups: the directories among its
    /// entries, told by readdir's d_type (a cgroup holds some 50 control
    /// files, none of which needs a stat).
    public func subdirectories(of path: String) -> [String] {
        guard let dir = opendir(directory(path)) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let type = entry.pointee.d_type
            guard type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) else { continue }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name == "." || name == ".." { continue }
            if type == UInt8(DT_UNKNOWN) {
                var st = stat()
                guard lstat(directory(path == "/" ? "/" + name : path + "/" + name), &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { continue }
            }
            names.append(name)
        }
        return names.sorted()
    }

    /// Makes a cgroup (and its parents) owned by root; one that exists is fine.
    public func makeDirectory(_ path: String) throws {
        var sofar = ""
        for part in path.split(separator: "/") {
            sofar += "/" + part
            if mkdir(directory(sofar), 0o755) != 0 && errno != EEXIST {
                throw SystemError("make the cgroup", path: directory(sofar), errno: .current)
            }
        }
    }

    /// Removes an empty cgroup. False (nothing done) while processes are in it.
    @discardableResult
    public func removeDirectory(_ path: String) -> Bool {
        rmdir(directory(path)) == 0 || errno == ENOENT
    }

    /// Moves a process (and, from then on, the sockets it makes) into a cgroup.
    public func move(_ pid: pid_t, to path: String) throws {
        let file = directory(path) + "/cgroup.procs"
        let fd = open(file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw SystemError("open", path: file, errno: .current) }
        defer { close(fd) }
        let text = Array("\(pid)\n".utf8)
        let n = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n != text.count { throw SystemError("move process \(pid) into", path: file, errno: .current) }
    }

    /// The processes in a cgroup and every cgroup below it.
    public func processes(under path: String) -> [pid_t] {
        var pids: [pid_t] = [], stack = [path]
        while let p = stack.popLast() {
            if let bytes = try? FileSystem.readFileIfPresent(directory(p) + "/cgroup.procs", limit: 1 << 22) {
                pids += String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { pid_t($0) }
            }
            for name in subdirectories(of: p) { stack.append(p == "/" ? "/" + name : p + "/" + name) }
        }
        return pids.sorted()
    }

    /// A process's cgroup v2 path (its "0::" line), or nil.
    public static func cgroup(of pid: pid_t) -> String? {
        guard let bytes = try? FileSystem.readFileIfPresent("/proc/\(pid)/cgroup", followSymlinks: true) else { return nil }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    /// Whether `path` is `ancestor` or below it.
    public static func isWithin(_ path: String, _ ancestor: String) -> Bool {
        ancestor == "/" || path == ancestor || path.hasPrefix(ancestor + "/")
    }
}
