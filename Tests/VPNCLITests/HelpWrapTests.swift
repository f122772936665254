import Testing
@testable import VPNCLI
import VPNCore

@Suite struct HelpWrapTests {
    /// Lines stay within the width as the terminal counts it: a sentence
    /// without spaces (Chinese) is cut between characters, English between words.
    @Test func wrapsByScreenColumns() {
        let chinese = String(repeating: "全局选项适用于所有命令", count: 12)
        let wrapped = Help.wrap(chinese, width: 40).split(separator: "\n").map(String.init)
        #expect(wrapped.count > 1)
        #expect(wrapped.allSatisfy { $0.terminalWidth <= 40 })
        #expect(wrapped.joined() == chinese)
        let english = "Global options work with every command; see the help of each command for more."
        #expect(Help.wrap(english, width: 30) == "Global options work with every\ncommand; see the help of each\ncommand for more.")
    }
}
