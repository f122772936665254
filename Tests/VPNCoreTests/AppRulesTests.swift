import Foundation
import Testing
@testable import VPNCore
import VPNSystem

@Suite struct AppRulesModelTests {
    func decode(_ json: String) throws -> AppRules {
        try AppRules(json: JSONReader(parsing: Array(json.utf8)))
    }

    @Test func decodesBothKindsOfMatchAndEncodesThemBack() throws {
        let r = try decode(#"{"mode":"exclude","matches":[{"unit":"firefox.service"},{"cgroup":"/user.slice/user-1000.slice"}]}"#)
        #expect(r == AppRules(mode: .exclude, matches: [.unit("firefox.service"), .cgroup("/user.slice/user-1000.slice")]))
        let data = try JSONEncoder().encode(r)
        #expect(String(decoding: data, as: UTF8.self).contains(#""matches":[{"unit":"firefox.service"},{"cgroup":"\/user.slice\/user-1000.slice"}]"#))
        #expect(try decode(String(decoding: data, as: UTF8.self)) == r)
    }

    @Test(arguments: [
        (#"{"matches":[]}"#, "mode"),
        (#"{"mode":"only","matches":[]}"#, "only"),
        (#"{"mode":"include","matches":[{}]}"#, "neither a unit nor a cgroup"),
        (#"{"mode":"include","matches":[{"unit":"a.service","cgroup":"/a"}]}"#, "both a unit and a cgroup"),
        (#"{"mode":"include","matches":[{"executable":"/usr/bin/curl"}]}"#, "vpnctl run PROFILE -- PROGRAM"),
    ])
    func refusesWhatItCannotMean(json: String, named: String) {
        #expect {
            _ = try decode(json)
        } throws: { error in "\(error)".contains(named) }
    }

    @Test func problemsNameEachMatch() {
        let r = AppRules(mode: .include, matches: [
            .unit("firefox.service"), .unit("app-org.mozilla.firefox-*.scope"), .unit("bad name.service"), .unit("x.socket"),
            .unit("*"), .cgroup("/user.slice"), .cgroup("relative"), .cgroup("/"), .cgroup("/a/../b"), .cgroup("/a\"b"),
        ])
        let p = r.problems()
        #expect(p.count == 7)
        #expect(p[0].hasPrefix("appRules.matches[2].unit: 'bad name.service' is not a unit name"))
        #expect(p[1].hasPrefix("appRules.matches[3].unit: 'x.socket' names no unit that holds processes"))
        #expect(p[2].hasPrefix("appRules.matches[4].unit: '*' matches every program"))
        #expect(p[3].hasPrefix("appRules.matches[6].cgroup: 'relative' is not a cgroup path"))
        #expect(p[4].hasPrefix("appRules.matches[7].cgroup: '/' is the root"))
        #expect(p[5].contains("matches[8]") && p[5].contains("'..'"))
        #expect(p[6].contains("matches[9]") && p[6].contains("nft cannot match"))
        #expect(AppRules(mode: .include).problems() == ["appRules.matches: empty (name at least one unit or cgroup, or remove appRules)"])
    }

    @Test func enforceRoutesWithAppRulesIsRefused() {
        var p = Profile(name: "x", protocol: .wireguard(WireGuardConfiguration(privateKeySecret: "k", addresses: ["10.0.0.2"])))
        p.appRules = AppRules(mode: .include, matches: [.unit("a.service")])
        p.enforceRoutes = true
        let problems = ProfileValidator(secretExists: { _ in true }).networkPolicy(p)
        #expect(problems.contains { $0.hasPrefix("appRules: cannot be combined with enforceRoutes") })
    }

    @Test func aProfileKeepsItsAppRulesThroughTheStore() throws {
        var p = Profile(name: "x", protocol: .wireguard(WireGuardConfiguration(privateKeySecret: "k", addresses: ["10.0.0.2"])))
        p.appRules = AppRules(mode: .include, matches: [.cgroup("/a/b")])
        let data = try JSONEncoder().encode(p)
        #expect(try Profile.parse(Array(data)).appRules == p.appRules)
    }
}

@Suite struct AppMarkingTests {
    let id = UUID(uuidString: "3B1A80FA-B61E-4B56-B0BD-19E883798DFA")!

    func rules(_ mode: AppRules.Mode, killSwitch: Bool, tunnel: String?) -> KillSwitchRules {
        var r = KillSwitchRules(table: KillSwitchRules.tableName(id), profile: "office", includeAll: killSwitch, tunnelInterface: tunnel,
                                marks: [0x766e])
        var m = AppMarking(mode: mode, mark: AppRouting.mark(for: id))
        m.cgroups = [.init(level: 2, nftPath: "vpnctl/3b1a80fab61e"), .init(level: 2, nftPath: "unified/user.slice/firefox.service")]
        m.dnsTo = mode == .include ? ["198.19.12.1", "2001:2:12::1"] : ["198.18.0.1"]
        m.dnsFrom = mode == .include ? [] : ["198.19.12.1"]
        r.apps = m
        return r
    }

    @Test func markAndTableAreTheProfilesOwn() {
        #expect(AppRouting.mark(for: id) == 0x7661_3b1a)
        #expect(AppRouting.key(for: id) == "3b1a80fab61e")
        #expect(AppRouting.ownedCgroup(for: id) == "/vpnctl/3b1a80fab61e")
        #expect(AppRouting.slice(for: id) == "vpnctl-3b1a80fab61e.slice")
    }

    @Test func includeWithTheKillSwitchHoldsOnlyTheMatchedPrograms() throws {
        try expectGolden(rules(.include, killSwitch: true, tunnel: "utun0").render(), "killswitch/apps-include-killswitch.nft")
    }

    @Test func includeBeforeTheTunnelExistsDropsEveryMarkedPacket() throws {
        let text = try rules(.include, killSwitch: true, tunnel: nil).render()
        #expect(text.contains("\t\tmeta mark 0x76613b1a counter drop comment \"per-app kill switch\"\n"))
        #expect(!text.contains("masquerade"))
        #expect(text.contains("policy accept;"))
        #expect(!text.contains("policy drop;"))
    }

    @Test func excludeWithTheKillSwitchLetsExactlyTheMarkedTrafficOut() throws {
        try expectGolden(rules(.exclude, killSwitch: true, tunnel: "utun0").render(), "killswitch/apps-exclude-killswitch.nft")
    }

    @Test func includeWithoutTheKillSwitchHasNoGuard() throws {
        let text = try rules(.include, killSwitch: false, tunnel: "utun0").render()
        #expect(!text.contains("apps_guard"))
        #expect(text.contains("meta mark 0x76613b1a oifname \"utun0\" masquerade"))
    }

    @Test func theRulesOfEachMode() {
        let include = MarkRule.rules(mode: .include, mark: 0x7661_0001, table: 0x7661_0001)
        #expect(include.map(\.description) == ["fwmark 0x76610001 lookup 1986068481 pref 5210", "lookup 1986068481 pref 32800",
                                                "-6 fwmark 0x76610001 lookup 1986068481 pref 5210", "-6 lookup 1986068481 pref 32800"])
        let exclude = MarkRule.rules(mode: .exclude, mark: 0x7661_0001, table: 0x7661_0001)
        #expect(exclude.map(\.description) == [
            "lookup main suppress_prefixlength 0 pref 5210", "not fwmark 0x76610001 lookup 1986068481 pref 5211",
            "-6 lookup main suppress_prefixlength 0 pref 5210", "-6 not fwmark 0x76610001 lookup 1986068481 pref 5211",
        ])
    }

    @Test func aRecordNamesOnlyVpnctlsOwnMarksAndSysctls() throws {
        let good = #"{"mode":"include","mark":1986068481,"table":1986068481,"covered":["/a"],"cgroupMount":"/sys/fs/cgroup","families":[4,6],"sysctls":["/proc/sys/net/ipv4/conf/all/src_valid_mark","/etc/shadow"]}"#
        let r = try AppRoutingRecord(json: JSONReader(parsing: Array(good.utf8)))
        #expect(r.sysctls == [AppSession.srcValidMark])
        let bad = #"{"mode":"include","mark":254,"table":254}"#
        #expect(throws: (any Error).self) { try AppRoutingRecord(json: JSONReader(parsing: Array(bad.utf8))) }
    }
}

@Suite struct CgroupTreeTests {
    @Test func findsTheCgroup2MountOfUnifiedAndHybridHosts() {
        let hybrid = """
        30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
        31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
        32 30 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd
        """
        #expect(CgroupTree.mountPoint(inMountinfo: hybrid) == "/sys/fs/cgroup/unified")
        let unified = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n40 29 0:26 / /mnt/other\\040dir rw - cgroup2 cgroup2 rw"
        #expect(CgroupTree.mountPoint(inMountinfo: unified) == "/sys/fs/cgroup")
        #expect(CgroupTree.mountPoint(inMountinfo: "40 29 0:26 / /mnt/other\\040dir rw - cgroup2 cgroup2 rw") == "/mnt/other dir")
        #expect(CgroupTree.mountPoint(inMountinfo: "29 23 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw") == nil)
    }

