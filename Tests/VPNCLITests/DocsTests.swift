import Foundation
import Testing
@testable import VPNCLI
import VPNCore

/// Keeps the man page and the README in step with the code.
@Suite struct DocsTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func read(_ path: String) throws -> String {
        try String(contentsOf: DocsTests.repo.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every command `vpnctl help` lists, and every subcommand, has a section in the man page.
    @Test func manPageCoversEveryCommand() throws {
        let man = try read("man/vpnctl.1")
        let help = Harness().run("help").stdout
        let listed = help.components(separatedBy: "COMMANDS:\n")[1].components(separatedBy: "\n\n")[0]
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces).split(separator: " ")[0] }
        #expect(listed.count == VPNCLI.commands.count)
        for name in listed {
            let spec = try #require(VPNCLI.commands.first { $0.name == name })
            let heads = spec.subcommands.isEmpty ? [String(name)] : spec.subcommands.map { "\(name) \($0.name)" }
            for head in heads {
                let roff = head.replacingOccurrences(of: "-", with: "\\-")
                #expect(man.contains(".SS \"\(roff)"), "man page has no section for '\(head)'")
            }
            for option in spec.options + spec.subcommands.flatMap(\.options) {
                #expect(man.contains("\\-\\-\(option.name.replacingOccurrences(of: "-", with: "\\-"))"), "man page lacks --\(option.name)")
            }
        }
        for option in GlobalOptionSpecs.all {
            #expect(man.contains("\\-\\-\(option.name.replacingOccurrences(of: "-", with: "\\-"))"), "man page lacks --\(option.name)")
        }
        for env in ["VPNCTL_CONFIG_DIR", "VPNCTL_RUN_DIR", "NO_COLOR", "VISUAL", "EDITOR"] {
            #expect(man.contains(env), "man page lacks \(env)")
        }
    }

    /// The README's tour shows every command, and names every global option.
    /// Every example in help is a command line the parser accepts.
    @Test func everyHelpExampleParses() throws {
        let parser = ArgumentParser(root: VPNCLI.root)
        let specs = VPNCLI.root.walk().dropFirst().map(\.spec)
        #expect(specs.filter { $0.run != nil }.allSatisfy { !$0.examples.isEmpty }, "a command without examples")
        for spec in specs + [Help.helpSpec] {
            for example in spec.examples {
                // The words up to a redirection, a pipe, && or a comment.
                let words = example.split(separator: " ").map(String.init)
                    .prefix { !["<", ">", "|", "&&", "#"].contains($0) }
                #expect(words.first == "vpnctl" || words.first?.contains("=") == true, "\(example)")
                let args = Array(words.drop { $0 != "vpnctl" }.dropFirst())
                #expect(throws: Never.self, "\(example)") { _ = try parser.parse(args) }
            }
        }
    }

    @Test func readmeNamesEveryCommandAndGlobalOption() throws {
        let readme = try read("README.md")
        for command in VPNCLI.commands {
            #expect(readme.contains("vpnctl \(command.name) "), "README never shows 'vpnctl \(command.name)'")
        }
        for option in GlobalOptionSpecs.all where option.name != "help" {
            #expect(readme.contains("`--\(option.name)"), "README does not name --\(option.name)")
        }
    }

    @Test func exitCodeTablesMatchTheCode() throws {
        let man = try read("man/vpnctl.1")
        let readme = try read("README.md")
        for code in ExitCode.allCases {
            #expect(man.contains(".IP \(code.rawValue)\n\(code.meaning) (\\fB\(code.name)\\fR)"), "man page: exit \(code.rawValue)")
            #expect(readme.contains("| \(code.rawValue) | \(code.meaning) | `\(code.name)` |"), "README: exit \(code.rawValue)")
        }
    }

    /// The README's set-up block names the test command; `.ci/run` runs that
    /// command as a command line of its own (not in a comment or an echo).
    @Test func readmeAndCIUseTheSameTestCommand() throws {
        let readme = try read("README.md")
        let setUp = try #require(readme.components(separatedBy: "## Set-up")[safe: 1]?.components(separatedBy: "```sh\n")[safe: 1]?
            .components(separatedBy: "```")[safe: 0], "README has no Set-up code block")
        let commands = setUp.split(separator: "\n").map { $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
        #expect(commands == ["make demo", "make test"], "the set-up is two commands: \(commands)")
        let ciLines = try read(".ci/run").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(ciLines.contains("make test"), ".ci/run does not run 'make test': \(ciLines)")
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

/// Keeps vpnctl-profile(5) in step with the model, and both pages clean.
@Suite struct ProfilePageTests {
    static let pages = ["man/vpnctl.1", "man/vpnctl-profile.5", "man/vpnctl-agent.8", "man/vpnctl-dbus.8"]

    func read(_ path: String) throws -> String {
        try String(contentsOf: DocsTests.repo.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every key the decoder reads (`r.string("mtu")`, `r.required("id")`, ...)
    /// and every key an encoder writes (`enum CodingKeys`), taken from the
    /// model's source, so that a new field cannot be left out of the page.
    func modelKeys() throws -> Set<String> {
        var keys = Set<String>()
        let decoder = try read("Sources/VPNCore/Model/ModelDecoding.swift")
        let call = try Regex(#"\.(?:string|int|int32|bool|strings|required|optional|date|uint64|stringArray)\("([A-Za-z0-9]+)""#)
        for m in decoder.matches(of: call) { keys.insert(String(m.output[1].substring!)) }
        let codingKeys = try Regex(#"enum CodingKeys: String, CodingKey \{([^}]*)\}"#)
        for file in ["Sources/VPNCore/Model/Profile.swift", "Sources/VPNCore/Model/ProtocolConfiguration.swift",
                     "Sources/VPNCore/Tunnel/RuntimeRecord.swift", "Sources/VPNCore/Model/ModelDecoding.swift"] {
            for m in try read(file).matches(of: codingKeys) {
                let body = String(m.output[1].substring!).replacingOccurrences(of: "case", with: " ")
                for word in body.split(whereSeparator: { ", \n`".contains($0) }) where !word.isEmpty { keys.insert(String(word)) }
            }
        }
        return keys
    }

    /// The words a field may take: `oneOf(X.self, [.a, .b])` in the decoder,
    /// and the enums the code can list.
    func modelValues() throws -> Set<String> {
        var values = Set<String>()
        let decoder = try read("Sources/VPNCore/Model/ModelDecoding.swift")
        let oneOf = try Regex(#"oneOf\(\w+\.self, \[([^\]]*)\]\)"#)
        for m in decoder.matches(of: oneOf) {
            for word in String(m.output[1].substring!).split(separator: ",") {
                values.insert(word.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ".")))
            }
        }
        values.formUnion(ProtocolConfiguration.Kind.allCases.map(\.rawValue))
        values.formUnion(StopReason.allCases.map(\.rawValue))
        values.formUnion(VPNStatus.allCases.filter { $0 != .invalid }.map(\.name))
        values.formUnion((1...19).compactMap { ConnectionError.Kind(rawValue: $0)?.name })
        return values
    }

    /// A word the page sets in bold: `.B word`, `.BR word ,` or `\fBword\fR`.
    func bold(_ word: String, in page: String) -> Bool {
        let roff = word.replacingOccurrences(of: "-", with: "\\-")
        return page.contains(".B \(roff)\n") || page.contains(".BR \(roff) ") || page.contains(".B \(roff) ")
            || page.contains("\\fB\(roff)\\fR")
    }

    @Test func everyKeyOfTheModelIsDescribed() throws {
        let page = try read("man/vpnctl-profile.5")
        let keys = try modelKeys()
        // The regexes found the model: a few keys every version has.
        for known in ["schemaVersion", "privateKeySecret", "caFingerprints", "providerIdentifier", "supervisorPid", "previous"] {
            #expect(keys.contains(known), "the key scan missed \(known): the decoder's shape changed")
        }
        for key in keys.sorted() {
            #expect(bold(key, in: page), "vpnctl-profile(5) does not describe the key '\(key)'")
        }
    }

    @Test func everyValueOfTheModelIsNamed() throws {
        let page = try read("man/vpnctl-profile.5")
        let values = try modelValues()
        #expect(values.contains("evaluateConnection") && values.contains("sharedSecret") && values.contains("cellular"))
        for value in values.sorted() {
            #expect(bold(value, in: page), "vpnctl-profile(5) does not name the value '\(value)'")
        }
    }

    /// The page's examples, unescaped: each `.EX` block.
    func examples() throws -> [String] {
        let page = try read("man/vpnctl-profile.5")
        return page.components(separatedBy: ".EX\n").dropFirst().map { block in
            block.components(separatedBy: ".EE")[0]
                .replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\e", with: "\\")
        }
    }

    @Test func theExamplesAreWhatVPNCtlReads() throws {
        let blocks = try examples().filter { $0.hasPrefix("{") }
        try #require(blocks.count == 3, "expected the preferences, a runtime record and an event")
        let prefs = try PreferencesCodec.decode(Array(blocks[0].utf8), path: "vpnctl-profile(5)")
        #expect(Set(prefs.profiles.map(\.protocol.kind)) == Set(ProtocolConfiguration.Kind.allCases), "one profile of each protocol")
        let validator = ProfileValidator(secretExists: { _ in true })
        for profile in prefs.profiles {
            #expect(validator.problems(in: profile) == [], "example profile '\(profile.name)'")
        }
        let record = try RuntimeRecord(json: JSONReader(JSONSyntax.parse(Array(blocks[1].utf8))))
        #expect(record.status == .connected && record.settings != nil && record.lastDisconnectError != nil)
        let event = try TransitionEvent.parse(Array(blocks[2].replacingOccurrences(of: "\n", with: "").utf8))
        #expect(event.note == "reconnected")
    }

    /// One version: `vpnctl --version`, and each page's footer.
    @Test func pagesCarryTheVersion() throws {
        for page in ProfilePageTests.pages {
            let th = try read(page).split(separator: "\n").first { $0.hasPrefix(".TH ") } ?? ""
            #expect(th.contains("\"vpnctl \(vpnctlVersion)\""), "\(page): \(th)")
        }
        #expect(Harness().run("--version").stdout == "vpnctl \(vpnctlVersion)\n")
    }

    static func tool(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(_ argv: [String], stdin: String? = nil, environment: [String: String]? = nil) throws -> (code: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        if let environment { p.environment = environment }
        let out = Pipe(), err = Pipe(), input = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = input
        try p.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// `man -l` shows them without a warning: groff with every warning on,
    /// at the terminal width man uses by default (80 columns).
    @Test(.enabled(if: tool("groff") != nil, "groff is not installed"))
    func groffFindsNothing() throws {
        for page in ProfilePageTests.pages {
            let path = DocsTests.repo.appendingPathComponent(page).path
            let r = try ProfilePageTests.run([ProfilePageTests.tool("groff")!, "-ww", "-man", "-Tutf8", "-rLL=80n", "-z", path])
            #expect(r.code == 0 && r.err.isEmpty, "groff -ww \(page):\n\(r.err)")
        }
    }

    /// mandoc's warnings and errors (its STYLE notes, such as a source line
    /// over 80 bytes, are taste, not faults).
    @Test(.enabled(if: tool("mandoc") != nil, "mandoc is not installed"))
    func mandocLintFindsNothing() throws {
        for page in ProfilePageTests.pages {
            let path = DocsTests.repo.appendingPathComponent(page).path
            let r = try ProfilePageTests.run([ProfilePageTests.tool("mandoc")!, "-T", "lint", "-W", "warning", path])
            #expect(r.code == 0 && (r.out + r.err).isEmpty, "mandoc -T lint \(page):\n\(r.out)\(r.err)")
        }
    }
}
