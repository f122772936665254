import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

/// The agent's side of a request, in-process: what it decides and what it
/// prints, against what root sees running the command itself.
@Suite struct AgentExecutionTests {
    let h = Harness()
    var settings: AgentSettings { AgentSettings(configDirectory: h.configDir, runDirectory: h.runDir, adminGroup: "vpnctl") }
    let alice = Caller(uid: 1001, gid: 1001, userName: "alice", groupNames: ["alice"])
    let bob = Caller(uid: 1002, gid: 1002, userName: "bob", groupNames: ["bob", "staff"])
    let mallory = Caller(uid: 1003, gid: 1003, userName: "mallory", groupNames: ["mallory"])

    init() throws {
        let conf = h.fixture("wg/office.conf")
        for name in ["office", "lab", "private"] {
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

    func agent(_ request: AgentRequest, as caller: Caller) -> Harness.Result {
        let out = BufferSink(), err = BufferSink()
        let code: Int32
        do {
            let (authorized, _) = try AgentExecution.authorize(request, caller: caller, settings: settings)
            code = AgentExecution.run(authorized, caller: caller, settings: settings, path: nil, stdout: out, stderr: err)
        } catch {
            code = AgentExecution.render(error, request, stdout: out, stderr: err)
        }
        return Harness.Result(code: code, stdout: out.text, stderr: err.text)
    }

    @Test func aUserSeesWhatRootSeesOfTheirProfile() {
        let root = h.run("status", "office", "--json")
        let mine = agent(AgentRequest(verb: .status, profile: "office", flags: ["json"]), as: alice)
        #expect(mine.code == 0 && root.code == 0)
        #expect(mine.stdout == root.stdout)
        #expect(mine.stderr == root.stderr)
        // Listing everything, a user gets only theirs: the same bytes as root asking for that one.
        #expect(agent(AgentRequest(verb: .status, flags: ["json"]), as: alice).stdout == root.stdout)
        let text = agent(AgentRequest(verb: .status), as: bob).stdout
        #expect(text.contains("office") && text.contains("lab") && !text.contains("private"))
        let list = agent(AgentRequest(verb: .list), as: mallory)
        #expect(list.code == 0 && list.stdout.isEmpty)
        #expect(list.stderr == "no profiles for you: none names you or a group of yours in its policy\n")
    }

    @Test func refusalsAreExit11NamingProfilePolicyAndWhoGrants() {
        let r = agent(AgentRequest(verb: .start, profile: "office"), as: mallory)
        #expect(r.code == 11)
        #expect(r.stderr == """
            vpnctl: user 'mallory' may not start 'office': its policy allows users alice; groups staff
            hint: root or a member of group 'vpnctl' can grant it in the profile's policy: vpnctl edit office

            """)
        let lab = agent(AgentRequest(verb: .stop, profile: "lab", flags: ["json"]), as: bob)
        #expect(lab.code == 11)
        #expect(jsonObject(lab.stdout)["error"].flatMap { ($0 as? [String: Any])?["name"] as? String } == "permissionDenied")
        #expect(agent(AgentRequest(verb: .isConnected, profile: "private"), as: alice).code == 11)
        // Root and the admin group are never refused.
        let admin = Caller(uid: 1004, gid: 1004, userName: "dave", groupNames: ["dave", "vpnctl"])
        #expect(agent(AgentRequest(verb: .isConnected, profile: "private"), as: admin).code == 12)
    }

    @Test func authorizationNamesTheProfileByItsUUID() throws {
        let (authorized, decision) = try AgentExecution.authorize(AgentRequest(verb: .stop, profile: "office"), caller: bob, settings: settings)
        #expect(UUID(uuidString: authorized.profile ?? "") != nil)
        #expect(decision?.reason == "user 'bob' may stop 'office': user 'bob' is in group 'staff', named in its policy")
    }

    /// The agent logs a refusal from the decision (English), not from the
    /// error the client reads (in the client's language).
    @Test func aRefusalCarriesItsDecisionForTheLog() {
        #expect {
            try AgentExecution.authorize(AgentRequest(verb: .start, profile: "office"), caller: mallory, settings: settings)
        } throws: { error in
            guard let d = error as? AgentExecution.Denial else { return false }
            return d.error.code == .permissionDenied && !d.decision.allowed
                && d.decision.englishReason == "user 'mallory' may not start 'office': its policy allows users alice; groups staff"
        }
    }

    @Test func canAnswersForTheCallerNotForTheAgent() {
        let yes = agent(AgentRequest(verb: .can, profile: "office", canAction: .toggle), as: alice)
        #expect(yes.code == 0 && yes.stdout == "allowed: user 'alice' may toggle 'office': user 'alice' is named in its policy\n")
        let no = agent(AgentRequest(verb: .can, profile: "office", canAction: .remove, flags: ["json"]), as: alice)
        #expect(no.code == 11)
        #expect(jsonObject(no.stdout)["allowed"] as? Bool == false)
        #expect(jsonObject(no.stdout)["reason"] as? String == "remove changes the store: only root and members of group 'vpnctl' may")
    }

    @Test func quickReadsRunInTheLoopAndWaitsInWorkers() {
        #expect(AgentExecution.runsInline(AgentRequest(verb: .status)))
        #expect(!AgentExecution.runsInline(AgentRequest(verb: .status, flags: ["watch"])))
        #expect(!AgentExecution.runsInline(AgentRequest(verb: .start, profile: "x")))
        #expect(AgentExecution.runsInline(AgentRequest(verb: .can, profile: "x", canAction: .start)))
    }
}
