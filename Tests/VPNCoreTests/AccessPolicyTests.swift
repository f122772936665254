import Foundation
import Testing
@testable import VPNCore

@Suite struct AccessPolicyTests {
    let office: Profile = {
        var p = sampleProfile("office")
        p.policy = Policy(users: ["alice"], groups: ["staff"])
        return p
    }()
    let lab: Profile = {
        var p = sampleProfile("lab")
        p.policy = Policy(users: ["carol"], actions: [.status, .start])
        return p
    }()
    let rootOnly = sampleProfile("private")
    let policy = AccessPolicy()

    func user(_ name: String?, uid: UInt32 = 1000, groups: [String] = []) -> Caller {
        Caller(uid: uid, gid: uid, userName: name, groupNames: groups)
    }

    @Test func onlyAdministratorsProbeOffTheTunnel() {
        #expect(policy.mayProbeOffTunnel(Caller(uid: 0, gid: 0, userName: "root", groupNames: ["root"])))
        #expect(policy.mayProbeOffTunnel(user("dave", groups: ["dave", "vpnctl"])))
        // alice may verify office, but her probes go through its tunnel only.
        #expect(policy.decide(user("alice"), .verify, profile: office).allowed)
        #expect(!policy.mayProbeOffTunnel(user("alice", groups: ["staff"])))
    }

    @Test func rootAndAdminsMayDoEverything() {
        let root = Caller(uid: 0, gid: 0, userName: "root", groupNames: ["root"])
        let admin = user("dave", groups: ["dave", "vpnctl"])
        for action in PolicyAction.allCases {
            for p in [office, lab, rootOnly] {
                #expect(policy.decide(root, action, profile: p).allowed)
                #expect(policy.decide(admin, action, profile: p).allowed)
            }
            #expect(policy.decide(admin, action, profile: nil).allowed)
        }
        #expect(policy.decide(admin, .start, profile: rootOnly).reason == "user 'dave' is in the admin group 'vpnctl'")
    }

    @Test func theAdminGroupIsConfigurable() {
        let custom = AccessPolicy(adminGroup: "netadmins")
        #expect(custom.decide(user("dave", groups: ["netadmins"]), .remove, profile: office).allowed)
        #expect(!custom.decide(user("erin", groups: ["vpnctl"]), .start, profile: rootOnly).allowed)
    }

    @Test func storeChangesStayWithRootAndAdmins() {
        let alice = user("alice", groups: ["alice", "staff"])
        for action in PolicyAction.allCases where !action.isTunnelAction {
            let d = policy.decide(alice, action, profile: office)
            #expect(!d.allowed)
            #expect(d.reason == "\(action.rawValue) changes the store: only root and members of group 'vpnctl' may")
        }
    }

