import Foundation
import Testing
import VPNSystem

@Suite struct ProcNetDevTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fixtures/procnetdev")

    func fixture(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: ProcNetDevTests.fixtures.appendingPathComponent(name)))
    }

    @Test func typicalFile() throws {
        let c = try ProcNetDev.parse(try fixture("typical.txt"))
        #expect(c.map(\.name) == ["lo", "eth0", "utun0"])
        #expect(c[1].rxBytes == 13_937_763 && c[1].rxPackets == 524 && c[1].txBytes == 29_421 && c[1].txPackets == 357)
        #expect(c[2].rxErrors == 1 && c[2].rxDropped == 2 && c[2].txErrors == 3 && c[2].txDropped == 4)
    }

    @Test func wideCountersDotsTabsAnd64BitValues() throws {
        let c = try ProcNetDev.parse(try fixture("wide.txt"))
        #expect(c.map(\.name) == ["wlp2s0", "eth0.100", "veth-a.b", "wwan0"])
        #expect(c[0].rxBytes == UInt64.max)
        #expect(c[0].rxPackets == 4_294_967_296)
        #expect(c[0].txBytes == 5_000_000_000)
        #expect(c[2].rxBytes == 123_456_789_012_345)
        #expect(c[3].txBytes == 9 && c[3].txDropped == 12)
    }

    /// The kernel refuses ':' in device names, but the parser must not be the
    /// thing that breaks if one appears: the name ends at the last ':' that
    /// is followed by exactly 16 counters.
    @Test func colonsInANameAndTrailingSpaces() throws {
        let text = "h1\nh2\nweird:name:1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16   \n a:b:c:   7 0 0 0 0 0 0 0 8 0 0 0 0 0 0 0\n"
        let c = try ProcNetDev.parse(Array(text.utf8))
        #expect(c.map(\.name) == ["weird:name", "a:b:c"])
        #expect(c[0].rxBytes == 1 && c[0].txBytes == 9 && c[1].txBytes == 8)
    }

    @Test(arguments: [
        "h1\nh2\n  eth0: 1 2 3\n",                                          // too few fields
        "h1\nh2\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",    // too many
        "h1\nh2\n  eth0: 18446744073709551616 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",  // overflows 64 bits
        "h1\nh2\n  eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",        // no colon
        "h1\nh2\n  : 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",           // no name
        "h1\nh2\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -16\n",      // negative
    ])
    func malformedLinesAreErrorsNotGuesses(text: String) {
        #expect(throws: ProcNetDev.ParseError.self) { try ProcNetDev.parse(Array(text.utf8)) }
    }

    @Test func emptyAndHeaderOnly() throws {
        #expect(try ProcNetDev.parse([]).isEmpty)
        #expect(try ProcNetDev.parse(Array("a\nb\n".utf8)).isEmpty)
    }

    @Test func realFileParses() throws {
        let c = try ProcNetDev.read()
        #expect(c.contains { $0.name == "lo" })
    }

    @Test func classesFromKernelFactsAndNames() {
        let f = InterfaceFacts()
        #expect(f.facts("lo").kind == .loopback)
        #expect(f.facts("lo").ifindex == 1)
        #expect(f.facts("vpnctl-nope0").ifindex == nil)
        #expect(InterfaceFacts.classifyByName("utun3") == .tunnel)
        #expect(InterfaceFacts.classifyByName("wlp2s0") == .wifi)
        #expect(InterfaceFacts.classifyByName("wwan0") == .cellular)
        #expect(InterfaceFacts.classifyByName("enp3s0") == .ethernet)
        #expect(InterfaceFacts.classifyByName("veth12") == .virtual)
        #expect(InterfaceFacts.classifyByName("can0") == .other)
    }
}
