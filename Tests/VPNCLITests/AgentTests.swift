import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore
@testable import VPNService
@testable import VPNSystem

/// The agent's side of a call, in-process: what it decides, and what the
/// caller's command line prints of its typed reply, against what root sees
/// running the command itself.
@Suite struct AgentExecutionTests {
    let h = Harness()
    var settings: AgentSettings { AgentSettings(configDirectory: h.configDir, runDirectory: h.runDir, adminGroup: "vpnctl") }
    let alice = Caller(uid: 1001, gid: 1001, userName: "alice", groupNames: ["alice"])
    let bob = Caller(uid: 1002, gid: 1002, userName: "bob", groupNames: ["bob", "staff"])
    let mallory = Caller(uid: 1003, gid: 1003, userName: "mallory", groupNames: ["mallory"])

    init() throws {
        let conf = h.fixture("wg/office.conf")
        for name in ["office", "lab", "private", "secretlab"] {
            let r = h.run("import", conf, "--name", name)
            #expect(r.code == 0, "\(r.stderr)")
        }
        for (name, policy) in [("office", ["users": ["alice"], "groups": ["staff"]]), ("lab", ["users": ["bob"], "actions": ["status"]])] {
            h.editor = { path in
                var p = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
                p["policy"] = policy
                try JSONSerialization.data(withJSONObject: p).write(to: URL(fileURLWithPath: path))
            }
            let r = h.run("edit", name)
            #expect(r.code == 0, "\(r.stderr)")
        }
    }

    /// The command run as `caller` through the agent's path, without its
    /// socket: the request serialized and parsed as the agent reads it,
    /// authorized, run, and every reply line parsed as the client reads it.
    func agent(_ args: String..., as caller: Caller) -> Harness.Result {
        h.service = Loopback.service(caller: caller, settings: settings)
        defer { h.service = nil }
        return h.run(args)
    }

    @Test func aUserSeesWhatRootSeesOfTheirProfile() {
        let root = h.run("status", "office", "--json")
        let mine = agent("status", "office", "--json", as: alice)
        #expect(mine.code == 0 && root.code == 0)
        #expect(mine.stdout == root.stdout)
        #expect(mine.stderr == root.stderr)
        // Listing everything, a user gets only theirs: the same bytes as root asking for that one.
        #expect(agent("status", "--json", as: alice).stdout == root.stdout)
        let text = agent("status", as: bob).stdout
        #expect(text.contains("office") && text.contains("lab") && !text.contains("private"))
        let list = agent("list", as: mallory)
        #expect(list.code == 0 && list.stdout.isEmpty)
        #expect(list.stderr == "no profiles for you: none names you or a group of yours in its policy\n")
    }

