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
        var state = ParseState(root: root, argv: argv)
        while state.i < argv.count {
            let word = argv[state.i]
            state.i += 1
            if let early = try state.read(word) { return early }
        }
        return try outcome(state)
    }

    /// What to do once every word is read.
    func outcome(_ state: ParseState) throws -> ParseOutcome {
        let path = state.path
        var args = state.args
        args.command = path
        if state.wantsHelp { return .help(path) }
        if path.isEmpty && args.flags.contains("version") { return .version }
        guard let _ = state.spec.run else {
            if path.isEmpty && args.positionals.isEmpty { return .help([]) }
            if !state.spec.subcommands.isEmpty {
                throw state.usageError(L("'\(path.joined(separator: " "))' needs a subcommand: \(state.spec.subcommands.map(\.name).joined(separator: ", "))"))
            }
            return .help(path)
        }
        try checkPositionals(state.spec, args.positionals, state.usageError)
        return .run(state.spec, args)
    }

    func checkPositionals(_ spec: CommandSpec, _ given: [String], _ usageError: (String) -> VPNError) throws {
        let required = spec.positionals.filter { !$0.optional }
        if given.count < required.count {
            let missing = required[given.count]
            throw usageError(L("Missing expected argument '<\(missing.name)>'"))
        }
        if spec.positionals.last?.variadic != true, given.count > spec.positionals.count {
            throw usageError(L("Unexpected argument \(given[spec.positionals.count].quotedForMessage)"))
        }
    }

    /// The path with each alias replaced by its command's name.
    public func canonical(_ path: [String]) -> [String] {
        var spec = root
        return path.map { word in
            guard let sub = spec.subcommands.first(where: { $0.isNamed(word) }) else { return word }
            spec = sub
            return sub.name
        }
    }

    /// Finds the spec for a command path, for help.
    public func spec(for path: [String]) -> CommandSpec? {
        var spec = root
        for name in path {
            guard let sub = spec.subcommands.first(where: { $0.isNamed(name) }) else { return nil }
            spec = sub
        }
        return spec
    }
}

/// One command line being parsed: the words read so far and the command they chose.
struct ParseState {
    let root: CommandSpec
    let argv: [String]
    /// The index of the next word.
    var i = 0
    var args = ParsedArguments()
    var spec: CommandSpec
    var path: [String] = []
    var wantsHelp = false
    var onlyPositionals = false

    init(root: CommandSpec, argv: [String]) {
        self.root = root
        self.argv = argv
        spec = root
    }

    /// "; did you mean 'a'?" or "; did you mean 'a', 'b' or 'c'?"; empty with none.
    static func didYouMean(_ close: [String]) -> String { close.isEmpty ? "" : "; " + Suggest.question(close) }

    func usageError(_ message: String) -> VPNError {
        VPNError(.usage, message, hint: path.isEmpty ? L("See 'vpnctl help'.") : L("See 'vpnctl help \(path.joined(separator: " "))'."))
    }

    func lookup(_ name: String) -> OptionSpec? {
        spec.options.first { $0.name == name } ?? GlobalOptionSpecs.all.first { $0.name == name }
    }

    func lookupShort(_ c: Character) -> OptionSpec? {
        spec.options.first { $0.short == c } ?? GlobalOptionSpecs.all.first { $0.short == c }
    }

    mutating func record(_ option: OptionSpec, value: String?) throws {
        let seen = option.valueName == nil ? args.flags.contains(option.name) : args.values[option.name] != nil
        if seen && !option.repeatable {
            throw usageError(L("Option '--\(option.name)' given more than once"))
        }
        if let value { args.values[option.name, default: []].append(value) } else { args.flags.insert(option.name) }
    }

    /// Reads one word (and the value after it, if it takes one). Non-nil
    /// when the word settles the outcome: `vpnctl help ...`.
    mutating func read(_ word: String) throws -> ParseOutcome? {
        if onlyPositionals || word == "-" || !word.hasPrefix("-") { return try readCommandOrPositional(word) }
        if word == "--" {
            onlyPositionals = true
        } else if word.hasPrefix("--") {
            try readLongOption(word)
        } else {
            try readShortOptions(word)
        }
        return nil
    }

    /// Before the first positional, a word names a subcommand if the command has any.
    mutating func readCommandOrPositional(_ word: String) throws -> ParseOutcome? {
        guard !onlyPositionals, args.positionals.isEmpty, !spec.subcommands.isEmpty else {
            args.positionals.append(word)
            return nil
        }
        guard let sub = spec.subcommands.first(where: { $0.isNamed(word) }) else {
            if spec.name == root.name, word == "help" {
                let rest = argv[i...].filter { !$0.hasPrefix("-") }
                return .help(Array(rest))
            }
            if spec.name == root.name, word == "version", i == argv.count { return .version }
            let names = spec.subcommands.map(\.name)
            let close = Suggest.closest(to: word, among: names + (spec.name == root.name ? ["help"] : []), limit: 3)
            throw usageError((path.isEmpty ? L("Unknown command \(word.quotedForMessage)")
                                           : L("Unknown subcommand of '\(path.joined(separator: " "))' \(word.quotedForMessage)")) + Self.didYouMean(close))
        }
        spec = sub
        path.append(sub.name)
        return nil
    }

    /// "--name", "--name value" or "--name=value".
    mutating func readLongOption(_ word: String) throws {
        var name = String(word.dropFirst(2))
        var inline: String? = nil
        if let eq = name.firstIndex(of: "=") {
            inline = String(name[name.index(after: eq)...])
            name = String(name[..<eq])
        }
        guard let option = lookup(name) else {
            let known = (spec.options + GlobalOptionSpecs.all).map(\.name)
            let close = Suggest.closest(to: name, among: known, limit: 3).map { "--\($0)" }
            throw usageError(L("Unknown option \("--\(name)".quotedForMessage)") + Self.didYouMean(close))
        }
        if option.name == "help" { wantsHelp = true; return }
        if option.valueName != nil {
            if let inline {
                try record(option, value: inline)
            } else {
                guard i < argv.count, !(argv[i].hasPrefix("--") && argv[i].count > 2) else {
                    throw usageError(L("Missing value for '\(option.synopsis)'"))
                }
                try record(option, value: argv[i])
                i += 1
            }
        } else {
            if inline != nil { throw usageError(L("Option \("--\(name)".quotedForMessage) takes no value")) }
            try record(option, value: nil)
        }
    }

    /// Short options: "-v", "-h"; clusters of flags like "-vh".
    mutating func readShortOptions(_ word: String) throws {
        for c in word.dropFirst() {
            guard let option = lookupShort(c) else { throw usageError(L("Unknown option \("-\(c)".quotedForMessage)")) }
            if option.name == "help" { wantsHelp = true; continue }
            if option.valueName != nil {
                guard word.count == 2, i < argv.count else { throw usageError(L("Missing value for '\(option.synopsis)'")) }
                try record(option, value: argv[i])
                i += 1
            } else {
                try record(option, value: nil)
            }
        }
    }
}
