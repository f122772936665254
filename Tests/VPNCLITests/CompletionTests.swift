import Foundation
import Testing
@testable import VPNCLI
import VPNCore
import VPNSystem

/// Completion scripts from the specs, the hidden `__complete`, and colour.
@Suite struct CompletionTests {
    let model = CompletionModel(root: VPNCLI.root)

    @Test func overridesNameRealPositionals() {
        for key in CompletionModel.overrides.keys {
            let found = model.nodes.contains { node in node.spec.positionals.contains { "\(node.name) <\($0.name)>" == key } }
            #expect(found, "override '\(key)' names no positional")
        }
        let secretSet = model.nodes.first { $0.name == "secret set" }
        #expect(secretSet?.positionals.map(\.kind) == [.profile, .secret])
    }

    /// The scripts skip an option's value by the option's name alone.
    @Test func anOptionNameMeansOneThingEverywhere() {
        var seen: [String: (Bool, ValueKind)] = [:]
        for option in model.globals + model.nodes.flatMap(\.spec.options) {
            let this = (option.valueName != nil, option.kind)
            if let before = seen[option.name] {
                #expect(before.0 == this.0 && before.1 == this.1, "--\(option.name) is a flag in one command and not in another, or its kind differs")
            }
            seen[option.name] = this
        }
        for node in model.nodes {
            for case .choice(let words) in node.positionals.map(\.kind) + node.spec.options.map(\.kind) {
                #expect(words.allSatisfy { !$0.contains(" ") && !$0.contains(",") && !$0.isEmpty })
            }
        }
    }

