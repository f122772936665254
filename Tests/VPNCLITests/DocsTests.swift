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
