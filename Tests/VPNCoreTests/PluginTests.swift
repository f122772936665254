import Foundation
import Testing
@testable import VPNCore
@testable import VPNSystem

/// Files and accounts for the catalog, as a table.
final class FakePluginFiles: PluginFiles {
    var infos: [String: FileSystem.Info] = [:]
    var contents: [String: [UInt8]] = [:]
    var users: [String: UserIdentity] = ["vpnp": UserIdentity(name: "vpnp", uid: 990, gid: 990),
                                         "root": UserIdentity(name: "root", uid: 0, gid: 0)]

    func dir(_ path: String, owner: UInt32 = 0, mode: UInt32 = 0o755) {
        infos[path] = FileSystem.Info(isDirectory: true, isSymlink: false, isRegular: false, owner: owner, mode: mode, size: 0)
    }
    func file(_ path: String, _ text: String = "", owner: UInt32 = 0, mode: UInt32 = 0o644, symlink: Bool = false) {
        infos[path] = FileSystem.Info(isDirectory: false, isSymlink: symlink, isRegular: !symlink, owner: owner, mode: mode, size: text.utf8.count)
        contents[path] = Array(text.utf8)
    }
    func info(_ path: String) throws -> FileSystem.Info? { infos[path] }
    /// Symlinks' targets (the link itself: `file(path, symlink: true)`).
    var targets: [String: String] = [:]
    func link(_ path: String, to target: String, owner: UInt32 = 0) {
        file(path, owner: owner, mode: 0o777, symlink: true)
        targets[path] = target
    }
    /// Paths whose file is replaced between the walk's look and its open.
    var replacedOnOpen: Set<String> = []
    /// Paths that, looked up again after the walk, lead to another file.
    var resolvesElsewhere: Set<String> = []
    func read(_ path: String) throws -> [UInt8] { contents[path] ?? [] }

    // The walk, on handles that are rows of `opened`.
    var opened: [Int32: String] = [:]
    var nextHandle: Int32 = 100
    var inodes: [String: UInt64] = [:]
    func entry(_ path: String) -> PathEntry? {
        guard let i = infos[path] else { return nil }
        if inodes[path] == nil { inodes[path] = UInt64(inodes.count + 1) }
        return PathEntry(kind: i.isDirectory ? .directory : i.isSymlink ? .symlink : i.isRegular ? .regular : .other("FIFO"),
                         owner: i.owner, mode: i.mode, device: 1, inode: inodes[path]!)
    }
    func handle(_ path: String) -> Int32 {
        nextHandle += 1
        opened[nextHandle] = path
        return nextHandle
    }
    func openRoot() throws -> (Int32, PathEntry) { (handle("/"), entry("/")!) }
    func open(_ name: String, in parent: Int32) throws -> (Int32, PathEntry)? {
        let dir = opened[parent]!
        let path = dir == "/" ? "/" + name : dir + "/" + name
        guard let e = entry(path) else { return nil }
        return (handle(path), e)
    }
    func readLink(_ handle: Int32) throws -> String { targets[opened[handle]!]! }
    func openFile(_ name: String, in parent: Int32, as entry: PathEntry) throws -> Int32? {
        let dir = opened[parent]!
        let path = dir == "/" ? "/" + name : dir + "/" + name
        return replacedOnOpen.contains(path) ? nil : handle(path)
    }
    func head(_ handle: Int32, _ count: Int) throws -> [UInt8] { Array((contents[opened[handle]!] ?? []).prefix(count)) }
    func followed(_ path: String) throws -> PathEntry? {
        if resolvesElsewhere.contains(path) { return PathEntry(kind: .regular, owner: 0, mode: 0o755, device: 1, inode: 999_999) }
        // Symlinks substituted from the left, as the kernel does.
        var done = "", rest = path.split(separator: "/").map(String.init), hops = 0
        while !rest.isEmpty, hops < 40 {
            let c = rest.removeFirst()
            let p = done + "/" + c
            if let t = targets[p] {
                hops += 1
                let parts = t.split(separator: "/").map(String.init)
                if t.hasPrefix("/") { done = "" }
                rest = parts + rest
            } else {
                done = p
            }
        }
        return entry(done.isEmpty ? "/" : done)
    }
    func close(_ handle: Int32) { opened[handle] = nil }
    func list(_ directory: String) throws -> [String] {
        infos.keys.filter { FileSystem.parentDirectory(of: $0) == directory }.map { String($0.dropFirst(directory.count + 1)) }.sorted()
    }
    func user(_ name: String) -> UserIdentity? { users[name] }
}