    @Test func nftResolvesPathsUnderSysFsCgroup() {
        #expect(CgroupTree(mountPoint: "/sys/fs/cgroup").nftPath("/a/b") == "a/b")
        #expect(CgroupTree(mountPoint: "/sys/fs/cgroup/unified").nftPath("/a/b") == "unified/a/b")
        #expect(CgroupTree(mountPoint: "/mnt/cg").nftPath("/a") == nil)
        #expect(CgroupTree.level("/vpnctl/abc") == 2)
        #expect(CgroupTree.isWithin("/a/b/c", "/a/b") && CgroupTree.isWithin("/a/b", "/a/b") && !CgroupTree.isWithin("/a/bc", "/a/b"))
    }

    @Test func coveredCgroupsFollowTheMatchesAndThePolicy() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        var p = Profile(name: "office", protocol: .wireguard(WireGuardConfiguration(privateKeySecret: "k", addresses: ["10.0.0.2"])))
        p.id = UUID(uuidString: "3B1A80FA-B61E-4B56-B0BD-19E883798DFA")!
        let rules = AppRules(mode: .include, matches: [.unit("app-firefox-*.scope"), .cgroup("/system.slice/backup.service"), .cgroup("/gone")])
        for d in ["/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-12.scope/child",
                  "/user.slice/user-1000.slice/user@1000.service/vpnctl.slice/vpnctl-3b1a80fab61e.slice/run-1.scope",
                  "/user.slice/user-1001.slice/user@1001.service/vpnctl.slice/vpnctl-3b1a80fab61e.slice",
                  "/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-x\" ; flush ruleset ; #.scope",
                  "/user.slice/user-1001.slice/user@1001.service/app.slice/app-firefox-9.scope",
                  "/system.slice/backup.service", "/vpnctl/3b1a80fab61e", "/other.slice/app-chrome-1.scope"] {
            try FileManager.default.createDirectory(atPath: root + d, withIntermediateDirectories: true)
        }
        let tree = CgroupTree(mountPoint: root)
        let covered = AppRouting.covered(rules, profile: p, tree: tree, mayStart: { $0 == 1000 })
        #expect(covered == [
            "/system.slice/backup.service",
            "/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-12.scope",
            "/user.slice/user-1000.slice/user@1000.service/vpnctl.slice/vpnctl-3b1a80fab61e.slice",
            "/vpnctl/3b1a80fab61e",
        ])
        #expect(AppRouting.userManager(of: "/user.slice/user-1001.slice/user@1001.service/x") == 1001)
        #expect(AppRouting.userManager(of: "/system.slice/x") == nil)
    }
}
