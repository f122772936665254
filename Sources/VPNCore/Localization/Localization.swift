#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import VPNSystem

/// The language of the messages people read. It is decided once, at
/// start-up, from the environment as GNU gettext reads it; a catalog that
/// is missing, or a message it lacks, means English. JSON output, exit
/// codes and status names in JSON never depend on it.
public enum Localization {
    /// The catalogs vpnctl ships, by the directory name under the locale dir.
    public static let languages = ["vi", "zh_Hans", "ru"]

    /// The catalog in use; nil for English.
    public private(set) static var catalog: MessageCatalog?
    /// Its language ("vi", "zh_Hans", "ru"); nil for English.
    public private(set) static var language: String?

    /// Chooses the language for this process from `environment`
    /// (English when `english`, as for JSON output) and loads its catalog.
    public static func configure(environment: [String: String], english: Bool = false) {
        let found = english ? nil : load(environment)
        // Unchanged state is not written again (in-process tests run commands side by side).
        if found?.language != language || (found == nil) != (catalog == nil) {
            catalog = found?.catalog
            language = found?.language
        }
    }

    /// The catalog the environment asks for, and its language; nil for English.
    public static func load(_ environment: [String: String]) -> (catalog: MessageCatalog, language: String)? {
        let candidates = preferredLanguages(environment)
        guard !candidates.isEmpty else { return nil }
        let directories = localeDirectories(environment)
        for candidate in candidates {
            guard let name = catalogName(candidate) else { continue }
            if name == "en" { return nil }
            for directory in directories {
                guard let c = CatalogCache.shared.catalog("\(directory)/\(name)/LC_MESSAGES/vpnctl.mo") else { continue }
                return (c, name)
            }
        }
        return nil
    }

    /// The languages asked for, best first, as gettext reads them: the
    /// locale is the first of LC_ALL, LC_MESSAGES and LANG that is set; a
    /// locale of "C" or "POSIX" means English whatever LANGUAGE says (so
    /// `LC_ALL=C` gives scripts English); otherwise LANGUAGE's colon list,
    /// when set, wins over the locale. Unlike glibc, a locale that was
    /// never generated on this machine (or unset) does not silence LANGUAGE.
    public static func preferredLanguages(_ environment: [String: String]) -> [String] {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        if locale == "C" || locale == "POSIX" { return [] }
        if let list = environment["LANGUAGE"], !list.isEmpty {
            let names = list.split(separator: ":").map(String.init).filter { !$0.isEmpty }
            if !names.isEmpty { return names }
        }
        return locale.map { [$0] } ?? []
    }

    /// The catalog directory for a language or locale name: "vi_VN.UTF-8"
    /// is "vi"; zh_CN, zh_SG, zh_Hans and plain zh are "zh_Hans" (the other
    /// Chinese locales have no catalog: nil); English, C and POSIX are "en".
    /// Nil for a language vpnctl has no catalog for.
    public static func catalogName(_ name: String) -> String? {
        var base = Substring(name)
        if let cut = base.firstIndex(where: { $0 == "." || $0 == "@" }) { base = base[..<cut] }
        let parts = base.split(whereSeparator: { $0 == "_" || $0 == "-" }).map { $0.lowercased() }
        guard let code = parts.first else { return nil }
        switch code {
        case "en", "c", "posix": return "en"
        case "zh":
            let rest = Set(parts.dropFirst())
            if rest.isEmpty || !rest.isDisjoint(with: ["hans", "cn", "sg"]) { return "zh_Hans" }
            return nil
        default:
            return languages.contains(code) ? code : nil
        }
    }

    /// Where catalogs are looked for: VPNCTL_LOCALEDIR alone when set;
    /// otherwise beside the binary (`build/locale` for a build tree) and
    /// under its prefix (`/usr/bin/vpnctl` reads `/usr/share/locale`).
    static func localeDirectories(_ environment: [String: String]) -> [String] {
        if let dir = environment["VPNCTL_LOCALEDIR"], !dir.isEmpty { return [dir] }
        let exe = Processes.currentExecutable()
        guard let slash = exe.lastIndex(of: "/") else { return ["/usr/share/locale"] }
        let bin = String(exe[..<slash])
        return [bin + "/locale", bin + "/../share/locale", "/usr/share/locale"]
    }

    /// The translation of a message, with its arguments put in; the
    /// English text when there is no catalog or no entry.
    public static func translate(_ text: LocalizedText, in catalog: MessageCatalog? = Localization.catalog) -> String {
        let format = catalog?.translation(of: text.format) ?? text.format
        return LocalizedText.render(format, text.arguments)
    }
}

