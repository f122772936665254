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
    var links: [String: FileSystem.Info] = [:]
    func followedInfo(_ path: String) throws -> FileSystem.Info? { links[path] ?? infos[path] }
    func read(_ path: String) throws -> [UInt8] { contents[path] ?? [] }
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
        let (m, who) = try installed().plugin("org.example.relay")
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

    @Test func aDirectoryAboveThatOthersCanWriteIsRefused() throws {
        let e = #expect(throws: VPNError.self) { try installed { $0.dir("/opt", mode: 0o777) }.plugin("org.example.relay") }
        #expect(e?.message == "provider plugin 'org.example.relay' may not run: /opt/relay: is in /opt, which is writable by group or others (mode 777) and not sticky")
        let owned = #expect(throws: VPNError.self) { try installed { $0.dir("/opt", owner: 1000) }.plugin("org.example.relay") }
        #expect(owned?.message.hasSuffix("/opt/relay: is in /opt, which is owned by uid 1000, not root") == true)
        // Sticky, as /tmp: others cannot rename root's files there.
        _ = try installed { $0.dir("/opt", mode: 0o1777) }.plugin("org.example.relay")
        // A root-owned symlink to a directory that is root's (/bin -> usr/bin).
        _ = try installed { f in
            f.file("/opt", symlink: true)
            f.links["/opt"] = FileSystem.Info(isDirectory: true, isSymlink: false, isRegular: false, owner: 0, mode: 0o755, size: 0)
        }.plugin("org.example.relay")
        let link = #expect(throws: VPNError.self) { try installed { f in
            f.file("/opt", owner: 1000, symlink: true)
            f.links["/opt"] = FileSystem.Info(isDirectory: true, isSymlink: false, isRegular: false, owner: 0, mode: 0o755, size: 0)
        }.plugin("org.example.relay") }
        #expect(link?.message.hasSuffix("is in /opt, a symlink owned by uid 1000, not root") == true)
        let pkg = installed { $0.dir("/", mode: 0o775) }
        #expect(pkg.entries().map(\.problem) == ["/etc/vpnctl/providers: is in /, which is writable by group or others (mode 775) and not sticky",
                                                 "/pkg: is in /, which is writable by group or others (mode 775) and not sticky"])
    }

    @Test func theAdministratorsManifestWins() throws {
        let c = installed { f in
            f.file("/etc/vpnctl/providers/relay.json", Self.manifest(exe: "/opt/relay2"))
            f.file("/opt/relay2", mode: 0o755)
        }
        #expect(try c.plugin("org.example.relay").0.executable == "/opt/relay2")
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
