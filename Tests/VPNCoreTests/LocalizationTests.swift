import Foundation
import Testing
@testable import VPNCore

/// The .mo reader, the marking of messages and the choice of language.
/// Nothing here changes the process's language: in-process tests run side
/// by side, and every other one expects English.
@Suite struct LocalizationTests {
    /// A .mo compiled by msgfmt from `po` (gettext is in the build packages).
    static func compile(_ po: String, bigEndian: Bool = false) throws -> [UInt8] {
        let dir = TempDir()
        try po.write(toFile: dir.path + "/t.po", atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/msgfmt")
        p.arguments = ["--check-format", "--endianness=\(bigEndian ? "big" : "little")", "-o", dir.path + "/t.mo", dir.path + "/t.po"]
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "msgfmt failed")
        return Array(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/t.mo")))
    }

    static let po = """
    msgid ""
    msgstr ""
    "Content-Type: text/plain; charset=UTF-8\\n"

    #, c-format
    msgid "unknown key %1$s in %2$s"
    msgstr "trong %2$s: khóa lạ %1$s"

    msgid "NAME"
    msgstr "名称"

    msgid "100%% sure"
    msgstr "уверен на 100%%"

    #, fuzzy
    msgid "fuzzy one"
    msgstr "never used"

    msgid "untranslated"
    msgstr ""

    msgid "a"
    msgstr "b"

    msgid "zz"
    msgstr "last"

    """

    @Test(arguments: [false, true]) func readsMsgfmtOutputInBothByteOrders(bigEndian: Bool) throws {
        let catalog = try #require(MessageCatalog(bytes: try Self.compile(Self.po, bigEndian: bigEndian)))
        #expect(catalog.translation(of: "unknown key %1$s in %2$s") == "trong %2$s: khóa lạ %1$s")
        #expect(catalog.translation(of: "NAME") == "名称")
        #expect(catalog.translation(of: "100%% sure") == "уверен на 100%%")
        #expect(catalog.translation(of: "a") == "b")
        #expect(catalog.translation(of: "zz") == "last")
        // msgfmt leaves out fuzzy and untranslated entries: English it is.
        #expect(catalog.translation(of: "fuzzy one") == nil)
        #expect(catalog.translation(of: "untranslated") == nil)
        #expect(catalog.translation(of: "NAM") == nil)
        #expect(catalog.translation(of: "NAMEX") == nil)
        #expect(catalog.translation(of: "") == nil)
    }

    @Test func refusesWhatIsNotACatalog() throws {
        #expect(MessageCatalog(bytes: []) == nil)
        #expect(MessageCatalog(bytes: Array("msgid \"a\"\nmsgstr \"b\"\n and more bytes".utf8)) == nil)
        var bytes = try Self.compile(Self.po)
        // A table that points past the end of the file.
        bytes[12] = 0xFF; bytes[13] = 0xFF; bytes[14] = 0xFF; bytes[15] = 0x7F
        #expect(MessageCatalog(bytes: bytes) == nil)
        // Cut in the middle of the strings: entries that fall outside are not found, nothing traps.
        let whole = try Self.compile(Self.po)
        if let cut = MessageCatalog(bytes: Array(whole.prefix(whole.count - 8))) {
            _ = cut.translation(of: "zz")
            _ = cut.translation(of: "a")
        }
    }

    @Test func marksInterpolationsAsPositionalPlaceholders() {
        let key = "mtu", path = "/etc/vpnctl/preferences.json"
        let text: LocalizedText = "unknown key \(key) in \(path)"
        #expect(text.format == "unknown key %1$s in %2$s")
        #expect(text.arguments == [key, path])
        let percent: LocalizedText = "100% of \(3) tries"
        #expect(percent.format == "100%% of %1$s tries")
        let plain: LocalizedText = "50% off"
        #expect(plain.format == "50%% off")
        // English: the literal exactly as it was written.
        #expect(Localization.translate(text, in: nil) == "unknown key mtu in /etc/vpnctl/preferences.json")
        #expect(Localization.translate(percent, in: nil) == "100% of 3 tries")
        #expect(Localization.translate(plain, in: nil) == "50% off")
        // An argument that looks like a placeholder is not expanded again.
        let tricky: LocalizedText = "name \("%2$s") and \("x")"
        #expect(Localization.translate(tricky, in: nil) == "name %2$s and x")
    }

    @Test func translationsMayReorderPlaceholders() throws {
        let catalog = try #require(MessageCatalog(bytes: try Self.compile(Self.po)))
        let key = "mtu", path = "/p.json"
        #expect(Localization.translate("unknown key \(key) in \(path)", in: catalog) == "trong /p.json: khóa lạ mtu")
        #expect(Localization.translate("100% sure", in: catalog) == "уверен на 100%")
        #expect(Localization.translate("not in the catalog \(key)", in: catalog) == "not in the catalog mtu")
    }

    @Test func rendersOnlyWellFormedPlaceholders() {
        #expect(LocalizedText.render("%1$s-%2$s", ["a", "b"]) == "a-b")
        #expect(LocalizedText.render("%3$s %1$s", ["a", "b"]) == "%3$s a")
        #expect(LocalizedText.render("100%", []) == "100%")
        #expect(LocalizedText.render("%d %s %1$", ["a"]) == "%d %s %1$")
    }

    /// A .mo laid out by hand (little-endian), for catalogs msgfmt would
    /// never write: entries in the given order, any bytes as strings, and
    /// header words (count, table offsets, hash table) overridable.
    static func mo(_ entries: [([UInt8], [UInt8])], count: UInt32? = nil, originals: UInt32? = nil,
                   translations: UInt32? = nil, hashSize: UInt32 = 0, hashOffset: UInt32 = 0) -> [UInt8] {
        func le(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        let n = UInt32(entries.count)
        let o: UInt32 = 28, t = o + 8 * n
        var strings: [UInt8] = [], oTable: [UInt8] = [], tTable: [UInt8] = []
        let base = Int(t + 8 * n)
        for (original, _) in entries {
            oTable += le(UInt32(original.count)) + le(UInt32(base + strings.count)); strings += original + [0]
        }
        for (_, translation) in entries {
            tTable += le(UInt32(translation.count)) + le(UInt32(base + strings.count)); strings += translation + [0]
        }
        return le(0x9504_12DE) + le(0) + le(count ?? n) + le(originals ?? o) + le(translations ?? t) + le(hashSize) + le(hashOffset)
            + oTable + tTable + strings
    }

    /// Issue 29 item 13: a placeholder's number was read into an Int without
    /// a bound, so `%99999999999999999999$s` in a catalog trapped vpnctl (and
    /// would the agent). A placeholder with no argument is literal text.
    @Test func item13_placeholdersPastTheArgumentsAreLiteralText() throws {
        let huge = "%99999999999999999999$s"
        #expect(LocalizedText.render(huge, ["a"]) == huge)
        #expect(LocalizedText.render("%18446744073709551617$s and %1$s", ["a"]) == "%18446744073709551617$s and a")
        let endless = "%" + String(repeating: "9", count: 10_000) + "$s"
        #expect(LocalizedText.render(endless, ["a", "b"]) == endless)
        #expect(LocalizedText.render("%0$s %00$s %01$s %2$s", ["a"]) == "%0$s %00$s a %2$s")
        #expect(LocalizedText.render("%١$s", ["a"]) == "%١$s")  // not an ASCII digit
        // Through a catalog, as the CLI and the agent use one.
        let key = "unknown key %1$s in %2$s"
        let catalog = try #require(MessageCatalog(bytes: Self.mo([(Array(key.utf8), Array("\(huge) / %2$s / %3$s".utf8))])))
        let k = "mtu", path = "/p.json"
        #expect(Localization.translate("unknown key \(k) in \(path)", in: catalog) == "\(huge) / /p.json / %3$s")
    }

    /// Issue 29 item 13: a damaged catalog (cut short, offsets and counts
    /// pointing anywhere, a bad hash table, bytes that are not UTF-8, an
    /// unsorted table) is English where it is damaged, and never traps.
    @Test func item13_aDamagedCatalogNeverTraps() throws {
        let entries: [([UInt8], [UInt8])] = [(Array("NAME".utf8), Array("名称".utf8)), (Array("a".utf8), Array("b".utf8)),
                                             (Array("zz".utf8), Array("last".utf8))]
        let good = Self.mo(entries)
        let catalog = try #require(MessageCatalog(bytes: good))
        #expect(catalog.translation(of: "NAME") == "名称")
        #expect(catalog.translation(of: "zz") == "last")
        func probe(_ bytes: [UInt8]) {
            guard let c = MessageCatalog(bytes: bytes) else { return }
            for key in ["NAME", "a", "zz", "m", "\u{FFFF}", String(repeating: "z", count: 300)] {
                if let t = c.translation(of: key) { _ = Localization.translate("\(key) \(t)", in: c) }
            }
        }
        // Cut at every length.
        for n in 0...good.count { probe(Array(good.prefix(n))) }
        // Every header word and table word set to extremes.
        for at in stride(from: 8, to: good.count - 3, by: 4) {
            for v: [UInt8] in [[0xFF, 0xFF, 0xFF, 0xFF], [0xFF, 0xFF, 0xFF, 0x7F], [0, 0, 0, 0x80], [0xF8, 0xFF, 0xFF, 0xFF], [0, 0, 0, 0]] {
                var b = good
                b.replaceSubrange(at..<(at + 4), with: v)
                probe(b)
            }
        }
        #expect(MessageCatalog(bytes: Self.mo(entries, count: 0xFFFF_FFFF)) == nil)
        #expect(MessageCatalog(bytes: Self.mo(entries, originals: 0xFFFF_FFF0)) == nil)
        #expect(MessageCatalog(bytes: Self.mo(entries, translations: 0x7FFF_FFFF)) == nil)
        // A hash table vpnctl does not use: ignored, whatever it says.
        let hashed = try #require(MessageCatalog(bytes: Self.mo(entries, hashSize: 0xFFFF_FFFF, hashOffset: 0xFFFF_FFFF)))
        #expect(hashed.translation(of: "a") == "b")
        // Not UTF-8: English, not replacement characters.
        let latin1 = try #require(MessageCatalog(bytes: Self.mo([(Array("caf".utf8), [0x63, 0x61, 0x66, 0xE9]), (Array("ok".utf8), Array("да".utf8))])))
        #expect(latin1.translation(of: "caf") == nil)
        #expect(latin1.translation(of: "ok") == "да")
        #expect(Localization.translate("caf", in: latin1) == "caf")
        // An unsorted table: the binary search may miss, never traps.
        probe(Self.mo(entries.reversed()))
    }

    @Test func choosesTheLanguageAsGettextDoes() {
        func langs(_ env: [String: String]) -> [String] { Localization.preferredLanguages(env) }
        #expect(langs([:]) == [])
        #expect(langs(["LANG": "vi_VN.UTF-8"]) == ["vi_VN.UTF-8"])
        #expect(langs(["LANG": "vi_VN.UTF-8", "LC_MESSAGES": "ru_RU.UTF-8"]) == ["ru_RU.UTF-8"])
        #expect(langs(["LANG": "vi_VN.UTF-8", "LC_MESSAGES": "ru_RU.UTF-8", "LC_ALL": "zh_CN.UTF-8"]) == ["zh_CN.UTF-8"])
        #expect(langs(["LC_ALL": "", "LANG": "ru_RU"]) == ["ru_RU"])
        // LANGUAGE wins over the locale, except over C and POSIX.
        #expect(langs(["LANGUAGE": "vi:ru", "LANG": "zh_CN.UTF-8"]) == ["vi", "ru"])
        #expect(langs(["LANGUAGE": "vi"]) == ["vi"])
        #expect(langs(["LANGUAGE": "vi", "LANG": "C.UTF-8"]) == ["vi"])
        #expect(langs(["LANGUAGE": "vi", "LC_ALL": "C"]) == [])
        #expect(langs(["LANGUAGE": "vi", "LANG": "POSIX"]) == [])
        #expect(langs(["LANGUAGE": "", "LANG": "ru_RU.UTF-8"]) == ["ru_RU.UTF-8"])
        #expect(langs(["LANGUAGE": "::"]) == [])
    }

    @Test func mapsLocaleNamesToCatalogs() {
        let table: [(String, String?)] = [
            ("vi", "vi"), ("vi_VN", "vi"), ("vi_VN.UTF-8", "vi"), ("ru_RU.UTF-8", "ru"), ("ru_UA@euro", "ru"),
            ("zh_CN.UTF-8", "zh_Hans"), ("zh_SG", "zh_Hans"), ("zh_Hans", "zh_Hans"), ("zh-Hans-CN", "zh_Hans"), ("zh", "zh_Hans"),
            ("zh_TW.UTF-8", nil), ("zh_HK", nil), ("zh_Hant", nil),
            ("en_US.UTF-8", "en"), ("en", "en"), ("C", "en"), ("POSIX", "en"), ("C.UTF-8", "en"),
            ("de_DE.UTF-8", nil), ("", nil),
        ]
        for (name, expected) in table { #expect(Localization.catalogName(name) == expected, "\(name)") }
    }

    @Test func loadsTheFirstLanguageWithACatalog() throws {
        let dir = TempDir()
        let mo = try Self.compile(Self.po)
        try FileManager.default.createDirectory(atPath: dir.path + "/ru/LC_MESSAGES", withIntermediateDirectories: true)
        try Data(mo).write(to: URL(fileURLWithPath: dir.path + "/ru/LC_MESSAGES/vpnctl.mo"))
        let base = ["VPNCTL_LOCALEDIR": dir.path]
        func load(_ env: [String: String]) -> String? { Localization.load(base.merging(env) { $1 })?.language }
        #expect(load(["LANG": "ru_RU.UTF-8"]) == "ru")
        // No vi catalog here: the next language in LANGUAGE.
        #expect(load(["LANGUAGE": "vi:ru"]) == "ru")
        // English before it in the list wins.
        #expect(load(["LANGUAGE": "en:ru"]) == nil)
        #expect(load(["LANGUAGE": "de:fr"]) == nil)
        #expect(load(["LC_ALL": "C", "LANGUAGE": "ru"]) == nil)
        #expect(load([:]) == nil)
        // A damaged catalog quietly means English.
        try Data("not a catalog".utf8).write(to: URL(fileURLWithPath: dir.path + "/ru/LC_MESSAGES/vpnctl.mo"))
        #expect(load(["LANG": "ru_RU.UTF-8"]) == nil)
    }

    /// The agent loads a catalog for every request in a language: the file
    /// is read once, and again when it is another file (an upgrade).
    @Test func aCatalogIsReadOnceWhileItsFileIsUnchanged() throws {
        func catalog(_ word: String) throws -> [UInt8] {
            try Self.compile("msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\nmsgid \"word\"\nmsgstr \"\(word)\"\n")
        }
        let dir = TempDir()
        let path = dir.path + "/ru/LC_MESSAGES/vpnctl.mo"
        try FileManager.default.createDirectory(atPath: dir.path + "/ru/LC_MESSAGES", withIntermediateDirectories: true)
        try Data(try catalog("один")).write(to: URL(fileURLWithPath: path))
        let env = ["VPNCTL_LOCALEDIR": dir.path, "LANGUAGE": "ru", "LANG": "C.UTF-8"]
        #expect(Localization.load(env)?.catalog.translation(of: "word") == "один")
        // Other bytes of the same size, written in place with the old mtime put
        // back: the same file as far as the cache can tell, so not read again.
        var before = stat()
        #expect(stat(path, &before) == 0)
        let other = try catalog("пять")
        #expect(other.count == Int(before.st_size))
        let fd = open(path, O_WRONLY)
        #expect(fd >= 0)
        #expect(other.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == other.count)
        close(fd)
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(Localization.load(env)?.catalog.translation(of: "word") == "один")
        // A new mtime is a changed file: read again.
        times[1].tv_sec += 1
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        #expect(Localization.load(env)?.catalog.translation(of: "word") == "пять")
    }

    @Test func widthOfWideCharacters() {
        #expect("NAME".terminalWidth == 4)
        #expect("名称".terminalWidth == 4)
        #expect("ИМЯ".terminalWidth == 3)
        #expect("TRẠNG THÁI".terminalWidth == 10)
    }
}
