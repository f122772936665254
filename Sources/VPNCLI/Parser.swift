import VPNCore

/// The parsed form of one command line.
public struct ParsedArguments: Sendable {
    public var command: [String] = []
    public var values: [String: [String]] = [:]
    public var flags: Set<String> = []
    public var positionals: [String] = []

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func value(_ name: String) -> String? { values[name]?.last }
    public func all(_ name: String) -> [String] { values[name] ?? [] }
}

/// What the parser decided to do.
public enum ParseOutcome {
    case run(CommandSpec, ParsedArguments)
    case help([String])
    case version
}

/// A small hand-written parser shaped like swift-argument-parser: exact names
/// only, `--name value` or `--name=value`, `--` ends options, and every error
/// names the offending word.
public struct ArgumentParser {
    public let root: CommandSpec

    public init(root: CommandSpec) { self.root = root }

    public func parse(_ argv: [String]) throws -> ParseOutcome {
        var args = ParsedArguments()
        var spec = root
        var path: [String] = []
        var wantsHelp = false
        var onlyPositionals = false
        var i = 0

        func usageError(_ message: String) -> VPNError {
            VPNError(.usage, message, hint: "See 'vpnctl help\(path.isEmpty ? "" : " " + path.joined(separator: " "))'.")
        }

        func lookup(_ name: String) -> OptionSpec? {
            spec.options.first { $0.name == name } ?? GlobalOptionSpecs.all.first { $0.name == name }
        }

        func lookupShort(_ c: Character) -> OptionSpec? {
            spec.options.first { $0.short == c } ?? GlobalOptionSpecs.all.first { $0.short == c }
        }

        func record(_ option: OptionSpec, value: String?) throws {
            let seen = option.valueName == nil ? args.flags.contains(option.name) : args.values[option.name] != nil
            if seen && !option.repeatable {
                throw usageError("Option '--\(option.name)' given more than once")
            }
            if let value { args.values[option.name, default: []].append(value) } else { args.flags.insert(option.name) }
        }

        while i < argv.count {
            let word = argv[i]
            i += 1
            if onlyPositionals || word == "-" || !word.hasPrefix("-") {
                if !onlyPositionals, args.positionals.isEmpty, !spec.subcommands.isEmpty {
                    guard let sub = spec.subcommands.first(where: { $0.name == word }) else {
                        if spec.name == root.name, word == "help" {
                            let rest = argv[i...].filter { !$0.hasPrefix("-") }
                            return .help(Array(rest))
                        }
                        let names = spec.subcommands.map(\.name)
                        let close = Suggest.closest(to: word, among: names + (spec.name == root.name ? ["help"] : []))
                        let what = path.isEmpty ? "command" : "subcommand of '\(path.joined(separator: " "))'"
                        var message = "Unknown \(what) \(word.quotedForMessage)"
                        if let c = close.first { message += "; did you mean '\(c)'?" }
                        throw usageError(message)
                    }
                    spec = sub
                    path.append(word)
                    continue
                }
                args.positionals.append(word)
                continue
            }
            if word == "--" { onlyPositionals = true; continue }
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var inline: String? = nil
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                guard let option = lookup(name) else { throw usageError("Unknown option \("--\(name)".quotedForMessage)") }
                if option.name == "help" { wantsHelp = true; continue }
                if option.valueName != nil {
                    if let inline {
                        try record(option, value: inline)
                    } else {
                        guard i < argv.count, !(argv[i].hasPrefix("--") && argv[i].count > 2) else {
                            throw usageError("Missing value for '\(option.synopsis)'")
                        }
                        try record(option, value: argv[i])
                        i += 1
                    }
                } else {
                    if inline != nil { throw usageError("Option \("--\(name)".quotedForMessage) takes no value") }
                    try record(option, value: nil)
                }
                continue
            }
            // Short options: "-v", "-h"; clusters of flags like "-vh".
            for c in word.dropFirst() {
                guard let option = lookupShort(c) else { throw usageError("Unknown option \("-\(c)".quotedForMessage)") }
                if option.name == "help" { wantsHelp = true; continue }
                if option.valueName != nil {
                    guard word.count == 2, i < argv.count else { throw usageError("Missing value for '\(option.synopsis)'") }
                    try record(option, value: argv[i])
                    i += 1
                } else {
                    try record(option, value: nil)
                }
            }
        }
        args.command = path
        if wantsHelp { return .help(path) }
        if path.isEmpty && args.flags.contains("version") { return .version }
        guard let _ = spec.run else {
            if path.isEmpty && args.positionals.isEmpty { return .help([]) }
            if !spec.subcommands.isEmpty {
                throw usageError("'\(path.joined(separator: " "))' needs a subcommand: \(spec.subcommands.map(\.name).joined(separator: ", "))")
            }
            return .help(path)
        }
        try checkPositionals(spec, args.positionals, usageError)
        return .run(spec, args)
    }

    func checkPositionals(_ spec: CommandSpec, _ given: [String], _ usageError: (String) -> VPNError) throws {
        let required = spec.positionals.filter { !$0.optional }
        if given.count < required.count {
            let missing = required[given.count]
            throw usageError("Missing expected argument '<\(missing.name)>'")
        }
        if spec.positionals.last?.variadic != true, given.count > spec.positionals.count {
            throw usageError("Unexpected argument \(given[spec.positionals.count].quotedForMessage)")
        }
    }

    /// Finds the spec for a command path, for help.
    public func spec(for path: [String]) -> CommandSpec? {
        var spec = root
        for name in path {
            guard let sub = spec.subcommands.first(where: { $0.name == name }) else { return nil }
            spec = sub
        }
        return spec
    }
}