@Suite struct PluginCatalogTests {
    static func manifest(_ id: String = "org.example.relay", exe: String = "/opt/relay", user: String = "vpnp",
                         caps: String = "[\"packet-tunnel\"]") -> String {
        "{\"schemaVersion\":1,\"identifier\":\"\(id)\",\"executable\":\"\(exe)\",\"version\":\"1.2\",\"capabilities\":\(caps),\"user\":\"\(user)\"}"
    }

    func installed(_ edit: (FakePluginFiles) -> Void = { _ in }) -> PluginCatalog {
        let f = FakePluginFiles()
        f.dir("/"); f.dir("/opt"); f.dir("/etc"); f.dir("/etc/vpnctl", mode: 0o700)
        f.dir("/pkg"); f.dir("/etc/vpnctl/providers")
        f.file("/pkg/relay.json", Self.manifest())
        f.file("/opt/relay", mode: 0o755)
        edit(f)
        return PluginCatalog(directories: ["/pkg", "/etc/vpnctl/providers"], files: f)
    }

    @Test func anInstalledPluginIsFoundWithItsUser() throws {
        let p = try installed().plugin("org.example.relay")
        let (m, who) = (p.manifest, p.user)
        #expect(m == PluginManifest(identifier: "org.example.relay", executable: "/opt/relay", version: "1.2",
                                    capabilities: ["packet-tunnel"], user: "vpnp", path: "/pkg/relay.json"))
        #expect(who.uid == 990)
    }

    @Test func aMismatchListsWhatIsInstalled() {
        let e = #expect(throws: VPNError.self) { try installed().plugin("org.example.Relay") }
        #expect(e?.code == .providerUnavailable)
        #expect(e?.message == "no provider plugin 'org.example.Relay' is installed")
        #expect(e?.hint == "installed: org.example.relay (/pkg/relay.json); identifiers are compared exactly: did you mean 'org.example.relay'?")
        let none = #expect(throws: VPNError.self) { try PluginCatalog(directories: ["/nowhere"], files: FakePluginFiles()).plugin("x") }
        #expect(none?.hint == "no provider plugins are installed (manifests in /nowhere)")
    }

    /// Each entitlement check names the identifier and the file at fault.
    @Test(arguments: [
        ("world-writable executable", { (f: FakePluginFiles) in f.file("/opt/relay", mode: 0o757) },
         "/opt/relay: is writable by group or others (mode 757)"),
        ("group-writable manifest", { (f: FakePluginFiles) in f.file("/pkg/relay.json", manifest(), mode: 0o664) },
         "/pkg/relay.json: is writable by group or others (mode 664)"),
        ("executable owned by a user", { (f: FakePluginFiles) in f.file("/opt/relay", owner: 1000, mode: 0o755) },
         "/opt/relay: is owned by uid 1000, not root"),
        ("executable a symlink", { (f: FakePluginFiles) in f.file("/opt/relay", symlink: true) },
         "/opt/relay: is a symlink; vpnctl follows none here"),
        ("executable missing", { (f: FakePluginFiles) in f.infos["/opt/relay"] = nil }, "/opt/relay: does not exist"),
        ("not executable", { (f: FakePluginFiles) in f.file("/opt/relay", mode: 0o644) }, "/opt/relay: is not executable"),
        ("no capability", { (f: FakePluginFiles) in f.file("/pkg/relay.json", manifest(caps: "[\"app-proxy\"]")) },
         "/pkg/relay.json: does not declare the capability 'packet-tunnel' (capabilities: app-proxy)"),
        ("root user", { (f: FakePluginFiles) in f.file("/pkg/relay.json", manifest(user: "root")) },
         "/pkg/relay.json: names the user 'root' (uid 0, gid 0); a plugin runs without root, as an unprivileged user"),
        ("unknown user", { (f: FakePluginFiles) in f.file("/pkg/relay.json", manifest(user: "nobody2")) },
         "/pkg/relay.json: names the user 'nobody2', who does not exist"),
    ] as [(String, @Sendable (FakePluginFiles) -> Void, String)])
    func refusedPluginsAreNamed(_ what: String, _ edit: @Sendable (FakePluginFiles) -> Void, _ problem: String) {
        let e = #expect(throws: VPNError.self, "\(what)") { try installed(edit).plugin("org.example.relay") }
        #expect(e?.code == .providerUnavailable)
        #expect(e?.message == "provider plugin 'org.example.relay' may not run: \(problem)", "\(what)")
    }

    @Test func aWritableDirectoryOrASymlinkedManifestIsRefused() {
        let c = installed { $0.dir("/pkg", mode: 0o777) }
        #expect(c.entries().first?.problem == "/pkg: is writable by group or others (mode 777)")
        #expect(throws: VPNError.self) { try c.plugin("org.example.relay") }
        let s = installed { $0.file("/pkg/relay.json", Self.manifest(), symlink: true) }
        #expect(s.entries().first?.problem == "/pkg/relay.json: is a symlink; vpnctl follows none here")
    }

    static func fix(_ dir: String) -> String {
        "; every directory on the path, symlinks resolved, must be root's and writable only by root: make \(dir) so (chown root, chmod go-w) or install the plugin elsewhere"
    }

    @Test func aDirectoryAboveThatOthersCanWriteIsRefused() throws {
        let e = #expect(throws: VPNError.self) { try installed { $0.dir("/opt", mode: 0o777) }.plugin("org.example.relay") }
        #expect(e?.message == "provider plugin 'org.example.relay' may not run: /opt/relay: is in /opt, which is writable by group or others (mode 777) and not sticky" + Self.fix("/opt"))
        let owned = #expect(throws: VPNError.self) { try installed { $0.dir("/opt", owner: 1000) }.plugin("org.example.relay") }
        #expect(owned?.message.hasSuffix("/opt/relay: is in /opt, which is owned by uid 1000, not root" + Self.fix("/opt")) == true)
        // Sticky, as /tmp: others cannot rename root's files there.
        _ = try installed { $0.dir("/opt", mode: 0o1777) }.plugin("org.example.relay")
        // A root-owned symlink to a directory that is root's (/bin -> usr/bin).
        let p = try installed { f in
            f.link("/opt", to: "usr/opt")
            f.dir("/usr"); f.dir("/usr/opt"); f.file("/usr/opt/relay", mode: 0o755)
        }.plugin("org.example.relay")
        #expect(p.executable.resolved == "/usr/opt/relay" && !p.executable.isScript)
        let link = #expect(throws: VPNError.self) { try installed { f in
            f.link("/opt", to: "/usr/opt", owner: 1000)
            f.dir("/usr"); f.dir("/usr/opt"); f.file("/usr/opt/relay", mode: 0o755)
        }.plugin("org.example.relay") }
        #expect(link?.message.hasSuffix("is in /opt, a symlink owned by uid 1000, not root" + Self.fix("/opt")) == true)
        let pkg = installed { $0.dir("/", mode: 0o775) }
        #expect(pkg.entries().map(\.problem) == ["/etc/vpnctl/providers: is in /, which is writable by group or others (mode 775) and not sticky" + Self.fix("/"),
                                                 "/pkg: is in /, which is writable by group or others (mode 775) and not sticky" + Self.fix("/")])
    }

    /// Item 9 (issue 29): a symlinked directory is judged at its target, and
    /// every directory above the target, not at the link.
    @Test func aSymlinkedDirectoryIsCheckedAtItsTargetAndEveryDirectoryAboveIt() throws {
        // /opt/plug/bin -> /home/u/real: the link and real/ are root's, /home/u is a user's.
        func tree(_ f: FakePluginFiles) {
            f.dir("/opt/plug"); f.link("/opt/plug/bin", to: "/home/u/real")
            f.dir("/home"); f.dir("/home/u", owner: 1000, mode: 0o755); f.dir("/home/u/real")
            f.file("/home/u/real/relay", mode: 0o755)
            f.file("/pkg/relay.json", Self.manifest(exe: "/opt/plug/bin/relay"))
        }
        let e = #expect(throws: VPNError.self) { try installed(tree).plugin("org.example.relay") }
        #expect(e?.message == "provider plugin 'org.example.relay' may not run: /opt/plug/bin/relay: is in /home/u, which is owned by uid 1000, not root"
                + " (reached through the symlink /opt/plug/bin)" + Self.fix("/home/u"))
        // Relative targets and ".." resolve from the link's own directory.
        let rel = #expect(throws: VPNError.self) { try installed { f in
            tree(f); f.targets["/opt/plug/bin"] = "../../home/u/real"
        }.plugin("org.example.relay") }
        #expect(rel?.message.contains("is in /home/u, which is owned by uid 1000, not root") == true)
        // A loop ends.
        let loop = #expect(throws: VPNError.self) { try installed { f in
            tree(f); f.targets["/opt/plug/bin"] = "/opt/plug/bin"
        }.plugin("org.example.relay") }
        #expect(loop?.message.contains("is reached through more than 40 symlinks") == true)
    }

    /// Item 9: what was checked is what is handed over, open; a file swapped
    /// between the look and the open, or a path that leads elsewhere after
    /// the walk, is refused.
    @Test func aPathWhoseResolutionChangesIsRefusedAndTheCheckedFileStaysOpen() throws {
        let f = FakePluginFiles()
        f.dir("/"); f.dir("/opt"); f.dir("/pkg"); f.dir("/usr"); f.dir("/usr/opt")
        f.link("/opt/bin", to: "/usr/opt")
        f.file("/usr/opt/relay", mode: 0o755)
        f.file("/pkg/relay.json", Self.manifest(exe: "/opt/bin/relay"))
        let catalog = PluginCatalog(directories: ["/pkg"], files: f)
        var p: CheckedPlugin? = try catalog.plugin("org.example.relay")
        #expect(f.opened[p!.executable.handle] == "/usr/opt/relay" && f.opened.count == 1)
        p = nil
        #expect(f.opened.isEmpty, "released: \(f.opened)")
        f.replacedOnOpen = ["/usr/opt/relay"]
        let swapped = #expect(throws: VPNError.self) { try catalog.plugin("org.example.relay") }
        #expect(swapped?.message.contains("/opt/bin/relay: resolved to /usr/opt/relay when checked, but the path leads elsewhere now") == true,
                "\(swapped?.message ?? "")")
        f.replacedOnOpen = []
        f.resolvesElsewhere = ["/opt/bin/relay"]
        let elsewhere = #expect(throws: VPNError.self) { try catalog.plugin("org.example.relay") }
        #expect(elsewhere?.message.contains("its resolution changed during the check, so it is refused") == true)
        #expect(f.opened.isEmpty, "nothing left open: \(f.opened)")
    }

    /// Item 9: a script's interpreter is checked the same way (the kernel
    /// looks it up by path).
    @Test func aScriptsInterpreterIsCheckedToo() throws {
        let ok = try installed { f in
            f.file("/opt/relay", "#!/opt/py -u\nprint(1)\n", mode: 0o755)
            f.file("/opt/py", mode: 0o755)
        }.plugin("org.example.relay")
        #expect(ok.executable.isScript && ok.executable.interpreter == "/opt/py")
        let e = #expect(throws: VPNError.self) { try installed { f in
            f.file("/opt/relay", "#!/home/u/py\n", mode: 0o755)
            f.dir("/home"); f.dir("/home/u", owner: 1000); f.file("/home/u/py", mode: 0o755)
        }.plugin("org.example.relay") }
        #expect(e?.message == "provider plugin 'org.example.relay' may not run: /opt/relay: is a script whose interpreter is refused: /home/u/py: is in /home/u, which is owned by uid 1000, not root" + Self.fix("/home/u"))
        let relative = #expect(throws: VPNError.self) { try installed { $0.file("/opt/relay", "#! py\n", mode: 0o755) }.plugin("org.example.relay") }
        #expect(relative?.message.hasSuffix("/opt/relay: is a script whose interpreter 'py' is not an absolute path") == true)
    }

    @Test func theAdministratorsManifestWins() throws {
        let c = installed { f in
            f.file("/etc/vpnctl/providers/relay.json", Self.manifest(exe: "/opt/relay2"))
            f.file("/opt/relay2", mode: 0o755)
        }
        #expect(try c.plugin("org.example.relay").manifest.executable == "/opt/relay2")
        let entries = c.entries()
        #expect(entries.map(\.path) == ["/etc/vpnctl/providers/relay.json", "/pkg/relay.json"])
        #expect(entries[1].shadowedBy == "/etc/vpnctl/providers/relay.json")
    }

    @Test(arguments: [
        ("{", "is not JSON"), ("[]", "is not a manifest"),
        ("{\"identifier\":\"a b\",\"executable\":\"/x\",\"user\":\"u\"}", "has no valid identifier"),
        ("{\"identifier\":\"a\",\"executable\":\"x\",\"user\":\"u\"}", "names no executable by absolute path"),
        ("{\"identifier\":\"a\",\"executable\":\"/x\"}", "names no user to run as"),
        ("{\"schemaVersion\":2,\"identifier\":\"a\",\"executable\":\"/x\",\"user\":\"u\"}", "has schemaVersion 2"),
    ])
    func badManifestsAreNamed(_ text: String, _ problem: String) {
        let e = #expect(throws: PluginProblem.self) { try PluginManifest.parse(Array(text.utf8), path: "/m.json") }
        #expect(e?.description.hasPrefix(problem) == true, "\(text): \(e?.description ?? "")")
    }
}

