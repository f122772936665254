import VPNCore
import VPNSystem

/// `vpnctl completion bash|zsh|fish` prints a completion script generated
/// from the command specs; the hidden `vpnctl __complete <source>` gives the
/// scripts the names that only the live system knows.
enum CompletionCommand {
    static let spec = CommandSpec(
        name: "completion", abstract: L("Print a shell completion script for bash, zsh or fish."),
        discussion: L("""
        The script is generated from vpnctl's own command specs: every command, option and
        value. Profile, interface, secret and trust-anchor names are completed from the live
        system (through the hidden 'vpnctl __complete'), honouring --config-dir and --run-dir
        typed on the line. 'make install' and the Debian package install the scripts where
        each shell looks for them; to try one in the running shell:
          source <(vpnctl completion bash)        (zsh: the same with zsh)
          vpnctl completion fish | source
        """),
        examples: [
            "vpnctl completion bash > /etc/bash_completion.d/vpnctl",
            "vpnctl completion fish > ~/.config/fish/completions/vpnctl.fish",
        ],
        positionals: [PositionalSpec("shell", kind: .choice(CompletionShell.allCases.map(\.rawValue)), help: L("bash, zsh or fish."))],
        run: run)

    struct Result: Encodable {
        var schemaVersion = 1
        let shell: String
        let script: String
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let word = inv.args.positionals[0]
        guard let shell = CompletionShell(rawValue: word) else {
            throw VPNError.usage(L("Unknown shell \(word.quotedForMessage); expected bash, zsh or fish"), hint: L("See 'vpnctl help completion'."))
        }
        let script = CompletionScripts(model: CompletionModel(root: VPNCLI.root)).script(for: shell)
        if inv.options.json {
            inv.output.emit(Result(shell: shell.rawValue, script: script))
        } else {
            // Written as it is: the script is ours, and Output.line would
            // escape the tabs and quotes a script may need.
            inv.context.stdout.write(script)
        }
        return .ok
    }

    /// `vpnctl __complete [--config-dir DIR] [--run-dir DIR] SOURCE [ARG]`:
    /// one candidate a line, nothing else on stdout. Sources: profiles,
    /// interfaces, secrets PROFILE, fingerprints, commands. A failure (no
    /// permission to read the store, say) prints no candidates and says why
    /// on stderr, which the scripts discard.
    static func complete(_ words: [String], _ context: Context) -> Int32 {
        var args = ParsedArguments()
        var rest: [String] = []
        var i = 0
        while i < words.count {
            let w = words[i]
            i += 1
            if let eq = w.firstIndex(of: "="), ["--config-dir", "--run-dir"].contains(String(w[..<eq])) {
                args.values[String(w[..<eq].dropFirst(2))] = [String(w[w.index(after: eq)...])]
            } else if w == "--config-dir" || w == "--run-dir", i < words.count {
                args.values[String(w.dropFirst(2))] = [words[i]]
                i += 1
            } else {
                rest.append(w)
            }
        }
        let options = GlobalOptions(args, context)
        do {
            let candidates = try self.candidates(rest, options: options, context: context)
            // A name with a line break would read as two candidates; names
            // are validated, but a hand-edited file is not trusted here either.
            for c in candidates where !c.isEmpty && !c.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                context.stdout.write(c + "\n")
            }
            return ExitCode.ok.rawValue
        } catch let e as VPNError {
            context.stderr.write("vpnctl __complete: \(e.message)\n".escapingControls(keepLineBreaks: true))
            return e.code.rawValue
        } catch {
            context.stderr.write("vpnctl __complete: \(error)\n".escapingControls(keepLineBreaks: true))
            return ExitCode.failure.rawValue
        }
    }

    static let sources = ["profiles", "interfaces", "secrets", "fingerprints", "commands"]

    static func candidates(_ words: [String], options: GlobalOptions, context: Context) throws -> [String] {
        let store = PreferencesStore(directory: options.configDirectory)
        func loaded() throws -> ProfileManager {
            let m = ProfileManager(store: store)
            try m.load()
            return m
        }
        switch (words.first, words.count) {
        case ("profiles", 1):
            return try loaded().profiles.map(\.name)
        case ("interfaces", 1):
            let path = context.environment["VPNCTL_PROC_NET_DEV"].flatMap { $0.isEmpty ? nil : $0 } ?? ProcNetDev.defaultPath
            do { return try ProcNetDev.read(path: path).map(\.name) } catch { throw VPNError.from(error) }
        case ("secrets", 2):
            // The names the profile refers to, then any others stored for it.
            let profile = try loaded().profile(named: words[1])
            var names = profile.secretReferences.map(\.name)
            let stored: [String]
            do { stored = try store.secrets.names(profile.id) } catch { stored = [] }
            for n in stored where !names.contains(n) { names.append(n) }
            return names
        case ("fingerprints", 1):
            let trust = TrustStore(configDirectory: options.configDirectory)
            let files: [String]
            do { files = try FileSystem.list(trust.directory) } catch { throw VPNError(.configurationReadWriteFailed, "\(error)") }
            return files.filter { $0.hasSuffix(".pem") }.map { String($0.dropLast(4)) }.filter(TrustAnchor.isFingerprint)
        case ("commands", 1):
            return VPNCLI.commands.map(\.name) + ["help"]
        default:
            throw VPNError.usage("usage: vpnctl __complete [--config-dir DIR] [--run-dir DIR] " // English: a synopsis for completion scripts
                                 + "profiles | interfaces | secrets PROFILE | fingerprints | commands")
        }
    }
}

public enum CompletionShell: String, CaseIterable, Sendable {
    case bash, zsh, fish
}