    @Test func namedUsersAndGroupMembersMayTakeTunnelActions() {
        let alice = user("alice", groups: ["alice"])
        let bob = user("bob", groups: ["bob", "staff"])
        for action in PolicyAction.tunnelActions {
            #expect(policy.decide(alice, action, profile: office).allowed)
            #expect(policy.decide(bob, action, profile: office).allowed)
        }
        #expect(policy.decide(bob, .toggle, profile: office).reason
                == "user 'bob' may toggle 'office': user 'bob' is in group 'staff', named in its policy")
    }

    @Test func othersAreRefusedWithTheReason() {
        let mallory = user("mallory", groups: ["mallory", "users"])
        let d = policy.decide(mallory, .start, profile: office)
        #expect(!d.allowed)
        #expect(d.reason == "user 'mallory' may not start 'office': its policy allows users alice; groups staff")
        #expect(policy.decide(mallory, .status, profile: rootOnly).reason
                == "user 'mallory' may not see the status of 'private': its policy names nobody (root and group 'vpnctl' only)")
        // A uid without a passwd entry matches no user name.
        #expect(!policy.decide(user(nil, uid: 4242), .start, profile: office).allowed)
        #expect(policy.decide(user(nil, uid: 4242), .start, profile: office).reason.hasPrefix("uid 4242 may not"))
    }

    @Test func allowedForOneProfileIsNotAllowedForAnother() {
        let alice = user("alice", groups: ["alice"])
        #expect(policy.decide(alice, .start, profile: office).allowed)
        #expect(!policy.decide(alice, .start, profile: lab).allowed)
        #expect(!policy.decide(alice, .start, profile: rootOnly).allowed)
    }

    @Test func actionsLimitWhatANamedUserMayDo() {
        let carol = user("carol")
        #expect(policy.decide(carol, .start, profile: lab).allowed)
        #expect(policy.decide(carol, .status, profile: lab).allowed)
        let d = policy.decide(carol, .stop, profile: lab)
        #expect(!d.allowed)
        #expect(d.reason == "user 'carol' may not stop 'lab': its policy grants only status, start")
    }

    @Test func visibilityFollowsAnyGrantedAction() {
        #expect(policy.canSee(user("carol"), lab))
        #expect(!policy.canSee(user("carol"), office))
        #expect(!policy.canSee(user("alice"), rootOnly))
    }

    @Test func denialIsExit11NamingWhoMayGrantIt() {
        let d = policy.decide(user("mallory"), .stop, profile: office)
        let e = policy.denial(d, action: .stop, profile: office)
        #expect(e.code == .permissionDenied)
        #expect(e.code.rawValue == 11)
        #expect(e.message == d.reason)
        #expect(e.remedy == .grant(profile: "office", adminGroup: "vpnctl"))
    }

    @Test func reasonsAreWordedInTheReadersLanguageAndInEnglishForTheLog() throws {
        let vi = try #require(MessageCatalog(bytes: try LocalizationTests.compile("""
            msgid ""
            msgstr ""
            "Content-Type: text/plain; charset=UTF-8\\n"

            #, c-format
            msgid "%1$s may not %2$s: %3$s"
            msgstr "%1$s không được %2$s: %3$s"

            #, c-format
            msgid "user '%1$s'"
            msgstr "người dùng '%1$s'"

            #, c-format
            msgid "stop '%1$s'"
            msgstr "dừng '%1$s'"

            #, c-format
            msgid "its policy allows %1$s"
            msgstr "chính sách của nó cho phép %1$s"

            #, c-format
            msgid "users %1$s"
            msgstr "người dùng %1$s"

            #, c-format
            msgid "groups %1$s"
            msgstr "nhóm %1$s"

            """)))
        let d = policy.decide(user("mallory"), .stop, profile: office)
        let english = "user 'mallory' may not stop 'office': its policy allows users alice; groups staff"
        #expect(d.text(in: vi) == "người dùng 'mallory' không được dừng 'office': chính sách của nó cho phép người dùng alice; nhóm staff")
        #expect(d.text(in: nil) == english)
        // The process speaks English here: the reason and the log's text agree.
        #expect(d.englishReason == english && d.reason == english)
        #expect(d.why == .notNamed(user("mallory"), .stop, profile: "office", policy: office.policy, adminGroup: "vpnctl"))
    }

    @Test func policyActionsRoundTripAndRejectStoreActions() throws {
        var p = sampleProfile("x")
        p.policy = Policy(users: ["alice"], actions: [.start, .stop])
        let text = String(decoding: try JSONEncoder().encode(p), as: UTF8.self)
        #expect(text.contains("\"actions\":[\"start\",\"stop\"]"))
        #expect(try Profile.parse(Array(text.utf8)).policy == p.policy)
        // Absent actions stay absent (every tunnel action).
        let plain = String(decoding: try JSONEncoder().encode(office), as: UTF8.self)
        #expect(!plain.contains("actions"))
        let forged = text.replacingOccurrences(of: "\"actions\":[\"start\",\"stop\"]", with: "\"actions\":[\"remove\"]")
        #expect(throws: JSONDecodeProblem.self) { try Profile.parse(Array(forged.utf8)) }
    }
}