@Suite struct PluginProtocolTests {
    func parse(_ s: String) throws -> PluginMessage { try PluginMessage.parse(Array(s.utf8)) }

    @Test func messagesAreRead() throws {
        var s = PluginMessage.Settings()
        s.addresses = ["198.19.20.2/32"]; s.routes = ["198.19.20.0/24"]; s.excludedRoutes = ["198.18.0.1/32"]
        s.dns = ["198.19.20.1"]; s.mtu = 1400
        #expect(try parse(#"{"type":"setTunnelNetworkSettings","id":1,"addresses":["198.19.20.2/32"],"routes":["198.19.20.0/24"],"excludedRoutes":["198.18.0.1/32"],"dns":["198.19.20.1"],"mtu":1400}"#)
                == .setTunnelNetworkSettings(id: 1, s))
        #expect(try parse(#"{"type":"status","status":"reasserting"}"#) == .status(.reasserting))
        #expect(try parse(#"{"type":"error","name":"authenticationFailed","message":"bad token"}"#) == .error(.authenticationFailed, "bad token"))
        #expect(try parse(#"{"type":"secret","id":7,"name":"token"}"#) == .secret(id: 7, name: "token"))
    }

    @Test(arguments: [
        ("garbage", "a line that is not JSON"),
        (#"{"id":1}"#, "a message without a \"type\""),
        (#"{"type":"launch"}"#, "a message of unknown type \"launch\""),
        (#"{"type":"status","status":"disconnected"}"#, "a status that is not connecting, connected or reasserting"),
        (#"{"type":"error","name":"oops"}"#, "an error whose name is not an NEVPNConnectionError name: \"oops\""),
        (#"{"type":"setTunnelNetworkSettings","addresses":["10.0.0.1"]}"#, "settings with an address that is not ADDRESS/PREFIX"),
        (#"{"type":"setTunnelNetworkSettings","mtu":10}"#, "settings with an MTU of 10"),
        (#"{"type":"setTunnelNetworkSettings","routes":"x"}"#, "a malformed message"),
        (#"{"type":"secret"}"#, "a secret request without a name"),
    ])
    func malformedMessagesAreNamed(_ line: String, _ problem: String) {
        let e = #expect(throws: PluginProblem.self) { try parse(line) }
        #expect(e?.description.hasPrefix(problem) == true, "\(line): \(e?.description ?? "")")
    }

    @Test func linesAreSplitAndBounded() throws {
        var b = PluginLineBuffer(limit: 16)
        #expect(try b.append(Array("ab\ncd".utf8)) == [Array("ab".utf8)])
        #expect(try b.append(Array("e\n\n".utf8)) == [Array("cde".utf8), []])
        #expect(throws: PluginProblem.self) { try b.append([UInt8](repeating: 0x41, count: 16)) }
        var c = PluginLineBuffer(limit: 16)
        #expect(throws: PluginProblem.self) { try c.append(Array((String(repeating: "x", count: 20) + "\n").utf8)) }
    }

    @Test func repliesAreJSONLines() {
        #expect(PluginMessage.stop(.userInitiated) == #"{"reason":"userInitiated","type":"stop"}"#)
        #expect(PluginMessage.settingsReply(id: 3, error: nil) == #"{"id":3,"ok":true,"type":"setTunnelNetworkSettings"}"#)
        #expect(PluginMessage.secretReply(id: nil, name: "t", value: nil, error: "no") == #"{"error":"no","name":"t","type":"secret"}"#)
        #expect(PluginMessage.start(providerConfiguration: ["a": "b"], serverAddress: "198.18.0.1:5555", interface: "utun0")
                == #"{"interface":"utun0","providerConfiguration":{"a":"b"},"serverAddress":"198.18.0.1:5555","type":"start"}"#)
    }
}
