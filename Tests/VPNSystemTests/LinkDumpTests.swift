import Testing
@testable import VPNSystem

@Suite struct LinkDumpTests {
    @Test func theDumpHasLoopbackWithItsCounters() throws {
        let links = try LinkDump.all()
        let lo = try #require(links.first { $0.name == "lo" })
        #expect(lo.ifindex == 1 && lo.type == 772 && lo.counters?.name == "lo")
        #expect(Set(links.map(\.name)).count == links.count)
        let withoutCounters = try LinkDump.all(counters: false)
        #expect(withoutCounters.allSatisfy { $0.counters == nil } && withoutCounters.count == links.count)
    }

    @Test func oneLinkByName() throws {
        #expect(try LinkDump.link(named: "lo")?.ifindex == 1)
        #expect(try LinkDump.link(named: "vpnctl-nope0") == nil)
        #expect(try LinkDump.link(named: String(repeating: "x", count: 40)) == nil)
    }

    /// An RTM_NEWLINK built by hand: IFLA_IFNAME, IFLA_LINKINFO/IFLA_INFO_KIND
    /// and IFLA_STATS64 at an offset that is not 8-aligned.
    @Test func aMessageParsesInPlace() {
        var m = NetlinkMessage(type: 16, flags: 2)
        var info = [UInt8](repeating: 0, count: 16)
        info[2] = 1       // ARPHRD_ETHER
        info[4] = 42      // ifindex
        info[8] = 1       // IFF_UP
        m.append(bytes: info)
        m.appendAttribute(3, bytes: Array("veth7".utf8) + [0])
        m.appendAttribute(18, bytes: { var n = NetlinkMessage(type: 0, flags: 0); n.bytes = []
                                       n.appendAttribute(1, bytes: Array("veth".utf8) + [0]); return n.bytes }())
        var stats: [UInt8] = []
        for i in 0..<24 { stats += withUnsafeBytes(of: UInt64(i == 2 ? UInt64.max : UInt64(i)).littleEndian) { Array($0) } }
        m.appendAttribute(23, bytes: stats)
        let bytes = m.finished()
        let link = bytes.withUnsafeBytes { LinkDump.parseLink($0) }
        #expect(link?.name == "veth7" && link?.ifindex == 42 && link?.type == 1 && link?.kind == "veth" && link?.flags == 1)
        let c = link?.counters
        #expect(c == InterfaceCounters(name: "veth7", rxBytes: .max, rxPackets: 0, rxErrors: 4, rxDropped: 6 + 15,
                                       txBytes: 3, txPackets: 1, txErrors: 5, txDropped: 7))
        #expect(bytes.dropLast(10).withUnsafeBytes { LinkDump.parseLink($0) }?.counters == nil)
        #expect(Array(bytes.prefix(20)).withUnsafeBytes { LinkDump.parseLink($0) } == nil)
    }

    @Test(arguments: [
        (UInt16(65534), Optional("tun"), [String](), InterfaceClass.tunnel),
        (1, "tun", [], .tunnel),                       // tap
        (1, "ifb", [], .virtual),
        (1, "veth", ["veth0/device"], .virtual),
        (1, nil, [], .virtual),                        // no kind, no device
        (1, nil, ["x/device"], .ethernet),
        (1, nil, ["x/device", "x/phy80211"], .wifi),
        (1, nil, ["x/device", "x/tun_flags"], .tunnel),
        (772, nil, [], .loopback),
        (280, nil, [], .other),
    ])
    func classes(type: UInt16, kind: String?, present: [String], expected: InterfaceClass) {
        let probe = InterfaceFacts.SysfsProbe(exists: { present.contains($0) }, uevent: { _ in nil })
        #expect(InterfaceFacts.classify(LinkRecord(name: "x", ifindex: 1, type: type, kind: kind), sysfs: probe) == expected)
    }

    @Test func aModemIsCellular() {
        let probe = InterfaceFacts.SysfsProbe(exists: { $0 == "x/device" }, uevent: { _ in "DEVTYPE=wwan\n" })
        #expect(InterfaceFacts.classify(LinkRecord(name: "x", ifindex: 1, type: 1), sysfs: probe) == .cellular)
    }
}