    @Test func refusalsAreExit11NamingProfilePolicyAndWhoGrants() {
        let r = agent("start", "lab", as: bob)
        #expect(r.code == 11)
        #expect(r.stderr == """
            vpnctl: user 'bob' may not start 'lab': its policy grants only status
            hint: root or a member of group 'vpnctl' can grant it in the profile's policy: vpnctl edit lab

            """)
        let lab = agent("stop", "lab", "--json", as: bob)
        #expect(lab.code == 11)
        #expect(jsonObject(lab.stdout)["error"].flatMap { ($0 as? [String: Any])?["name"] as? String } == "permissionDenied")
        // A profile that grants the caller nothing is no profile of theirs (9).
        #expect(agent("is-connected", "private", as: alice).code == 9)
        // Root and the admin group are never refused.
        let admin = Caller(uid: 1004, gid: 1004, userName: "dave", groupNames: ["dave", "vpnctl"])
        #expect(agent("is-connected", "private", as: admin).code == 12)
    }

    @Test func authorizationNamesTheProfileByItsUUID() throws {
        let grant = try AgentAuthorization.authorize(.stop(profile: "office", wait: true, timeout: 10, changes: false), caller: bob, settings: settings)
        #expect(UUID(uuidString: grant.call.profile ?? "") != nil)
        #expect(grant.decision?.reason == "user 'bob' may stop 'office': user 'bob' is in group 'staff', named in its policy")
    }

    /// The agent logs a refusal from the decision (English), not from the
    /// error the client reads (in the client's language).
    @Test func aRefusalCarriesItsDecisionForTheLog() {
        #expect {
            try AgentAuthorization.authorize(.start(profile: "lab", wait: true, timeout: 20, changes: false), caller: bob, settings: settings)
        } throws: { error in
            guard let d = error as? AgentAuthorization.Denial else { return false }
            return d.error.code == .permissionDenied && !d.decision.allowed
                && d.decision.englishReason == "user 'bob' may not start 'lab': its policy grants only status"
        }
    }

    @Test func canAnswersForTheCallerNotForTheAgent() {
        let yes = agent("can", "toggle", "office", as: alice)
        #expect(yes.code == 0 && yes.stdout == "allowed: user 'alice' may toggle 'office': user 'alice' is named in its policy\n")
        let no = agent("can", "remove", "office", "--json", as: alice)
        #expect(no.code == 11)
        #expect(jsonObject(no.stdout)["allowed"] as? Bool == false)
        #expect(jsonObject(no.stdout)["reason"] as? String == "remove changes the store: only root and members of group 'vpnctl' may")
    }

    func id(_ name: String) throws -> String {
        let m = ProfileManager(store: PreferencesStore(directory: h.configDir))
        try m.load()
        return try m.profile(named: name).id.lowercasedString
    }

    /// Issue 29, item 6: no reply names, suggests or describes a profile
    /// the caller may not see: a hidden profile reads exactly as a name
    /// that does not exist, for every verb, `can` too.
    @Test func canNoHiddenSuggestion_hiddenProfilesReadAsAbsentEverywhere() throws {
        let hidden = try id("secretlab")
        let commands: [[String]] = [["status"], ["status", "--watch"], ["start"], ["stop"], ["toggle"], ["is-connected"],
                                    ["verify", "--probe", "198.18.0.1:80"], ["stats", "--profile"], ["can", "start"], ["logs"], ["logs", "--follow"]]
        for command in commands {
            for flags in [[], ["--json"]] {
                func ask(_ reference: String) -> Harness.Result {
                    h.service = Loopback.service(caller: alice, settings: settings)
                    defer { h.service = nil }
                    return h.run(command + [reference] + flags)
                }
                for reference in ["secretla", "secretlab", hidden, hidden.uppercased(), "ecretlab"] {
                    let r = ask(reference)
                    #expect(r.code == 9, "\(command) \(reference): \(r.code) \(r.stderr)")
                    let said = (r.stdout + r.stderr).replacingOccurrences(of: "'\(reference)'", with: "'REF'")
                        .replacingOccurrences(of: "\"\(reference)\"", with: "\"REF\"")
                    #expect(!said.contains("secretlab") && !said.contains(hidden), "\(command) \(reference): \(said)")
                    // The same reply as for a name nothing has.
                    let none = ask("zzzzzzzzzzzz")
                    #expect(said == (none.stdout + none.stderr).replacingOccurrences(of: "'zzzzzzzzzzzz'", with: "'REF'")
                        .replacingOccurrences(of: "\"zzzzzzzzzzzz\"", with: "\"REF\""), "\(command) \(reference)")
                }
            }
        }
        // Suggestions come from what the caller sees: alice sees office only.
        let typo = agent("can", "start", "offic", as: alice)
        #expect(typo.code == 9 && typo.stderr.contains("did you mean 'office'?"))
        // An administrator sees everything, suggestions too.
        let admin = Caller(uid: 1004, gid: 1004, userName: "dave", groupNames: ["dave", "vpnctl"])
        #expect(agent("can", "start", "secretla", as: admin).stderr.contains("did you mean 'secretlab'?"))
        // A profile the caller sees but may not act on is still refused with its reason (11).
        let no = agent("can", "stop", "lab", as: bob)
        #expect(no.code == 11 && no.stdout == "denied: user 'bob' may not stop 'lab': its policy grants only status\n")
    }

    func setPolicy(_ name: String, _ policy: [String: Any]) {
        h.editor = { path in
            var p = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            p["policy"] = policy
            try JSONSerialization.data(withJSONObject: p).write(to: URL(fileURLWithPath: path))
        }
        let r = h.run("edit", name)
        #expect(r.code == 0, "\(r.stderr)")
    }

    /// Issue 29, item 7: a stream is decided again before each report: by
    /// the policy as the store has it now and the caller's groups as the
    /// system has them now.
    @Test func watchRevoked_aStreamEndsOnceThePolicyOrTheGroupsNoLongerAllowIt() throws {
        let office = try UUID(uuidString: id("office"))
        var groups = ["bob", "staff"]
        let recheck = AccessRecheck(caller: bob, settings: settings, action: .status, profileID: office,
                                    lookUp: { uid, gid in Caller(uid: uid, gid: gid, userName: "bob", groupNames: groups) })
        #expect(recheck.check() == nil)
        // Out of the group office's policy names: the stream ends, and says nothing of office's policy.
        groups = ["bob"]
        let e = try #require(recheck.check())
        #expect(e.code == .permissionDenied)
        #expect(e.message == "the stream of 'office' ends: you may no longer see it")
        groups = ["bob", "staff"]
        #expect(recheck.check() == nil)
        // The policy edited meanwhile: named, but status no longer granted.
        setPolicy("office", ["users": ["alice"], "groups": ["staff"], "actions": ["start"]])
        #expect(recheck.check()?.message == "the stream of 'office' ends: user 'bob' may not see the status of 'office': its policy grants only start")
        // Removed: the stream ends.
        #expect(h.run("remove", "office").code == 0)
        #expect(recheck.check()?.code == .configurationUnknown)
        // A stream of everything follows the caller as they are now: an
        // administrator who stops being one sees only what the policies grant.
        var adminGroups = ["dave", "vpnctl"]
        let all = AccessRecheck(caller: Caller(uid: 1004, gid: 1004, userName: "dave", groupNames: adminGroups), settings: settings,
                                action: .status, profileID: nil,
                                lookUp: { uid, gid in Caller(uid: uid, gid: gid, userName: "dave", groupNames: adminGroups) })
        let manager = ProfileManager(store: PreferencesStore(directory: h.configDir))
        try manager.load()
        let privateProfile = try manager.profile(named: "private")
        #expect(all.check() == nil && all.canSee(privateProfile))
        adminGroups = ["dave"]
        #expect(all.check() == nil && !all.canSee(privateProfile))
    }

    /// Issue 29, item 5: one uid cannot take the agent's table: past its
    /// share it is refused, and a full table makes room for another uid
    /// by evicting the oldest connection of the uid holding the most.
    @Test func floodFairShare_aFullTableMakesRoomForAnotherUser() throws {
        var limits = AgentServer.Limits()
        limits.maximumClients = 8
        limits.maximumClientsPerUser = 6
        var lines: [String] = []
        let server = AgentServer(settings: settings, limits: limits, listener: -1, path: nil, log: { lines.append($0) })
        var peers: [Int32: Int32] = [:]
        func connect(_ uid: UInt32) -> Bool {
            let credentials = PeerCredentials(pid: 4242, uid: uid, gid: uid)
            guard server.admit(credentials) else { return false }
            var pair: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            peers[pair[0]] = pair[1]
            server.add(pair[0], credentials)
            return true
        }
        defer {
            for (a, b) in peers { server.clients[a].map(server.forget); close(b); if server.clients[a] == nil { close(a) } }
        }
        #expect((0..<6).allSatisfy { _ in connect(1000) })
        #expect(!connect(1000), "past its share")
        #expect(connect(1001) && connect(1001))
        #expect(server.clients.count == 8)
        // Full: 1002 takes the place of 1000's oldest; 1000 cannot take 1001's.
        let oldest = server.clients.values.filter { $0.credentials.uid == 1000 }.min { $0.serial < $1.serial }!
        let oldestPeer = peers[oldest.fd]!
        peers[oldest.fd] = nil
        #expect(connect(1002))
        #expect(server.clientsByUID[1000] == 5 && !server.clients.values.contains { $0 === oldest })
        var reply = [UInt8](repeating: 0, count: 4096)
        let n = reply.withUnsafeMutableBytes { recv(oldestPeer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        #expect(n > 0 && String(decoding: reply.prefix(max(0, n)), as: UTF8.self).contains("the vpnctl agent is busy"))
        close(oldestPeer)
        #expect(!connect(1000))
        // Root always gets in.
        #expect(connect(0))
        // (at the journal's warning priority)
        #expect(lines.contains { $0.hasPrefix("<4>evicted uid=1000 pid=4242 for uid=1002") })
    }

    /// Requests past a uid's rate are refused, in the client's language, without reading the store.
    @Test func floodFairShare_requestsPastTheRateAreRefused() throws {
        var limits = AgentServer.Limits()
        limits.maximumClientsPerUser = 2
        limits.requestsPerSecondPerUser = 1
        let server = AgentServer(settings: settings, limits: limits, listener: -1, path: nil, log: { _ in })
        func ask(_ uid: UInt32) -> String {
            var pair: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            defer { close(pair[1]) }
            server.handle(AgentServer.Client(fd: pair[0], credentials: PeerCredentials(pid: 1, uid: uid, gid: uid), serial: 0),
                          Array(ServiceRequest(.list).serialized.utf8.dropLast()))
            var reply = [UInt8](repeating: 0, count: 65536)
            let n = reply.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            return String(decoding: reply.prefix(max(0, n)), as: UTF8.self)
        }
        #expect(!ask(1000).contains("too many"))
        #expect(!ask(1000).contains("too many"))
        #expect(ask(1000).contains("too many requests from you: at most 1 a second"))
        #expect(!ask(1001).contains("too many"), "another uid has its own share")
        #expect(!ask(0).contains("too many"), "root is not limited")
    }

    /// Issue 36 item 8: `logs` goes through the agent for a user whose
    /// profile's policy grants status, and reads as absent otherwise.
    @Test func item8_logsThroughTheAgentNeedStatus() throws {
        let id = try #require(try PreferencesStore(directory: h.configDir).load().first { $0.name == "lab" }?.id)
        let runtime = RuntimeStore(directory: h.runDir)
        try runtime.prepare()
        let line = "\(Timestamp.iso8601(Date())) [#] link utun0 up\n"
        FileManager.default.createFile(atPath: runtime.logPath(id), contents: Data(line.utf8))
        let mine = agent("logs", "lab", "--since", "1h", as: bob)
        #expect(mine.code == 0 && mine.stdout == line, "\(mine.stderr)")
        #expect(mine.stdout == h.run("logs", "lab", "--since", "1h").stdout)
        #expect(agent("logs", "lab", as: mallory).code == 9)
        #expect(agent("logs", "private", as: alice).code == 9)
    }
}

/// Issue 32: `show` and the on-demand pause as typed calls, not as a
/// store the user reads (or cannot read) directly.
extension AgentExecutionTests {
    @Test func showThroughTheAgentIsRootsShowWithoutASecret() throws {
        let root = h.run("show", "office", "--json")
        let mine = agent("show", "office", "--json", as: alice)
        #expect(root.code == 0 && mine.code == 0, "\(mine.stderr)")
        #expect(mine.stdout == root.stdout)
        #expect(mine.stdout.contains(#""set":true"#) && mine.stdout.contains(#""publicKey":""#))
        let text = agent("show", "office", as: alice)
        #expect(text.stdout == h.run("show", "office").stdout && text.stdout.contains("(set)"))
        for r in [mine, text] { #expect(!r.stdout.contains("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=")) }
        // The status right is enough; a profile the caller may not see is absent.
        #expect(agent("show", "lab", as: bob).code == 0)
        #expect(agent("show", "office", as: mallory).code == 9)
    }

    @Test func aPauseNeedsTheStopRightAndAResumeTheStartRight() throws {
        let id = try #require(try PreferencesStore(directory: h.configDir).load().first { $0.name == "office" }?.id)
        let pauses = OnDemandPauses(runDirectory: h.runDir)
        let paused = agent("ondemand", "pause", "office", as: alice)
        #expect(paused.code == 0, "\(paused.stderr)")
        #expect(paused.stdout == "on-demand paused for 'office'; the tunnel is left as it is\n")
        #expect(pauses.isPaused(id))
        #expect(h.run("ondemand", "pause", "office").stdout == "on-demand is already paused for 'office'\n")
        // bob may only see lab's status: neither a pause nor a resume.
        #expect(agent("ondemand", "pause", "lab", as: bob).code == 11)
        #expect(agent("ondemand", "resume", "lab", as: bob).code == 11)
        let resumed = agent("ondemand", "resume", "office", "--json", as: alice)
        #expect(resumed.code == 0 && resumed.stdout.contains(#""paused":false"#) && resumed.stdout.contains(#""changed":true"#))
        #expect(!pauses.isPaused(id))
    }
}

/// Issue 29, item 6, the same leak elsewhere: an error made while running a
/// request names no profile the caller may not see.
@Suite struct AgentNamesOnlyVisibleProfilesTests {
    @Test func canNoHiddenSuggestion_aSecondKillSwitchIsRefusedWithoutNamingAHiddenOne() throws {
        let h = Harness()
        let conf = h.fixture("wg/office.conf")
        for name in ["office", "secretlab"] { #expect(h.run("import", conf, "--name", name).code == 0) }
        let manager = ProfileManager(store: PreferencesStore(directory: h.configDir))
        try manager.load()
        var office = try manager.profile(named: "office")
        office.includeAllNetworks = true
        let secret = try manager.profile(named: "secretlab")
        let controller = TunnelController(configDirectory: h.configDir, runDirectory: h.runDir)
        try controller.runtime.prepare()
        var record = RuntimeRecord(id: secret.id, name: secret.name, status: .connected)
        record.killSwitch = KillSwitchRecord(table: "vpnctl_x", netns: NetworkNamespace.current())
        try controller.runtime.write(record)
        var tunnels = TunnelUseCases(store: manager.store, controller: controller, path: nil)
        #expect { try tunnels.refuseSecondKillSwitch(office) } throws: { ($0 as? VPNError)?.message.contains("'secretlab'") == true }
        tunnels.mayName = { $0.name == "office" }
        #expect { try tunnels.refuseSecondKillSwitch(office) } throws: { e in
            guard let e = e as? VPNError else { return false }
            return e.message == "another profile has a kill switch in place; two would block each other's tunnels"
                && !(e.hint ?? "").contains("secretlab")
        }
    }
}

/// The agent's path without its socket, for in-process tests: the request
/// is serialized and parsed as the agent reads it, authorized and run as a
/// worker runs it, and each reply line (events, then the result or error)
/// is serialized and parsed as the client reads it.
enum Loopback {
    final class Relay: ServiceEvents {
        let client: RemoteService
        let events: ServiceEvents
        var enough = false
        init(_ client: RemoteService, _ events: ServiceEvents) { self.client = client; self.events = events }
        func emit(_ event: ServiceEvent) -> Bool {
            guard !enough, let line = try? ServiceReply.line(event: event) else { return false }
            do {
                if case .enough = try client.receive(Array(line.dropLast()), events) { enough = true }
            } catch {
                enough = true
            }
            return !enough
        }
        func isOpen() -> Bool { !enough && events.isOpen() }
        var hangupDescriptor: Int32? { events.hangupDescriptor }
    }

    static func service(caller: Caller, settings: AgentSettings) -> RemoteService {
        let client = RemoteService(socketPath: settings.socketPath, command: "test", language: nil)
        client.transport = { [unowned client] request, events in
            let parsed = try ServiceRequest.parse(Array(request.serialized.utf8.dropLast()))
            let relay = Relay(client, events)
            let outcome = AgentWorker.perform(parsed.call, caller: caller, settings: settings, path: nil, events: relay)
            if relay.enough { return nil }
            guard case .result(let bytes) = try client.receive(Array(outcome.line.dropLast()), events) else { return nil }
            return bytes
        }
        return client
    }
}
