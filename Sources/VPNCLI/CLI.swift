#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNSystem

public let vpnctlVersion = "0.1.0"

/// Ends the process. The only place that exits.
public func exitProcess(_ code: Int32) -> Never {
    exit(code)
}

public enum VPNCLI {
    /// Every command, in the order `vpnctl help` lists them.
    /// Each command by name, its spec made when it is asked for: a spec
    /// holds its help, and making all of them (some 800 marked messages)
    /// cost a `status --json` a tenth of its instructions. A test keeps the
    /// names equal to the specs' own.
    static let table: [(name: String, spec: () -> CommandSpec)] = [
        ("list", { ListCommand.spec }), ("show", { ShowCommand.spec }), ("import", { ImportCommand.spec }),
        ("create", { CreateCommand.spec }), ("edit", { EditCommand.spec }), ("remove", { RemoveCommand.spec }),
        ("enable", { EnableCommand.enableSpec }), ("disable", { EnableCommand.disableSpec }), ("secret", { SecretCommand.spec }),
        ("trust", { TrustCommand.spec }), ("start", { StartCommand.spec }), ("stop", { StopCommand.spec }), ("block", { BlockCommand.spec }),
        ("toggle", { ToggleCommand.spec }), ("status", { StatusCommand.spec }), ("is-connected", { IsConnectedCommand.spec }),
        ("logs", { LogsCommand.spec }), ("genkey", { GenkeyCommand.spec }), ("pubkey", { PubkeyCommand.spec }),
        ("ondemand", { OnDemandCommand.spec }), ("verify", { VerifyCommand.spec }), ("stats", { StatsCommand.spec }),
        ("export", { ExportCommand.spec }), ("apply", { ApplyCommand.spec }), ("providers", { ProvidersCommand.spec }),
        ("can", { CanCommand.spec }), ("run", { RunCommand.spec }), ("apps", { AppsCommand.spec }), ("app", { AppCommand.spec }), ("agent", { AgentCommand.spec }), ("completion", { CompletionCommand.spec }),
    ]

    public static var commands: [CommandSpec] { table.map { $0.spec() } }

    public static var root: CommandSpec { root(with: commands) }

    static func root(with subcommands: [CommandSpec]) -> CommandSpec {
        CommandSpec(name: "vpnctl", abstract: L("Control VPN tunnels on Linux: profiles, tunnels and their status."),
                    options: [OptionSpec("version", help: L("Print the version."))],
                    subcommands: subcommands)
    }

    /// The root a command line is parsed against: only the command it names
    /// when its first word is one; every command otherwise (help, an unknown
    /// word, an option first), so that messages can list and suggest them.
    static func root(for words: [String]) -> CommandSpec {
        guard let first = words.first, let entry = table.first(where: { $0.name == first }) else { return root }
        return root(with: [entry.spec()])
    }

    /// Parses and runs one command line. `argv[0]` is the program name.
    /// Output that could not be written fails the command (see `finish`).
    public static func run(_ argv: [String], context: Context) -> Int32 {
        Localization.configure(environment: context.environment, english: speaksEnglishOnly(Array(argv.dropFirst())))
        return finish(dispatch(argv, context: context), context)
    }

    /// Whether the command line must not depend on the user's language:
    /// JSON output (errors included), and the processes that write what
    /// others read later (the supervisor's runtime records, the agent).
    static func speaksEnglishOnly(_ words: [String]) -> Bool {
        let options = words.prefix(while: { $0 != "--" })
        if let first = words.first, ["__supervise", "__agent-run"].contains(first) { return true }
        if words.first == "agent" && !options.contains("--help") && !options.contains("-h") { return true }
        return options.contains("--json")
    }

    /// A failed write to stdout is an error, as in coreutils: "vpnctl: write
    /// error: No space left on device" and exit 1 (or the command's own
    /// failure code). A reader that went away (EPIPE, when SIGPIPE is ignored;
    /// otherwise SIGPIPE ends the process with status 141) is not worth a message.
    static func finish(_ code: Int32, _ context: Context) -> Int32 {
        guard let failure = context.stdout.failure else { return code }
        if failure.rawValue != EPIPE {
            let text = failure.description
            context.stderr.write("vpnctl: " + L("write error: \(text.prefix(1).uppercased() + text.dropFirst())") + "\n")
        }
        return code == 0 ? ExitCode.failure.rawValue : code
    }

