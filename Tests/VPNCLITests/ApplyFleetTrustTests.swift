import Foundation
import Testing
@testable import VPNCLI
@testable import VPNCore

/// Issue 29 items 12 and 14, through `vpnctl apply` and `vpnctl import` in process.
@Suite struct ApplyFleetTrustTests {
    /// A harness with a fleet directory holding one good wg-quick file.
    func fleet() throws -> (Harness, String) {
        let h = Harness()
        let dir = h.root + "/fleet"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(chmod(dir, 0o755) == 0)
        let office = try String(contentsOfFile: h.fixture("wg/office.conf"), encoding: .utf8)
        try office.write(toFile: dir + "/office.conf", atomically: true, encoding: .utf8)
        #expect(chmod(dir + "/office.conf", 0o644) == 0)
        return (h, dir)
    }

    func nothingApplied(_ h: Harness) -> Bool {
        !h.run("list").stdout.contains("office")
    }

    /// Issue 29 item 14: the fleet directory and each file in it are held to
    /// the config dir's rules; before, a 0666 file, a symlinked file or
    /// directory (and, as root, a file another user owns) became managed profiles.
    @Test func item14_applyRefusesWhatTheConfigDirWouldRefuseNamingThePathAndTheFix() throws {
        do {
            let (h, dir) = try fleet()
            #expect(chmod(dir + "/office.conf", 0o666) == 0)
            let r = h.run("apply", dir)
            #expect(r.code == 11, "\(r.stderr)")
            #expect(r.stderr.contains("apply changed nothing: \(dir)/office.conf is writable by group or others (mode 666)"), "\(r.stderr)")
            #expect(r.stderr.contains("hint: chmod go-w \(dir)/office.conf"), "\(r.stderr)")
            // Given by itself, the same.
            #expect(h.run("apply", dir + "/office.conf").code == 11)
            #expect(nothingApplied(h))
        }
        do {
            let (h, dir) = try fleet()
            #expect(chmod(dir, 0o777) == 0)
            let r = h.run("apply", dir)
            #expect(r.code == 11, "\(r.stderr)")
            #expect(r.stderr.contains("\(dir) is writable by group or others (mode 777)"), "\(r.stderr)")
            #expect(nothingApplied(h))
        }
        do {
            let (h, dir) = try fleet()
            try FileManager.default.moveItem(atPath: dir + "/office.conf", toPath: h.root + "/office.conf")
            try FileManager.default.createSymbolicLink(atPath: dir + "/office.conf", withDestinationPath: h.root + "/office.conf")
            let r = h.run("apply", dir)
            #expect(r.code == 11, "\(r.stderr)")
            #expect(r.stderr.contains("\(dir)/office.conf is a symlink; apply reads only real files and directories"), "\(r.stderr)")
            #expect(h.run("apply", dir + "/office.conf").code == 11)
            #expect(nothingApplied(h))
        }
        do {
            let (h, dir) = try fleet()
            try FileManager.default.createSymbolicLink(atPath: h.root + "/fleet.d", withDestinationPath: dir)
            for spelled in [h.root + "/fleet.d", h.root + "/fleet.d/", h.root + "/fleet.d/."] {
                let r = h.run("apply", spelled)
                #expect(r.code == 11, "\(spelled): \(r.stderr)")
                #expect(r.stderr.contains("\(h.root)/fleet.d is a symlink"), "\(r.stderr)")
            }
            #expect(nothingApplied(h))
            // The directory itself, as the rules ask: applied.
            let ok = h.run("apply", dir)
            #expect(ok.code == 0, "\(ok.stderr)")
            #expect(ok.stdout.contains("created 'office' (wireguard)"))
        }
        if geteuid() == 0 {
            let (h, dir) = try fleet()
            #expect(chown(dir + "/office.conf", 65534, 65534) == 0)
            let r = h.run("apply", dir)
            #expect(r.code == 11, "\(r.stderr)")
            #expect(r.stderr.contains("\(dir)/office.conf is owned by uid 65534"), "\(r.stderr)")
            #expect(r.stderr.contains("hint: chown root:root \(dir)/office.conf"), "\(r.stderr)")
            #expect(nothingApplied(h))
        }
    }

    /// Every untrusted path is named at once, each with its fix.
    @Test func item14_everyUntrustedFileIsNamed() throws {
        let (h, dir) = try fleet()
        let office = try String(contentsOfFile: dir + "/office.conf", encoding: .utf8)
        try office.write(toFile: dir + "/branch.conf", atomically: true, encoding: .utf8)
        #expect(chmod(dir + "/office.conf", 0o664) == 0)
        #expect(chmod(dir + "/branch.conf", 0o646) == 0)
        let r = h.run("apply", dir)
        #expect(r.code == 11, "\(r.stderr)")
        #expect(r.stderr.contains("apply changed nothing: 2 paths may not be applied"), "\(r.stderr)")
        #expect(r.stderr.contains("\(dir)/branch.conf is writable by group or others (mode 646)"), "\(r.stderr)")
        #expect(r.stderr.contains("fix: chmod go-w \(dir)/office.conf"), "\(r.stderr)")
        #expect(nothingApplied(h))
    }

    /// Issue 29 item 12: a binary profile with an 8-byte reference of 2^63
    /// killed vpnctl (exit 132); import and apply refuse it, exit 5, naming the offset.
    @Test func item12_importAndApplyRefuseAHugeObjectReference() throws {
        let (h, dir) = try fleet()
        // bplist00; object 0 at 8: an array of one 8-byte reference, 2^63; the
        // offset table at 17; the trailer: 1-byte offsets, 8-byte references, 1 object.
        func be(_ v: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        let bytes = Array("bplist00".utf8) + [0xA1] + be(1 << 63) + [8] + [0, 0, 0, 0, 0, 0, 1, 8] + be(1) + be(0) + be(17)
        let file = dir + "/huge.mobileconfig"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
        #expect(chmod(file, 0o644) == 0)
        let imported = h.run("import", file)
        #expect(imported.code == 5, "\(imported.stderr)")
        #expect(imported.stderr.contains("reference to object 9223372036854775808 at offset 9"), "\(imported.stderr)")
        let applied = h.run("apply", dir)
        #expect(applied.code == 5, "\(applied.stderr)")
        #expect(applied.stderr.contains("apply changed nothing: 1 file cannot be imported"), "\(applied.stderr)")
        #expect(applied.stderr.contains("reference to object 9223372036854775808 at offset 9"), "\(applied.stderr)")
        #expect(nothingApplied(h))
    }
}
