#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNService
import VPNSystem

/// Everything a command touches outside itself, injectable for tests.
public struct Context {
    public var environment: [String: String]
    public var stdout: TextSink
    public var stderr: TextSink
    /// Reads standard input to EOF, at most `limit` bytes (more is an error).
    public var readStdin: (_ limit: Int) throws -> [UInt8]
    public var stdinIsTerminal: Bool
    public var stdoutIsTerminal: Bool
    public var stderrIsTerminal: Bool
    /// Runs an editor on a file and returns its exit status.
    public var runEditor: (_ command: String, _ path: String, _ environment: [String: String]) throws -> Int32
    /// Reads a secret typed at the terminal, without echo.
    public var readSecretFromTerminal: (_ prompt: String) -> [UInt8]
    /// Columns of the terminal on stdout (nil when it is none): tables
    /// for people fit it. COLUMNS, when set, wins, as in other tools.
    public var terminalWidth: Int? = nil
    /// Reads an answer typed at the terminal (nil at end of input).
    public var readAnswer: (_ prompt: String) -> String? = { Terminal.readLine(prompt: $0) }
    /// Where the tunnel commands' use cases run; nil for the usual choice
    /// (in this process for root, else the agent). Tests set their own.
    public var service: TunnelService? = nil

    public init(environment: [String: String], stdout: TextSink, stderr: TextSink,
                readStdin: @escaping (Int) throws -> [UInt8] = { _ in [] }, stdinIsTerminal: Bool = false,
                stdoutIsTerminal: Bool = false, stderrIsTerminal: Bool = false,
                runEditor: @escaping (String, String, [String: String]) throws -> Int32 = Context.spawnEditor,
                readSecretFromTerminal: @escaping (String) -> [UInt8] = { Terminal.readLineWithoutEcho(prompt: $0) }) {
        self.environment = environment
        self.stdout = stdout
        self.stderr = stderr
        self.readStdin = readStdin
        self.stdinIsTerminal = stdinIsTerminal
        self.stdoutIsTerminal = stdoutIsTerminal
        self.stderrIsTerminal = stderrIsTerminal
        self.runEditor = runEditor
        self.readSecretFromTerminal = readSecretFromTerminal
    }

    /// The real process: fds 0, 1 and 2, and the real environment.
    public static func process() -> Context {
        FileDescriptorSink.reserveStandardDescriptors()
        var env: [String: String] = [:]
        env.reserveCapacity(64)
        var p = environ
        while let entry = p.pointee {
            // Split at the first '=' byte (a Character search costs ~5,000
            // instructions a variable, a third of status --json's own work).
            if let eq = strchr(entry, 0x3D) {
                let key = String(decoding: UnsafeRawBufferPointer(start: entry, count: eq - entry), as: UTF8.self)
                env[key] = String(cString: eq + 1)
            }
            p += 1
        }
        var context = Context(environment: env,
                              stdout: FileDescriptorSink(fd: 1),
                              stderr: FileDescriptorSink(fd: 2),
                              readStdin: { try FileSystem.readAll(fd: 0, path: "standard input", limit: $0) },
                              stdinIsTerminal: Terminal.isTerminal(0),
                              stdoutIsTerminal: Terminal.isTerminal(1),
                              stderrIsTerminal: Terminal.isTerminal(2))
        if context.stdoutIsTerminal {
            context.terminalWidth = env["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? Terminal.columns(1)
        }
        return context
    }

    /// `$EDITOR` may carry arguments ("code --wait"), so it goes through sh.
    public static func spawnEditor(_ command: String, _ path: String, _ environment: [String: String]) throws -> Int32 {
        try Spawn.runAndWait(["/bin/sh", "-c", command + " \"$1\"", "sh", path], environment: environment)
    }
}

extension Context {
    /// A yes/no question at the terminal; yes unless the answer starts with
    /// n, and no at end of input.
    public func ask(_ question: String) -> Bool {
        guard let answer = readAnswer(question) else { return false }
        return answer.drop(while: { $0 == " " || $0 == "\t" }).first.map { $0 != "n" && $0 != "N" } ?? true
    }
}

/// The options every command shares, resolved from flags and the environment.
public struct GlobalOptions {
    public var json: Bool
    public var verbose: Bool
    public var color: Bool
    public var configDirectory: String
    public var runDirectory: String

    init(_ args: ParsedArguments, _ context: Context) {
        json = args.flag("json")
        verbose = args.flag("verbose")
        let env = context.environment
        // The one colour rule is ColorMode's; a contradictory --color is
        // reported by `execute` before any command runs.
        color = ((try? ColorMode.from(args)) ?? .never).colors(terminal: context.stdoutIsTerminal, environment: env)
        configDirectory = args.value("config-dir") ?? env["VPNCTL_CONFIG_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/vpnctl"
        runDirectory = args.value("run-dir") ?? env["VPNCTL_RUN_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/run/vpnctl"
        configDirectory = GlobalOptions.normalize(configDirectory)
        runDirectory = GlobalOptions.normalize(runDirectory)
    }

    /// FileSystem.normalized ("link/." is "link"); a path ending in ".."
    /// is resolved, since its last name is no name that could be checked.
    static func normalize(_ path: String) -> String {
        let p = FileSystem.normalized(path)
        if p.split(separator: "/").last == "..", let real = realpath(p, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        return p
    }
}

/// One run of one command.
public struct Invocation {
    public let args: ParsedArguments
    public let options: GlobalOptions
    public let context: Context
    public let output: Output

    public var store: PreferencesStore {
        let store = PreferencesStore(directory: options.configDirectory)
        // A fault for the test suite, read only by a debug build: the
        // release binary has no test-only behaviour.
        #if DEBUG
        if context.environment["VPNCTL_TEST_FAULT"] == "crash-before-rename" {
            store.beforeReplace = { _exit(86) }
        }
        #endif
        return store
    }

    /// Loads the preferences (load before you read).
    public func loadedManager() throws -> ProfileManager {
        let m = ProfileManager(store: store)
        try m.load()
        return m
    }
}
