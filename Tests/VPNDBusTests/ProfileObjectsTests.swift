import Foundation
import Testing
@testable import VPNDBus
import VPNCore

@Suite struct ProfileObjectsTests {
    @Test func aProfilePathCarriesItsIdAndReadsBack() throws {
        let id = try #require(UUID.parse("18380c82-6206-4bf6-b96c-f46ec4d630e7"))
        #expect(ProfileObjects.path(of: id) == "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d630e7")
        #expect(ProfileObjects.id(at: ProfileObjects.path(of: id)) == id)
        for bad in ["/org/vpnctl/VPN1/profile/", "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d630e", "/org/vpnctl/VPN1",
                    "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d630eg", "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d6é",
                    "/org/vpnctl/VPN1/profile/18380c82-6206-4bf6-b96c-f46ec4d630e7"] {
            #expect(ProfileObjects.id(at: bad) == nil, "\(bad)")
        }
    }

    @Test func errorsAreNamedAfterTheStableNames() {
        let e = ProfileObjects.busError(VPNError(.configurationUnknown, "no profile named 'nope'", hint: "vpnctl list shows them"))
        #expect(e.name == "org.vpnctl.VPN1.Error.ConfigurationUnknown")
        #expect(e.message == "no profile named 'nope'\nhint: vpnctl list shows them")
    }

    /// The XML installed under /usr/share/dbus-1/interfaces is what the service answers.
    @Test func theInstalledInterfacesAreTheServedOnes() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let installed = try String(contentsOf: here.appendingPathComponent("dbus/org.vpnctl.VPN1.xml"), encoding: .utf8)
        func interfaces(_ xml: String) -> String {
            let lines = xml.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = lines.firstIndex(where: { $0.hasPrefix("<interface name=\"org.vpnctl.") }),
                  let last = lines.lastIndex(of: "</interface>") else { return "" }
            return lines[first...last].joined(separator: "\n")
        }
        let served = interfaces(Introspection.manager + Introspection.profile)
        #expect(!served.isEmpty && interfaces(installed) == served)
    }

    @Test func valuesHaveTheirSignatures() {
        #expect(BusValue.structure([.uint32(3), .string("connected")]).signature == "(us)")
        #expect(BusValue.array(of: "o", []).signature == "ao")
        #expect(BusValue.dictionary([("a", .bool(true))]).signature == "a{sv}")
        #expect(BusValue.structure([.int32(0), .string(""), .string("")]).signature == "(iss)")
    }
}

@Suite struct BusMessageTests {
    /// Every value type the service sends reads back the same from a message libdbus built.
    @Test func valuesRoundTripThroughAMessage() throws {
        let values: [BusValue] = [
            .string("office"), .objectPath("/org/vpnctl/VPN1"), .bool(true), .int32(-4), .uint32(3), .int64(-5), .uint64(5_000_000_000),
            .structure([.uint32(3), .string("connected")]), .array(of: "o", [.objectPath("/a"), .objectPath("/b")]), .array(of: "s", []),
            .dictionary([("Status", .structure([.uint32(1), .string("disconnected")])), ("Enabled", .bool(false)),
                         ("LastDisconnectError", .structure([.int32(0), .string(""), .string("")]))]),
            .variant(.string("v")),
        ]
        let m = try #require(BusMessage.signal(path: "/org/vpnctl/VPN1", interface: "org.vpnctl.VPN1.Manager", member: "Test", values))
        #expect(m.signature == values.map(\.signature).joined())
        #expect(m.arguments() == values)
    }
}
