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
