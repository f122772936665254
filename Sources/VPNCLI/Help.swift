import VPNCore

/// Renders help from the same specs the parser uses.
public enum Help {
    public static func render(_ spec: CommandSpec, path: [String]) -> String {
        var s = L("OVERVIEW: \(spec.abstract)") + "\n\n"
        let name = (["vpnctl"] + path).joined(separator: " ")
        if path.isEmpty {
            s += L("USAGE: vpnctl <command> [<options>]") + "\n\n" + L("COMMANDS:") + "\n"
            s += columns(spec.subcommands.map { ($0.name, $0.abstract + aliasNote($0)) })
            s += "\n" + L("GLOBAL OPTIONS:") + "\n" + columns(GlobalOptionSpecs.all.map(optionRow) + spec.options.map(optionRow))
            s += "\n" + L("EXIT CODES:") + "\n" + columns(ExitCode.allCases.map { ("\($0.rawValue)", "\($0.meaning) (\($0.name))") })
            s += "\n" + L("See 'vpnctl help <command>' for details.")
            return s
        }
        if !spec.subcommands.isEmpty {
            s += L("USAGE: \(name) <subcommand>") + "\n\n"
            // A group's own discussion (what `ondemand` is) comes before its subcommands.
            if !spec.discussion.isEmpty { s += spec.discussion + "\n\n" }
            s += L("SUBCOMMANDS:") + "\n"
            s += columns(spec.subcommands.map { ($0.name, $0.abstract + aliasNote($0)) })
            s += "\n" + L("See 'vpnctl help \(path.joined(separator: " ")) <subcommand>' for details.")
            return s
        }
        s += L("USAGE: \(usage(spec, name: name))") + "\n"
        if !spec.aliases.isEmpty { s += L("ALIASES: \(spec.aliases.joined(separator: ", "))") + "\n" }
        if !spec.discussion.isEmpty { s += "\n\(spec.discussion)\n" }
        if !spec.positionals.isEmpty {
            s += "\n" + L("ARGUMENTS:") + "\n" + columns(spec.positionals.map { ("<\($0.name)>", $0.help) })
        }
        if !spec.options.isEmpty {
            s += "\n" + L("OPTIONS:") + "\n" + columns(spec.options.map(optionRow))
        }
        if !spec.examples.isEmpty {
            s += "\n" + L("EXAMPLES:") + "\n" + spec.examples.map { "  \($0)\n" }.joined()
        }
        let globals = GlobalOptionSpecs.all.map { "--\($0.name)" }.joined(separator: ", ")
        s += "\n" + wrap(L("Global options (\(globals)) work with every command; see 'vpnctl help'."), width: 80)
        return s
    }

    /// `vpnctl help help`: help is not a command the parser runs, but it
    /// has help of its own.
    public static let helpSpec = CommandSpec(
        name: "help", abstract: L("Show help: the command list, or one command's usage, options and examples."),
        discussion: L("'vpnctl help COMMAND' is the same as 'vpnctl COMMAND --help'."),
        examples: ["vpnctl help", "vpnctl help start", "vpnctl help secret set"],
        positionals: [PositionalSpec("command", optional: true, variadic: true, help: L("A command (and subcommand) to explain."))])

    /// Words joined into lines of at most `width` columns, as the terminal
    /// shows them. A "word" wider than a line (Chinese has no spaces) is cut
    /// between characters.
    static func wrap(_ text: String, width: Int) -> String {
        var lines: [String] = [], current = ""
        func pieces(_ word: Substring) -> [String] {
            guard String(word).terminalWidth > width else { return [String(word)] }
            var out: [String] = [], piece = ""
            for c in word {
                if piece.terminalWidth + String(c).terminalWidth > width { out.append(piece); piece = "" }
                piece.append(c)
            }
            return out + [piece]
        }
        for word in text.split(separator: " ").flatMap(pieces) {
            if !current.isEmpty && current.terminalWidth + 1 + word.terminalWidth > width {
                lines.append(current)
                current = ""
            }
            current += (current.isEmpty ? "" : " ") + word
        }
        return (lines + [current]).joined(separator: "\n")
    }

    /// " (also: up, connect)" for a command with aliases.
    static func aliasNote(_ spec: CommandSpec) -> String {
        spec.aliases.isEmpty ? "" : L(" (also: \(spec.aliases.joined(separator: ", ")))")
    }

    public static func usage(_ spec: CommandSpec, name: String) -> String {
        var parts = [name]
        parts += spec.positionals.map(\.synopsis)
        parts += spec.options.map { "[\($0.synopsis)]" }
        return parts.joined(separator: " ")
    }

    static func optionRow(_ o: OptionSpec) -> (String, String) {
        let short = o.short.map { "-\($0), " } ?? ""
        return (short + o.synopsis, o.help + (o.repeatable ? L(" (repeatable)") : ""))
    }

    static func columns(_ rows: [(String, String)]) -> String {
        let width = min(30, (rows.map { $0.0.count }.max() ?? 0) + 2)
        var s = ""
        for (left, right) in rows {
            if left.count + 2 > width {
                s += "  \(left)\n" + String(repeating: " ", count: width + 2) + right + "\n"
            } else {
                s += "  " + left + String(repeating: " ", count: width - left.count) + right + "\n"
            }
        }
        return s
    }
}
