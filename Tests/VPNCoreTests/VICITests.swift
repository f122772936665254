import Testing
@testable import VPNCore

@Suite struct VICICodecTests {
    @Test func requestWithoutMessageIsTypeAndName() throws {
        #expect(try VICI.Packet.request("version").encoded() == [0, 0, 0, 9, 0, 7] + Array("version".utf8))
    }

    @Test func messageElementsOnTheWire() throws {
        let m = VICI.Message([
            ("ike", .text("office")),
            ("local_addrs", .texts(["198.18.0.2", "%any"])),
            ("local", .section(VICI.Message([("auth", .text("psk"))]))),
        ])
        let expected: [UInt8] = [3, 3] + Array("ike".utf8) + [0, 6] + Array("office".utf8)
            + [4, 11] + Array("local_addrs".utf8) + [5, 0, 10] + Array("198.18.0.2".utf8) + [5, 0, 4] + Array("%any".utf8) + [6]
            + [1, 5] + Array("local".utf8) + [3, 4] + Array("auth".utf8) + [0, 3] + Array("psk".utf8) + [2]
        #expect(try m.encoded() == expected)
        #expect(try VICI.Message.decode(expected) == m)
    }

    @Test func packetsRoundTrip() throws {
        let m = VICI.Message([("success", .text("yes")), ("empty", .bytes([])), ("nested", .section(VICI.Message([
            ("deeper", .section(VICI.Message([("l", .list([[0, 255], []]))]))),
        ])))])
        for p in [VICI.Packet.request("load-conn", m), VICI.Packet(.cmdResponse, message: m), VICI.Packet(.cmdUnknown),
                  VICI.Packet(.eventRegister, name: "ike-updown"), VICI.Packet(.eventUnregister, name: "ike-updown"),
                  VICI.Packet(.eventConfirm), VICI.Packet(.eventUnknown), VICI.Packet(.event, name: "child-updown", message: m)] {
            let wire = try p.encoded()
            var framer = VICI.Framer()
            framer.feed(Array(wire.prefix(3)))
            #expect(try framer.next() == nil)
            framer.feed(Array(wire.dropFirst(3)))
            let body = try #require(try framer.next())
            #expect(try VICI.Packet.decode(body) == p)
            #expect(try framer.next() == nil)
        }
    }

    @Test func responseFailure() {
        #expect(VICI.Message([("success", .text("yes"))]).failure == nil)
        #expect(VICI.Message([("success", .text("no")), ("errmsg", .text("unknown IKE_SA"))]).failure == "unknown IKE_SA")
        #expect(VICI.Message([]).failure == "charon gave no reason")
    }

    @Test(arguments: [
        ([UInt8](), "empty packet"),
        ([9], "unknown packet type 9"),
        ([0, 5, 0x61], "a name is cut short"),
        ([1, 3, 4, 0x61], "a name is cut short"),
        ([1, 3, 1, 0x61, 0, 5, 0x62], "a value is cut short"),
        ([1, 3, 1, 0x61], "a value length is cut short"),
        ([1, 3, 1, 0x61, 0], "a value length is cut short"),
        ([1, 1, 1, 0x61], "section 'a' has no end"),
        ([1, 2], "a section end without a start"),
        ([1, 4, 1, 0x61, 5, 0, 0], "list 'a' has no end"),
        ([1, 4, 1, 0x61, 3], "element type 3 inside list 'a'"),
        ([1, 5, 0, 0], "a list element outside a list"),
        ([1, 7], "unknown element type 7"),
        ([5, 0], "1 bytes after a eventConfirm packet"),
    ])
    func malformedPacketsAreNamed(bytes: [UInt8], reason: String) {
        #expect(throws: VICI.DecodeError.self) { try VICI.Packet.decode(bytes) }
        do { _ = try VICI.Packet.decode(bytes) } catch let e as VICI.DecodeError { #expect(e.reason == reason) } catch {}
    }

    @Test func nestingIsBounded() {
        var deep: [UInt8] = [1]
        for _ in 0..<100 { deep += [1, 1, 0x73] }
        #expect(throws: VICI.DecodeError.self) { try VICI.Packet.decode(deep) }
    }

    @Test func oversizedValuesAndNamesAreRefused() {
        #expect(throws: VICI.EncodeError.self) { try VICI.Message([("k", .bytes([UInt8](repeating: 0, count: 70000)))]).encoded() }
        #expect(throws: VICI.EncodeError.self) { try VICI.Message([(String(repeating: "n", count: 300), .text(""))]).encoded() }
    }

    @Test func framerRefusesImpossibleLengths() {
        var f = VICI.Framer()
        f.feed([0x7f, 0, 0, 0])
        #expect(throws: VICI.DecodeError.self) { try f.next() }
        var z = VICI.Framer()
        z.feed([0, 0, 0, 0])
        #expect(throws: VICI.DecodeError.self) { try z.next() }
    }
}
