import VPNCore

/// One option of a command. A nil `valueName` makes it a flag.
public struct OptionSpec: Sendable {
    public let name: String
    public let short: Character?
    public let valueName: String?
    public let help: String
    public let repeatable: Bool

    public init(_ name: String, short: Character? = nil, value: String? = nil, repeatable: Bool = false, help: String) {
        self.name = name
        self.short = short
        self.valueName = value
        self.help = help
        self.repeatable = repeatable
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

    public init(_ name: String, optional: Bool = false, variadic: Bool = false, help: String) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
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
    public let abstract: String
    public let discussion: String
    public let options: [OptionSpec]
    public let positionals: [PositionalSpec]
    public let subcommands: [CommandSpec]
    public let run: ((Invocation) throws -> ExitCode)?

    public init(name: String, abstract: String, discussion: String = "", options: [OptionSpec] = [],
                positionals: [PositionalSpec] = [], subcommands: [CommandSpec] = [],
                run: ((Invocation) throws -> ExitCode)? = nil) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.options = options
        self.positionals = positionals
        self.subcommands = subcommands
        self.run = run
    }
}

/// Options that every command accepts, anywhere on the line.
public enum GlobalOptionSpecs {
    public static let all: [OptionSpec] = [
        OptionSpec("json", help: "Print one JSON value on stdout (errors too, as {\"error\":...})."),
        OptionSpec("config-dir", value: "dir", help: "Preferences and secrets directory (env VPNCTL_CONFIG_DIR; default /etc/vpnctl)."),
        OptionSpec("run-dir", value: "dir", help: "Runtime state directory (env VPNCTL_RUN_DIR; default /run/vpnctl)."),
        OptionSpec("verbose", short: "v", help: "Print each change made to the system."),
        OptionSpec("no-color", help: "Never colour the output (also NO_COLOR). Colour is used only on a terminal."),
        OptionSpec("help", short: "h", help: "Show help for the command."),
    ]
}
