import Foundation
import Testing
@testable import VPNCore

@Suite struct PropertyListTests {
    static let sample = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <!-- a comment -->
    <dict>
        <key>Name</key><string>caf&#xE9; &amp; &lt;bar&gt; <![CDATA[<raw>]]></string>
        <key>Count</key><integer>-42</integer>
        <key>Hex</key><integer>0x1F</integer>
        <key>Ratio</key><real>1.5</real>
        <key>On</key><true/>
        <key>Off</key><false></false>
        <key>When</key><date>2024-02-29T12:34:56Z</date>
        <key>Blob</key><data>
            AAEC
            /w==
        </data>
        <key>List</key><array><string/><integer>1</integer><array/><dict/></array>
    </dict>
    </plist>
    """

    @Test func readsEveryXMLKind() throws {
        let v = try PropertyList.parse(Array(Self.sample.utf8))
        let d = try #require(v.dict)
        #expect(d["Name"] == .string("café & <bar> <raw>"))
        #expect(d["Count"] == .integer(-42))
        #expect(d["Hex"] == .integer(31))
        #expect(d["Ratio"] == .real(1.5))
        #expect(d["On"] == .bool(true))
        #expect(d["Off"] == .bool(false))
        #expect(d["Blob"] == .data([0, 1, 2, 255]))
        #expect(d["List"] == .array([.string(""), .integer(1), .array([]), .dict([:])]))
        // 2024-02-29T12:34:56Z is 1709210096 s after 1970; 2001 is 978307200.
        #expect(d["When"] == .date(1_709_210_096 - 978_307_200))
    }

    @Test func xmlAndBinaryWritersRoundTrip() throws {
        let v = try PropertyList.parse(Array(Self.sample.utf8))
        #expect(try PropertyList.parse(Array(v.xmlDocument().utf8)) == v)
        #expect(try PropertyList.parse(v.binaryDocument()) == v)
        let unicode = PropertyList.dict(["k": .string("ünï 🔑 \u{1F600}"), "n": .integer(Int64.min), "big": .data(Array(repeating: 7, count: 300))])
        #expect(try PropertyList.parse(unicode.binaryDocument()) == unicode)
        #expect(try PropertyList.parse(Array(unicode.xmlDocument().utf8)) == unicode)
    }

    @Test func datesFormatAndParseBothWays() {
        for s in ["2001-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "2038-01-19T03:14:08Z", "2400-02-29T00:00:00Z"] {
            let t = PlistDate.parse(s)
            #expect(t != nil)
            #expect(PlistDate.format(t!) == s)
        }
        #expect(PlistDate.parse("2001-01-01T00:00:00Z") == 0)
        #expect(PlistDate.parse("2001-13-01T00:00:00Z") == nil)
        #expect(PlistDate.parse("2001-01-01 00:00:00") == nil)
    }

    /// A binary plist written by Python's plistlib (Apple's layout: 1-byte
    /// offsets and references, packed integers, an ASCII and a UTF-16 string).
    @Test func readsAForeignBinaryPlist() throws {
        // plistlib.dumps({"A": 1, "B": [True, "é"], "C": 2.5}, fmt=FMT_BINARY)
        let hex = "62706c6973743030d30102030405085141514251431001a20607096100e9234004000000000000080f111315171a1b1e0000000000000101000000000000000900000000000000000000000000000027"
        let bytes = try #require(Self.bytes(hex))
        let v = try PropertyList.parse(bytes)
        #expect(v == .dict(["A": .integer(1), "B": .array([.bool(true), .string("é")]), "C": .real(2.5)]))
    }

    static func bytes(_ hex: String) -> [UInt8]? {
        let h = Array(hex.filter { !$0.isWhitespace })
        guard h.count % 2 == 0 else { return nil }
        return stride(from: 0, to: h.count, by: 2).map { UInt8(String(h[$0...$0 + 1]), radix: 16)! }
    }

    /// A hand-built bplist: objects at the given offsets, 1-byte refs and offsets.
    static func bplist(_ objects: [[UInt8]], top: UInt8 = 0, count: UInt64? = nil, refSize: UInt8 = 1,
                       tableOffset: UInt64? = nil, offsets: [UInt8]? = nil) -> [UInt8] {
        var out = Array("bplist00".utf8)
        var offs: [UInt8] = []
        for o in objects { offs.append(UInt8(out.count)); out += o }
        let table = out.count
        out += offsets ?? offs
        func be(_ v: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
        out += [0, 0, 0, 0, 0, 0, 1, refSize] + be(count ?? UInt64(objects.count)) + be(UInt64(top)) + be(tableOffset ?? UInt64(table))
        return out
    }

    @Test func hostileBinaryPlistsAreRefusedByName() {
        let cases: [(String, [UInt8])] = [
            ("contains itself", Self.bplist([[0xA1, 0x00]])),                                     // array whose element is itself
            ("contains itself", Self.bplist([[0xA1, 0x01], [0xD1, 0x02, 0x00], [0x51, 0x41]])),   // array -> dict -> array
            ("reference to object 9", Self.bplist([[0xA1, 0x09]])),
            ("outside the object area", Self.bplist([[0x09]], offsets: [0xF0])),
            ("object count", Self.bplist([[0x09]], count: 1 << 40)),
            ("offset table", Self.bplist([[0x09]], tableOffset: 1 << 60)),
            ("larger than the file", Self.bplist([[0x5F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])), // huge string length
            ("runs past", Self.bplist([[0x4E, 0x00]])),                                           // data of 14 with 1 byte
            ("runs past", Self.bplist([[0xAF, 0x10, 0x20, 0x00]])),                               // array of 32 refs, 1 there
            ("UID", Self.bplist([[0x80, 0x01]])),
            ("null or fill", Self.bplist([[0x00]])),
            ("not a string", Self.bplist([[0xD1, 0x01, 0x01], [0x10, 0x05]])),
            ("unpaired surrogate", Self.bplist([[0x61, 0xD8, 0x00]])),
            ("unknown marker", Self.bplist([[0xF0]])),
            ("outside the years", Self.bplist([[0x33, 0x43, 0x30, 0, 0, 0, 0, 0, 0]])),            // year ~142 million (found by the fuzzer)
            ("outside the years", Self.bplist([[0x33, 0x7F, 0xF8, 0, 0, 0, 0, 0, 0]])),            // NaN
            ("too short", Array("bplist00".utf8) + [0x09]),
            ("version", Array("bplist15".utf8) + Array(repeating: 0, count: 40)),
            ("top object", Self.bplist([[0x09]], top: 3)),
            ("offset size", { var b = Self.bplist([[0x09]]); b[b.count - 26] = 0; return b }()),
        ]
        for (expected, bytes) in cases {
            do {
                let v = try PropertyList.parse(bytes)
                Issue.record("accepted \(expected): \(v)")
            } catch let p as PropertyList.Problem {
                #expect(p.message.contains(expected), "\(p.message) should say \(expected)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    /// Issue 29 item 12: a reference is 1 to 8 bytes wide, and one of 2^63 or
    /// more trapped converting to Int (vpnctl died with SIGILL, exit 132).
    /// Every width is range-checked as read, and the refusal names the offset.
    @Test func item12_objectReferencesOfEveryWidthAreRangeCheckedWithTheirOffset() throws {
        let big: [UInt8] = [0x80, 0, 0, 0, 0, 0, 0, 0]  // 2^63
        let cases: [(String, [UInt8])] = [
            ("object 0: reference to object 9223372036854775808 at offset 9", Self.bplist([[0xA1] + big], refSize: 8)),
            ("reference to object 18446744073709551615 at offset 9",
             Self.bplist([[0xD1] + Array(repeating: 0xFF, count: 8) + [0, 0, 0, 0, 0, 0, 0, 1], [0x09]], refSize: 8)),   // a key
            ("reference to object 9223372036854775808 at offset 17",
             Self.bplist([[0xD1, 0, 0, 0, 0, 0, 0, 0, 1] + big, [0x51, 0x41]], refSize: 8)),                             // a value
            ("reference to object 258 at offset 11", Self.bplist([[0xA2, 0x00, 0x01, 0x01, 0x02], [0x09]], refSize: 2)),
            ("reference to object 2 at offset 10, but the objects are numbered 0 to 1", Self.bplist([[0xA2, 0x01, 0x02], [0x09]])),
        ]
        for (expected, bytes) in cases {
            do {
                let v = try PropertyList.parse(bytes)
                Issue.record("accepted \(expected): \(v)")
            } catch let p as PropertyList.Problem {
                #expect(p.message.contains(expected), "\(p.message) should say \(expected)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        // In range at 8 bytes: read.
        #expect(try PropertyList.parse(Self.bplist([[0xA1, 0, 0, 0, 0, 0, 0, 0, 1], [0x09]], refSize: 8)) == .array([.bool(true)]))
    }

    @Test func sharedObjectsCannotExpandWithoutBound() throws {
        // Object k is an array holding object k+1 twice: 2^40 leaves from ~130 bytes.
        var objects: [[UInt8]] = []
        for k in 0..<40 { objects.append([0xA2, UInt8(k + 1), UInt8(k + 1)]) }
        objects.append([0x09])
        let e = #expect(throws: PropertyList.Problem.self) { try PropertyList.parse(Self.bplist(objects)) }
        #expect(e?.message.contains("more than 200000 values") == true)
    }

    @Test func deepNestingIsRefused() {
        let deepXML = "<plist>" + String(repeating: "<array>", count: 100) + String(repeating: "</array>", count: 100) + "</plist>"
        let e1 = #expect(throws: PropertyList.Problem.self) { try PropertyList.parse(Array(deepXML.utf8)) }
        #expect(e1?.message.contains("nested more than 64 deep") == true)
        var objects: [[UInt8]] = []
        for k in 0..<100 { objects.append([0xA1, UInt8(k + 1)]) }
        objects.append([0x09])
        let e2 = #expect(throws: PropertyList.Problem.self) { try PropertyList.parse(Self.bplist(objects)) }
        #expect(e2?.message.contains("nested more than 64 deep") == true)
    }

    @Test func malformedXMLIsRefusedWithLineAndColumn() {
        let cases: [(String, String)] = [
            ("<plist><dict><key>a</key></dict></plist>", "has no value"),
            ("<plist><dict><string>x</string></dict></plist>", "where a <key> was expected"),
            ("<plist><integer>12x</integer></plist>", "not a 64-bit integer"),
            ("<plist><integer>99999999999999999999</integer></plist>", "not a 64-bit integer"),
            ("<plist><string>a &foo; b</string></plist>", "&foo; is not one XML defines"),
            ("<!DOCTYPE plist [<!ENTITY x \"y\">]><plist><string>&x;</string></plist>", "internal subset"),
            ("<plist><data>!!!</data></plist>", "not valid base64"),
            ("<plist><date>yesterday</date></plist>", "not YYYY-MM-DDTHH:MM:SSZ"),
            ("<plist><dict><key>a</key><true/><key>a</key><false/></dict></plist>", "appears twice"),
            ("<plist><string>open", "never closed"),
            ("<plist><blink/></plist>", "unknown element <blink>"),
            ("<plist><true/></plist>trailing", "after </plist>"),
            ("<html></html>", "expected <plist>"),
            ("<plist>\n  <string>a<b>c</b></string></plist>", "line 2"),
        ]
        for (xml, expected) in cases {
            do {
                let v = try PropertyList.parse(Array(xml.utf8))
                Issue.record("accepted \(xml): \(v)")
            } catch let p as PropertyList.Problem {
                #expect(p.message.contains(expected), "\(p.message) should say \(expected)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        let utf16 = [UInt8(0xFF), 0xFE] + Array("<plist/>".utf8)
        #expect(throws: PropertyList.Problem.self) { try PropertyList.parse(utf16) }
    }
}