/// The catalogs read so far, by path. The agent answers every request in
/// its client's language: a catalog is read once, and again only when the
/// file is no longer the one read (another inode, size or mtime: a package
/// upgrade, a damaged file replaced).
final class CatalogCache: Sendable {
    static let shared = CatalogCache()

    struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
        let size: Int64
        let seconds: Int
        let nanoseconds: Int
    }

    private let entries = Mutex<[String: (identity: Identity, catalog: MessageCatalog)]>([:])

    /// The catalog at `path` (symlinks followed); nil when there is no
    /// file, or it is not a catalog.
    func catalog(_ path: String) -> MessageCatalog? {
        guard let identity = Self.identity(path) else { return nil }
        return entries.withLock { entries in
            if let known = entries[path], known.identity == identity { return known.catalog }
            entries[path] = nil
            guard let bytes = try? FileSystem.readFileIfPresent(path, followSymlinks: true, limit: 4 << 20),
                  let catalog = MessageCatalog(bytes: bytes) else { return nil }
            // The identity from before the read: a file replaced meanwhile is read again next time.
            entries[path] = (identity, catalog)
            return catalog
        }
    }

    static func identity(_ path: String) -> Identity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                        seconds: Int(st.st_mtim.tv_sec), nanoseconds: Int(st.st_mtim.tv_nsec))
    }
}

/// Marks a message for translation, and translates it: `L("unknown key
/// \(key) in \(path)")` looks up "unknown key %1$s in %2$s" and puts the
/// arguments in where the translation places them. Only a literal can be
/// marked; Tools/extract-messages.py finds each one for po/vpnctl.pot.
public func L(_ text: LocalizedText) -> String {
    Localization.translate(text)
}

/// A message as gettext knows it: its literal text, with `%%` for each
/// `%` and `%1$s`, `%2$s`... for each interpolation, and the argument
/// strings.
public struct LocalizedText: ExpressibleByStringInterpolation, Sendable {
    public let format: String
    public let arguments: [String]

    public init(stringLiteral value: String) {
        format = LocalizedText.escaped(value)
        arguments = []
    }

    public init(stringInterpolation: StringInterpolation) {
        format = stringInterpolation.format
        arguments = stringInterpolation.arguments
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var format = ""
        var arguments: [String] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            format.reserveCapacity(literalCapacity + 4 * interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            format += LocalizedText.escaped(literal)
        }

        public mutating func appendInterpolation<T>(_ value: T) {
            arguments.append(String(describing: value))
            format += "%\(arguments.count)$s"
        }
    }

    /// Every marked message passes here, a command's whole help included,
    /// so the test for a `%` reads bytes: `contains("%")` walks grapheme
    /// clusters, and cost `vpnctl --version` 5 M instructions.
    static func escaped(_ literal: String) -> String {
        hasPercent(literal) ? literal.split(separator: "%", omittingEmptySubsequences: false).joined(separator: "%%") : literal
    }

    static func hasPercent(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { $0.count > 0 && memchr($0.baseAddress!, 0x25, $0.count) != nil }
    }

    /// `format` with `%%` as `%` and each `%N$s` as argument N. Anything
    /// else after a `%` is kept as it is, and so is a placeholder with no
    /// argument (`%0$s`, `%3$s` of two, `%99999999999999999999$s`): the
    /// format may come from a damaged catalog.
    static func render(_ format: String, _ arguments: [String]) -> String {
        guard hasPercent(format) else { return format }
        var out = ""
        let scalars = Array(format.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            guard c == "%", i + 1 < scalars.count else { out.unicodeScalars.append(c); i += 1; continue }
            if scalars[i + 1] == "%" { out += "%"; i += 2; continue }
            var j = i + 1, n = 0
            // Past the last argument the number is only counted as "too large", never overflowed.
            while j < scalars.count, ("0"..."9").contains(scalars[j]) {
                if n <= arguments.count { n = n * 10 + Int(scalars[j].value - 0x30) }
                j += 1
            }
            if j > i + 1, j + 1 < scalars.count, scalars[j] == "$", scalars[j + 1] == "s", n >= 1, n <= arguments.count {
                out += arguments[n - 1]
                i = j + 2
                continue
            }
            out.unicodeScalars.append(c)
            i += 1
        }
        return out
    }
}
