import Foundation
import Testing
@testable import VPNSystem

@Suite(.serialized) struct UserDatabaseTests {
    @Test func namesAndGroupsComeFromTheFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vpnctl-udb-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let passwd = dir.appendingPathComponent("passwd"), group = dir.appendingPathComponent("group")
        try """
        root:x:0:0:root:/root:/bin/bash
        # a comment
        alice:x:1001:1001::/home/alice:/bin/sh
        alice2:x:1001:1001::/home/alice:/bin/sh
        bob:x:1002:100::/home/bob:/bin/sh
        broken line
        """.write(to: passwd, atomically: true, encoding: .utf8)
        try """
        root:x:0:
        users:x:100:
        alice:x:1001:
        staff:x:50:bob,alice
        vpnctl:x:60:carol,bobby
        empty:x:70:
        """.write(to: group, atomically: true, encoding: .utf8)
        let (oldP, oldG) = (UserDatabase.passwdPath, UserDatabase.groupPath)
        UserDatabase.passwdPath = passwd.path
        UserDatabase.groupPath = group.path
        defer { UserDatabase.passwdPath = oldP; UserDatabase.groupPath = oldG }
        #expect(UserDatabase.userName(1001) == "alice")
        #expect(UserDatabase.userName(4242) == nil)
        #expect(UserDatabase.groupName(50) == "staff")
        #expect(UserDatabase.groupNames(uid: 1001, gid: 1001, userName: "alice") == ["alice", "staff"])
        // "bob" is not "bobby": members match whole names.
        #expect(UserDatabase.groupNames(uid: 1002, gid: 100, userName: "bob") == ["users", "staff"])
        #expect(UserDatabase.groupNames(uid: 4242, gid: 70, userName: nil) == ["empty"])
    }
}