    @Test func scriptsNameEveryCommandAndOption() {
        let scripts = CompletionShell.allCases.map { (shell: $0, text: Harness().run("completion", $0.rawValue).stdout) }
        for (shell, text) in scripts {
            #expect(text.contains("vpnctl \(vpnctlVersion)"), "\(shell)")
            for node in model.nodes {
                for name in node.path { #expect(text.contains(name), "\(shell) lacks \(name)") }
                for option in node.spec.options + model.globals {
                    #expect(text.contains(shell == .fish ? "-l \(option.name)" : "--\(option.name)"), "\(shell) lacks --\(option.name)")
                }
            }
        }
        #expect(Harness().run("completion", "tcsh").code == ExitCode.usage.rawValue)
        let json = jsonObject(Harness().run("completion", "bash", "--json").stdout)
        #expect(json["shell"] as? String == "bash" && (json["script"] as? String)?.contains("complete -F _vpnctl vpnctl") == true)
    }

    // MARK: bash, driven as bash drives it

    /// Sources the script and calls _vpnctl with COMP_WORDS/COMP_CWORD set;
    /// returns COMPREPLY, one word a line.
    func bash(_ words: [String]) throws -> [String] {
        let script = Harness().run("completion", "bash").stdout
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let driver = script + """

        COMP_WORDS=(\(quoted)); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMPREPLY=(); _vpnctl
        printf '%s\\n' "${COMPREPLY[@]}"
        """
        let r = try ProfilePageTests.run(["/bin/bash", "--norc", "--noprofile", "-s"], stdin: driver)
        #expect(r.code == 0, "bash: \(r.err)")
        return r.out.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletesFromTheSpecs() throws {
        let r = try ProfilePageTests.run(["/bin/bash", "--norc", "--noprofile", "-s"],
                                         stdin: Harness().run("completion", "bash").stdout + "\ncomplete -p vpnctl\n")
        #expect(r.out == "complete -F _vpnctl vpnctl\n", "complete -p: \(r.out)\(r.err)")
        #expect(try bash(["vpnctl", "st"]) == ["start", "stop", "status", "stats"])
        #expect(try bash(["vpnctl", "secret", ""]) == ["set", "list", "remove", "rm"])
        // An alias is offered, and completes after it as its command does.
        #expect(try bash(["vpnctl", "u"]) == ["up"])
        #expect(try bash(["vpnctl", "up", "--t"]) == ["--timeout"])
        #expect(try bash(["vpnctl", "start", "--t"]) == ["--timeout"])
        #expect(try bash(["vpnctl", "--json", "stop", "--"]).contains("--no-wait"))
        // COMP_WORDBREAKS splits "--color=al" at the '='.
        #expect(try bash(["vpnctl", "--color", "=", "al"]) == ["always"])
        #expect(try bash(["vpnctl", "status", "--color", ""]) == ["auto", "always", "never"])
        #expect(try bash(["vpnctl", "completion", ""]) == ["bash", "zsh", "fish"])
        #expect(try bash(["vpnctl", "help", "is"]) == ["is-connected"])
        #expect(try bash(["vpnctl", "help", "secret", "l"]) == ["list"])
        // A value option's value is skipped: "10" is not the profile.
        #expect(try bash(["vpnctl", "start", "--timeout", "10", "--w"]) == ["--wait"])
        #expect(try bash(["vpnctl", "bogus", ""]) == [])
    }

    /// Values from a fixed list: create's protocol after its name, --auth
    /// (before or after the protocol, as a word of its own or after '='),
    /// and can's action.
    @Test func bashCompletesFixedValues() throws {
        #expect(try bash(["vpnctl", "create", "x", ""]) == ["wireguard", "openvpn", "ikev2"])
        #expect(try bash(["vpnctl", "create", "x", "i"]) == ["ikev2"])
        #expect(try bash(["vpnctl", "--json", "create", "x", ""]) == ["wireguard", "openvpn", "ikev2"])
        #expect(try bash(["vpnctl", "create", ""]) == [], "the new name is free text")
        #expect(try bash(["vpnctl", "create", "x", "ikev2", ""]) == [], "nothing after the protocol")
        #expect(try bash(["vpnctl", "create", "x", "ikev2", "--auth", ""]) == ["psk", "eap", "certificate"])
        #expect(try bash(["vpnctl", "create", "x", "--auth", "e"]) == ["eap"])
        #expect(try bash(["vpnctl", "create", "x", "ikev2", "--auth", "=", "c"]) == ["certificate"])
        #expect(try bash(["vpnctl", "create", "x", "ikev2", "--auth=p"]) == ["--auth=psk"])
        #expect(try bash(["vpnctl", "create", "x", "ikev2", "--auth", "psk", "--server", "h", "--a"]) == ["--auth", "--address", "--allowed-ips"])
        #expect(try bash(["vpnctl", "create", "x", "openvpn", "--proto", "udp"]) == ["udp", "udp4", "udp6"])
        #expect(try bash(["vpnctl", "export", "x", "--format", "w"]) == ["wg-quick"])
        #expect(try bash(["vpnctl", "can", ""]) == PolicyAction.allCases.map(\.rawValue))
        #expect(try bash(["vpnctl", "can", "st"]) == ["start", "stop", "status", "stats"])
    }

    /// Every option or positional whose values are a fixed list says so in
    /// its kind, so that the three scripts offer them.
    @Test func fixedValuesAreChoices() {
        func node(_ name: String) -> CompletionModel.Node? { model.nodes.first { $0.name == name } }
        #expect(node("create")?.positionals.map(\.kind) == [.text, .choice(["wireguard", "openvpn", "ikev2"])])
        #expect(node("create")?.spec.options.first { $0.name == "auth" }?.kind == .choice(["psk", "eap", "certificate"]))
        #expect(node("can")?.positionals.map(\.kind) == [.choice(PolicyAction.allCases.map(\.rawValue)), .profile])
        #expect(node("completion")?.positionals.map(\.kind) == [.choice(["bash", "zsh", "fish"])])
        let kinds = Dictionary(model.valueOptions.map { ($0.option.name, $0.kind) }, uniquingKeysWith: { a, _ in a })
        #expect(kinds["color"] == .choice(["auto", "always", "never"]))
        #expect(kinds["format"] == .choice(ProfileExport.Format.allCases.map(\.rawValue)))
        #expect(kinds["proto"] == .choice(OpenVPNImport.transports))
    }

    @Test(.enabled(if: ProfilePageTests.tool("zsh") != nil, "zsh is not installed"))
    func zshReadsItsScript() throws {
        let script = Harness().run("completion", "zsh").stdout
        #expect(script.hasPrefix("#compdef vpnctl\n"))
        let check = try ProfilePageTests.run([ProfilePageTests.tool("zsh")!, "-n"], stdin: script)
        #expect(check.code == 0 && check.err.isEmpty, "zsh -n: \(check.err)")
        // Loaded into a shell with compinit, it registers itself.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vpnctl-zsh-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        FileManager.default.createFile(atPath: dir + "/_vpnctl", contents: Data(script.utf8))
        let load = try ProfilePageTests.run([ProfilePageTests.tool("zsh")!, "-f", "-s"], stdin: """
            autoload -Uz compinit && compinit -u -d \(dir)/zcompdump
            source \(dir)/_vpnctl
            print -r -- ${_comps[vpnctl]}
            """)
        #expect(load.out == "_vpnctl\n" && load.err.isEmpty, "zsh: \(load.out)\(load.err)")
    }

    /// Types each line and a Tab into an interactive zsh (on a pty, through
    /// zsh/zpty) with the script on its fpath; returns, for each line, the
    /// words the script offered (compadd's matches, each once).
    func zsh(_ lines: [String]) throws -> [[String]] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vpnctl-zpty-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        FileManager.default.createFile(atPath: dir + "/_vpnctl", contents: Data(Harness().run("completion", "zsh").stdout.utf8))
        // The Tab runs a widget that calls complete-word, writes what compadd
        // matched, and clears the line; a marker printed at the end of the
        // typed input says all of it was read.
        let driver = #"""
            zmodload zsh/zpty
            dir=$1; shift
            zpty z zsh -f -i
            zpty -w z "PS1=''; RPS1=''; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D; unsetopt autolist beep"
            zpty -w z "compadd() { local -a hits; builtin compadd -O hits \"\$@\"; (( \${#hits} )) && print -rl -- \${hits} >> $dir/hits; builtin compadd \"\$@\" }"
            zpty -w z "__cap() { : > $dir/hits; zle complete-word; print -r -- \${(j: :)\${(fu)\"\$(<$dir/hits)\"}} >> $dir/out; zle kill-whole-line }; zle -N __cap; bindkey '^I' __cap"
            zpty -w z 'print __DO""NE__'
            while zpty -r z chunk; do [[ $chunk == *__DONE__* ]] && break; done
            : > $dir/out
            for line in "$@"; do zpty -w -n z "$line"$'\t'; done
            zpty -w z 'print __DO""NE__'
            while zpty -r z chunk; do [[ $chunk == *__DONE__* ]] && break; done
            zpty -d z
            cat $dir/out
            """#
        FileManager.default.createFile(atPath: dir + "/driver.zsh", contents: Data(driver.utf8))
        let r = try ProfilePageTests.run(["/usr/bin/timeout", "30", ProfilePageTests.tool("zsh")!, "-f", dir + "/driver.zsh", dir] + lines)
        #expect(r.code == 0, "zsh: \(r.err)")
        return r.out.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0.split(separator: " ").map(String.init) }
    }

    @Test(.enabled(if: ProfilePageTests.tool("zsh") != nil && ProfilePageTests.tool("timeout") != nil, "zsh is not installed"))
    func zshCompletesFromTheSpecs() throws {
        let got = try zsh(["vpnctl st", "vpnctl create x ", "vpnctl create x ikev2 --auth ", "vpnctl create x --auth=c",
                           "vpnctl create x wireguard --proto udp", "vpnctl can st", "vpnctl completion "])
        #expect(got == [["start", "stop", "status", "stats"], ["wireguard", "openvpn", "ikev2"], ["psk", "eap", "certificate"],
                        ["certificate"], ["udp", "udp4", "udp6"], ["start", "stop", "status", "stats"], ["bash", "zsh", "fish"]], "zsh: \(got)")
    }

    @Test(.enabled(if: ProfilePageTests.tool("fish") != nil, "fish is not installed"))
    func fishReadsItsScriptAndCompletes() throws {
        let script = Harness().run("completion", "fish").stdout
        let check = try ProfilePageTests.run([ProfilePageTests.tool("fish")!, "-n"], stdin: script)
        #expect(check.code == 0 && check.err.isEmpty, "fish -n: \(check.err)")
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("vpnctl-fish-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: home) }
        let r = try ProfilePageTests.run([ProfilePageTests.tool("fish")!, "--no-config", "-c", """
            source; for line in 'vpnctl st' 'vpnctl secret ' 'vpnctl --color ' 'vpnctl help secret ' 'vpnctl create x ' \\
                    'vpnctl create x ikev2 --auth ' 'vpnctl create x --auth=c' 'vpnctl can st'
                complete -C "$line" | string replace -r '\\t.*' '' | string join ' '
            end
            """], stdin: script, environment: ["HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home, "PATH": "/usr/bin:/bin"])
        #expect(r.out == "start stats status stop\nlist remove rm set\nalways auto never\nlist remove rm set\nikev2 openvpn wireguard\n"
                + "certificate eap psk\n--auth=certificate\nstart stats status stop\n", "fish: \(r.out)\(r.err)")
    }

    // MARK: __complete

    @Test func liveNames() throws {
        let h = Harness()
        #expect(h.run("__complete", "profiles").stdout == "")
        let conf = h.write("p.conf", """
            [Interface]
            PrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=
            Address = 10.0.0.2/32
            [Peer]
            PublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=
            AllowedIPs = 0.0.0.0/0
            Endpoint = 198.18.0.1:51820
            """)
        #expect(h.run("import", conf, "--name", "office").code == 0)
        #expect(h.run("import", conf, "--name", "my home").code == 0)
        #expect(h.run("__complete", "profiles").stdout == "office\nmy home\n")
        #expect(h.run("__complete", "--config-dir", h.root + "/elsewhere", "profiles").stdout == "")
        #expect(h.run("__complete", "--config-dir=" + h.configDir, "profiles").stdout == "office\nmy home\n")
        #expect(h.run("__complete", "secrets", "my home").stdout == "private-key\n")
        let unknown = h.run("__complete", "secrets", "nope")
        #expect(unknown.stdout == "" && unknown.code == ExitCode.configurationUnknown.rawValue)
        #expect(h.run("__complete", "bogus").code == ExitCode.usage.rawValue)
        #expect(h.run("__complete", "commands").stdout.split(separator: "\n").map(String.init) == model.commandNames)

        try FileManager.default.createDirectory(atPath: h.configDir + "/trust", withIntermediateDirectories: true)
        let fp = String(repeating: "ab", count: 32)
        for name in ["\(fp).pem", "README", "notafingerprint.pem"] {
            FileManager.default.createFile(atPath: h.configDir + "/trust/" + name, contents: Data())
        }
        #expect(h.run("__complete", "fingerprints").stdout == fp + "\n")

        h.environment["VPNCTL_PROC_NET_DEV"] = h.write("dev", """
            Inter-|   Receive                                                |  Transmit
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
                lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0
             utun0: 2 2 0 0 0 0 0 0 2 2 0 0 0 0 0 0
            """)
        #expect(h.run("__complete", "interfaces").stdout == "lo\nutun0\n")
    }

    // MARK: colour

    func colored(_ args: [String], stdoutTTY: Bool = false, stderrTTY: Bool = false, env: [String: String] = [:]) -> (code: Int32, err: String) {
        let out = BufferSink(), err = BufferSink()
        let root = Harness()
        var environment = ["VPNCTL_CONFIG_DIR": root.configDir, "VPNCTL_RUN_DIR": root.runDir]
        environment.merge(env) { $1 }
        let context = Context(environment: environment, stdout: out, stderr: err,
                              stdoutIsTerminal: stdoutTTY, stderrIsTerminal: stderrTTY)
        let code = VPNCLI.run(["vpnctl"] + args, context: context)
        return (code, err.text)
    }

    @Test func colourFollowsTheTerminalAndTheOptions() {
        let red = "\u{1B}[31m"
        // `show nope` fails with a message on stderr, red when coloured.
        #expect(!colored(["show", "nope"]).err.contains(red), "auto, not a terminal")
        #expect(colored(["show", "nope"], stderrTTY: true).err.contains(red), "auto, stderr a terminal")
        #expect(!colored(["show", "nope"], stderrTTY: true, env: ["NO_COLOR": "1"]).err.contains(red), "NO_COLOR")
        #expect(colored(["show", "nope"], stderrTTY: true, env: ["NO_COLOR": ""]).err.contains(red), "empty NO_COLOR")
        #expect(!colored(["show", "nope"], stderrTTY: true, env: ["TERM": "dumb"]).err.contains(red), "TERM=dumb")
        #expect(colored(["show", "nope", "--color=always"]).err.contains(red), "always, a pipe")
        #expect(colored(["show", "nope", "--color", "always"], env: ["NO_COLOR": "1"]).err.contains(red), "always beats NO_COLOR")
        #expect(!colored(["show", "nope", "--color=never"], stderrTTY: true).err.contains(red))
        #expect(!colored(["show", "nope", "--no-color"], stderrTTY: true).err.contains(red))
        #expect(colored(["show", "nope", "--no-color", "--color=never"]).code == ExitCode.configurationUnknown.rawValue)
        let both = colored(["list", "--no-color", "--color=always"])
        #expect(both.code == ExitCode.usage.rawValue && both.err.contains("cannot be used together"))
        let bad = colored(["list", "--color=sometimes"])
        #expect(bad.code == ExitCode.usage.rawValue && bad.err.contains("auto, always or never"))
    }

    @Test func colourModeRules() {
        #expect(ColorMode.auto.colors(terminal: true, environment: [:]))
        #expect(!ColorMode.auto.colors(terminal: false, environment: [:]))
        #expect(!ColorMode.auto.colors(terminal: true, environment: ["NO_COLOR": "0"]))
        #expect(ColorMode.always.colors(terminal: false, environment: ["NO_COLOR": "1", "TERM": "dumb"]))
        #expect(!ColorMode.never.colors(terminal: true, environment: [:]))
    }
}
