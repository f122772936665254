/// NetworkManager's keyfile format (nm-settings-keyfile(5)), the GLib
/// key-file syntax: `[section]` headers, `key=value` lines, whole-line `#`
/// comments, the escapes `\s \n \t \r \\` in values, and `;`-separated lists
/// (`\;` is a ';' inside an item). GLib keeps the last of a repeated key;
/// vpnctl refuses the file instead, since which one its author meant is a guess.
public struct NMKeyfile: Sendable {
    public struct Entry: Sendable {
        public let key: String
        /// The value as written, escapes still in it.
        public let raw: String
        public let line: Int
    }

    public struct Section: Sendable {
        public let name: String
        public let line: Int
        public var entries: [Entry] = []

        public func entry(_ key: String) -> Entry? { entries.first { $0.key == key } }
    }

    public var sections: [Section] = []

    public func section(_ name: String) -> Section? { sections.first { $0.name == name } }

    /// Reads the whole text; every problem found is listed, each with its line.
    public static func parse(_ text: String) -> (file: NMKeyfile, problems: [String]) {
        var file = NMKeyfile()
        var problems: [String] = []
        var body = Substring(text)
        if body.hasPrefix("\u{FEFF}") { body = body.dropFirst() }
        var lineNumber = 0
        for rawLine in body.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = rawLine
            if line.last == "\r" { line = line.dropLast() }
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.isEmpty || trimmed.first == "#" { continue }
            if trimmed.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
                problems.append(L("line \(lineNumber): a control character (binary or corrupted file?)"))
                continue
            }
            if trimmed.first == "[" {
                var header = trimmed
                while let l = header.last, l == " " || l == "\t" { header = header.dropLast() }
                guard header.last == "]", header.count > 2 else {
                    problems.append(L("line \(lineNumber): section header \(String(trimmed).quotedForMessage) is not '[name]'"))
                    continue
                }
                let name = String(header.dropFirst().dropLast())
                if name.contains("[") || name.contains("]") {
                    problems.append(L("line \(lineNumber): section header \(String(trimmed).quotedForMessage) is not '[name]'"))
                    continue
                }
                if let first = file.section(name) {
                    problems.append(L("line \(lineNumber): section [\(name)] again (first at line \(first.line)); keep one"))
                }
                file.sections.append(Section(name: name, line: lineNumber))
                continue
            }
            guard let eq = trimmed.firstIndex(of: "=") else {
                problems.append(L("line \(lineNumber): expected 'key=value' or '[section]'"))
                continue
            }
            var key = trimmed[..<eq]
            while let l = key.last, l == " " || l == "\t" { key = key.dropLast() }
            let value = trimmed[trimmed.index(after: eq)...].drop(while: { $0 == " " || $0 == "\t" })
            guard !key.isEmpty else {
                problems.append(L("line \(lineNumber): a value with no key before '='"))
                continue
            }
            guard !file.sections.isEmpty else {
                problems.append(L("line \(lineNumber): '\(String(key))' comes before any [section]"))
                continue
            }
            let index = file.sections.count - 1
            if let earlier = file.sections[index].entry(String(key)) {
                problems.append(L("line \(lineNumber): \(file.sections[index].name).\(String(key)) is given twice (first at line \(earlier.line)); NetworkManager would use the last one: keep only the one you mean"))
                continue
            }
            file.sections[index].entries.append(Entry(key: String(key), raw: String(value), line: lineNumber))
        }
        return (file, problems)
    }

    /// The value with its escapes resolved; nil (with `problem` set) for an
    /// escape GLib refuses.
    public static func unescape(_ raw: Substring, problem: inout String?) -> String? {
        var out = ""
        var i = raw.startIndex
        while i < raw.endIndex {
            let c = raw[i]
            i = raw.index(after: i)
            guard c == "\\" else { out.append(c); continue }
            guard i < raw.endIndex else {
                problem = L("a '\\' at the end of the value (write '\\\\' for a backslash)")
                return nil
            }
            let e = raw[i]
            i = raw.index(after: i)
            switch e {
            case "s": out.append(" ")
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "\\": out.append("\\")
            case ";": out.append(";")
            case ",": out.append(",")
            default:
                problem = L("the escape '\\\(String(e))' is not one GLib knows (\\s \\n \\t \\r \\\\ \\;)")
                return nil
            }
        }
        return out
    }

    /// A list value: items split at each ';' not escaped, the trailing empty item dropped.
    public static func splitList(_ raw: String) -> [Substring] {
        var items: [Substring] = []
        var start = raw.startIndex
        var i = raw.startIndex
        while i < raw.endIndex {
            if raw[i] == "\\" {
                i = raw.index(after: i)
                if i < raw.endIndex { i = raw.index(after: i) }
                continue
            }
            if raw[i] == ";" {
                items.append(raw[start..<i])
                start = raw.index(after: i)
            }
            i = raw.index(after: i)
        }
        if start < raw.endIndex { items.append(raw[start...]) }
        return items
    }
}
