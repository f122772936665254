import VPNCore

/// What a value on the command line is, so that shell completion knows
/// where its candidates come from. Live kinds are read by the hidden
/// `vpnctl __complete <kind>` at the time of completion.
public enum ValueKind: Equatable, Sendable {
    /// Free text: a number, a URL, a new name. Nothing to complete.
    case text
    /// A saved profile's name (live).
    case profile
    /// A network interface (live, from /proc/net/dev).
    case interface
    /// A secret name of the profile given before it (live).
    case secret
    /// An installed trust anchor's SHA-256 fingerprint (live).
    case fingerprint
    case file
    case directory
    /// A vpnctl command (for `help`).
    case command
    /// One of a fixed list of words.
    case choice([String])

    /// The kind a value's name implies (`<profile>`, `<dir>`, ...), so that
    /// a command's spec need not say it again.
    public static func implied(by name: String) -> ValueKind {
        switch name {
        case "profile": return .profile
        case "interface": return .interface
        case "secret": return .secret
        case "fingerprint": return .fingerprint
        case "file": return .file
        case "dir", "directory": return .directory
        case "command": return .command
        default: return .text
        }
    }

    /// The live kinds' names for `vpnctl __complete`.
    public var liveSource: String? {
        switch self {
        case .profile: return "profiles"
        case .interface: return "interfaces"
        case .secret: return "secrets"
        case .fingerprint: return "fingerprints"
        default: return nil
        }
    }
}

/// One option of a command. A nil `valueName` makes it a flag.
public struct OptionSpec: Sendable {
    public let name: String
    public let short: Character?
    public let valueName: String?
    public let help: String
    public let repeatable: Bool
    /// For completion: what the value is (`.text` for a flag).
    public let kind: ValueKind

    public init(_ name: String, short: Character? = nil, value: String? = nil, kind: ValueKind? = nil,
                repeatable: Bool = false, help: String) {
        self.name = name
        self.short = short
        self.valueName = value
        self.help = help
        self.repeatable = repeatable
        self.kind = kind ?? value.map(ValueKind.implied(by:)) ?? .text
    }

    /// "--timeout <seconds>", as used in help and in error messages.
    public var synopsis: String {
        valueName.map { "--\(name) <\($0)>" } ?? "--\(name)"
    }
}

public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let optional: Bool
    public let variadic: Bool
    /// For completion: what the value is.
    public let kind: ValueKind

    public init(_ name: String, optional: Bool = false, variadic: Bool = false, kind: ValueKind? = nil, help: String) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
        self.kind = kind ?? ValueKind.implied(by: name)
    }

    public var synopsis: String {
        let core = "<\(name)>" + (variadic ? " ..." : "")
        return optional ? "[\(core)]" : core
    }
}

/// One spec per command, used both to parse and to print help, so the two
/// cannot drift.
public struct CommandSpec: @unchecked Sendable {
    public let name: String
    /// Other words for the command (`up` for start); help lists them beside
    /// the name, and the parser resolves them to it.
    public let aliases: [String]
    public let abstract: String
    public let discussion: String
    /// Two or three command lines that show the command in use, for help.
    public let examples: [String]
    public let options: [OptionSpec]
    public let positionals: [PositionalSpec]
    public let subcommands: [CommandSpec]
    public let run: ((Invocation) throws -> ExitCode)?

    /// Whether `word` names this command, by its name or an alias.
    public func isNamed(_ word: String) -> Bool { name == word || aliases.contains(word) }

    public init(name: String, aliases: [String] = [], abstract: String, discussion: String = "", examples: [String] = [],
                options: [OptionSpec] = [],
                positionals: [PositionalSpec] = [], subcommands: [CommandSpec] = [],
                run: ((Invocation) throws -> ExitCode)? = nil) {
        self.name = name
        self.aliases = aliases
        self.abstract = abstract
        self.discussion = discussion
        self.examples = examples
        self.options = options
        self.positionals = positionals
        self.subcommands = subcommands
        self.run = run
    }
}

/// Options that every command accepts, anywhere on the line.
public enum GlobalOptionSpecs {
    public static let all: [OptionSpec] = [
        OptionSpec("json", help: L("Print one JSON value on stdout (errors too, as {\"error\":...}); indented on a terminal.")),
        OptionSpec("config-dir", value: "dir", help: L("Preferences and secrets directory (env VPNCTL_CONFIG_DIR; default /etc/vpnctl).")),
        OptionSpec("run-dir", value: "dir", help: L("Runtime state directory (env VPNCTL_RUN_DIR; default /run/vpnctl).")),
        OptionSpec("verbose", short: "v", help: L("Print each change made to the system.")),
        OptionSpec("color", value: "when", kind: .choice(ColorMode.allCases.map(\.rawValue)),
                   help: L("auto (the default: only on a terminal, not with NO_COLOR or TERM=dumb), always or never.")),
        OptionSpec("no-color", help: L("Never colour the output; the same as --color=never.")),
        OptionSpec("help", short: "h", help: L("Show help for the command.")),
    ]
}

extension CommandSpec {
    /// This spec and every one below it, depth first, each with its path of
    /// names from here (empty for this one): the one walk of the command tree.
    public func walk() -> [(path: [String], spec: CommandSpec)] {
        var out: [(path: [String], spec: CommandSpec)] = []
        func visit(_ spec: CommandSpec, _ path: [String]) {
            out.append((path, spec))
            for sub in spec.subcommands { visit(sub, path + [sub.name]) }
        }
        visit(self, [])
        return out
    }
}