    static func dispatch(_ argv: [String], context: Context) -> Int32 {
        let words = Array(argv.dropFirst())
        if words.first == "__supervise" { return InternalCommands.supervise(Array(words.dropFirst()), context) }
        if words.first == "__agent-run" { return AgentCommand.worker(Array(words.dropFirst()), context) }
        if words.first == "__probe" { return InternalCommands.probe(Array(words.dropFirst())) }
        if words.first == "__complete" { return CompletionCommand.complete(Array(words.dropFirst()), context) }
        let parser = ArgumentParser(root: root(for: words))
        let wantsJSON = words.prefix(while: { $0 != "--" }).contains("--json")
        let early = Output(context: context, json: wantsJSON, color: false)
        let outcome: ParseOutcome
        do {
            outcome = try parser.parse(words)
        } catch {
            return report(error, to: early)
        }
        switch outcome {
        case .version:
            if wantsJSON { early.emit(VersionInfo(version: vpnctlVersion)) } else { early.line("vpnctl \(vpnctlVersion)") }
            return 0
        case .help(let path):
            guard let spec = path == ["help"] ? Help.helpSpec : parser.spec(for: path) else {
                let close = Suggest.closest(to: path.joined(separator: " "), among: commands.map(\.name), limit: 3)
                early.error(VPNError(.usage, L("No help for unknown command \(path.joined(separator: " ").quotedForMessage)") +
                                     ParseState.didYouMean(close), hint: L("See 'vpnctl help'.")))
                return ExitCode.usage.rawValue
            }
            let canonical = path == ["help"] ? path : parser.canonical(path)
            if wantsJSON { early.emit(HelpJSON(spec, path: canonical)) } else { early.line(Help.render(spec, path: canonical)) }
            return 0
        case .run(let spec, let args):
            return execute(spec, args, context, early: early)
        }
    }

    /// Runs a parsed command: its options resolved, its output set up, and
    /// any error it throws reported with its exit code.
    static func execute(_ spec: CommandSpec, _ args: ParsedArguments, _ context: Context, early: Output) -> Int32 {
        let options = GlobalOptions(args, context)
        let colorMode: ColorMode
        do { colorMode = try ColorMode.from(args) } catch {
            return report(error, to: early)
        }
        let output = Output(context: context, json: options.json, color: colorMode)
        do {
            return try spec.run!(Invocation(args: args, options: options, context: context, output: output)).rawValue
        } catch {
            return report(error, to: output)
        }
    }

    /// Prints any error as the VPNError it stands for and returns its exit
    /// code (a permission error from any layer is 11, not 1).
    static func report(_ error: Error, to output: Output) -> Int32 {
        let e = VPNError.from(error)
        output.error(e)
        return e.code.rawValue
    }
}

/// `help --json`: the spec a script or an editor plugin can read.
struct HelpJSON: Encodable {
    struct Option: Encodable {
        let name: String
        let value: String?
        let help: String
    }
    var schemaVersion = 1
    let command: String
    let aliases: [String]
    let abstract: String
    let usage: String
    let options: [Option]
    let examples: [String]
    let subcommands: [String]

    init(_ spec: CommandSpec, path: [String]) {
        let name = (["vpnctl"] + path).joined(separator: " ")
        command = name
        aliases = spec.aliases
        abstract = spec.abstract
        usage = Help.usage(spec, name: name)
        options = (spec.options + (path.isEmpty ? GlobalOptionSpecs.all : [])).map { Option(name: $0.name, value: $0.valueName, help: $0.help) }
        examples = spec.examples
        subcommands = spec.subcommands.map(\.name)
    }
}

struct VersionInfo: Encodable {
    var schemaVersion = 1
    let version: String
}
