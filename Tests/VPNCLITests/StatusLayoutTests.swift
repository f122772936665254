import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// `status` at a terminal: relative times, colours, and no line wider than the terminal.
@Suite struct StatusLayoutTests {
    /// A profile whose last run ended in an error. (Relative times need a
    /// live tunnel: the lab checks them.)
    func failedOffice() throws -> Harness {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        let id = try #require(UUID(uuidString: (jsonObject(h.run("show", "office", "--json").stdout)["profile"] as? [String: Any])?["id"] as? String ?? ""))
        var record = RuntimeRecord(id: id, name: "office", status: .disconnected)
        record.lastDisconnectError = ConnectionError(.serverNotResponding,
            "no handshake with the peer 198.18.0.1:51820 within 20 s; the server did not answer, or it does not know this client's public key")
        try FileManager.default.createDirectory(atPath: h.runDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try RuntimeStore(directory: h.runDir).write(record)
        return h
    }

    @Test func pipesKeepTheFullMachineReadableTable() throws {
        let h = try failedOffice()
        let r = h.run("status")
        #expect(r.stdout.contains("serverNotResponding: no handshake with the peer 198.18.0.1:51820 within 20 s; the server did not answer, or it does not know this client's public key"))
        #expect(!r.stdout.contains("\u{1B}["))
    }

    @Test func aTerminalGetsRelativeTimesColourAndFittedLines() throws {
        let h = try failedOffice()
        h.stdoutColumns = 80
        h.environment["NO_COLOR"] = nil
        let r = h.run("status", "--color", "always")
        #expect(r.code == 0)
        let lines = r.stdout.split(separator: "\n").map { $0.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression) }
        #expect(lines.count == 2, "\(r.stdout)")
        for line in lines { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        #expect(lines.last?.hasSuffix("…") == true, "\(lines)")
        #expect(r.stdout.contains("\u{1B}[31mdisconnected\u{1B}[0m"))
        #expect(r.stdout.contains("\u{1B}[31mserverNotResponding: "))

        #expect(!h.run("status", "--color", "never").stdout.contains("\u{1B}["))

        h.stdoutColumns = 30
        let narrow = h.run("status", "--color", "never")
        for line in narrow.stdout.split(separator: "\n") { #expect(line.count <= 30, "\(line)") }
    }

    @Test func relativeTimes() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(Timestamp.ago(now, now: now) == "just now")
        #expect(Timestamp.ago(now.addingTimeInterval(-42), now: now) == "42 s ago")
        #expect(Timestamp.ago(now.addingTimeInterval(-180), now: now) == "3 min ago")
        #expect(Timestamp.ago(now.addingTimeInterval(-7200), now: now) == "2 h ago")
        #expect(Timestamp.ago(now.addingTimeInterval(-7500), now: now) == "2 h 5 min ago")
        #expect(Timestamp.ago(now.addingTimeInterval(-86400 * 4), now: now) == "4 days ago")
    }
}

/// JSON: indented for a person at a terminal, compact in a pipe, the same value either way.
@Suite struct JSONLayoutTests {
    @Test func indentedAtATerminalCompactInAPipe() throws {
        let h = Harness()
        h.run("import", h.fixture("wg/office.conf"))
        for args in [["list", "--json"], ["status", "--json"], ["show", "office", "--json"], ["is-connected", "office", "--json"]] {
            h.stdoutColumns = nil
            let pipe = h.run(args).stdout
            h.stdoutColumns = 80
            let terminal = h.run(args).stdout
            #expect(pipe.split(separator: "\n").count == 1, "\(args)")
            #expect(terminal.contains("\n  \""), "\(args): \(terminal)")
            let a = try JSONSerialization.jsonObject(with: Data(pipe.utf8)) as? NSDictionary
            let b = try JSONSerialization.jsonObject(with: Data(terminal.utf8)) as? NSDictionary
            #expect(a == b, "\(args)")
        }
    }

    @Test func indentationKeepsStringsAndEmptyContainers() {
        #expect(Output.indented(#"{"a":[],"b":{},"c":"x, {y}: \"z\"","d":[1,2]}"#) == """
            {
              "a": [],
              "b": {},
              "c": "x, {y}: \\"z\\"",
              "d": [
                1,
                2
              ]
            }
            """)
    }
}

/// Every JSON object a command prints has its keys in sorted order.
@Suite struct JSONKeyOrderTests {
    /// Whether every object in `text` has its keys written in sorted order.
    static func objectsKeepSortedKeys(_ text: String) throws -> Bool {
        let value = try JSONSyntax.parse(Array(text.utf8))
        func sorted(_ v: JSONValue) -> Bool {
            switch v {
            case .object(let o):
                let keys = o.members.map(\.key)
                return keys == keys.sorted() && o.members.allSatisfy { sorted($0.value) }
            case .array(let items): return items.allSatisfy(sorted)
            default: return true
            }
        }
        return sorted(value)
    }

    @Test func everyCommandSortsItsKeys() throws {
        let h = Harness()
        h.environment = ["VPNCTL_PROC_NET_DEV": h.fixture("procnetdev/wide.txt")]
        h.run("import", h.fixture("wg/office.conf"))
        for args in [["list"], ["status"], ["show", "office"], ["stats", "--all"], ["secret", "list", "office"],
                     ["is-connected", "office"], ["version"], ["show", "nope"]] {
            let out = h.run(args + ["--json"]).stdout
            #expect(try Self.objectsKeepSortedKeys(out), "\(args): \(out.prefix(300))")
        }
    }
}
