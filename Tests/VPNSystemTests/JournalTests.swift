import Testing
@testable import VPNSystem

/// Issue 31 item 6: the agent's lines carry a journal priority.
@Suite struct JournalTests {
    @Test func aTaggedLineKeepsItsPriorityAndText() {
        let line = Journal.tagged(.notice, "uid=1000(alice) start 'office': denied (exit 11)")
        #expect(Journal.untag(line).priority == .notice)
        #expect(Journal.untag(line).text == "uid=1000(alice) start 'office': denied (exit 11)")
        #expect(Journal.untag("plain").priority == .info && Journal.untag("plain").text == "plain")
        #expect(Journal.untag("<9>not a priority").text == "<9>not a priority")
        #expect(Journal.untag("<3").text == "<3")
    }

    @Test func renderedForTheJournalOrForAFile() {
        let line = Journal.tagged(.error, "accept failed")
        #expect(Journal.render(line, prefix: "vpnctl agent: ", journal: true) == "<3>vpnctl agent: accept failed")
        #expect(Journal.render(line, prefix: "vpnctl agent: ", journal: false) == "vpnctl agent: accept failed")
        #expect(Journal.render("listening", prefix: "vpnctl agent: ", journal: true) == "<6>vpnctl agent: listening")
    }

    @Test func theJournalStreamMustBeThisStderr() {
        #expect(!Journal.stderrIsJournal([:]))
        #expect(!Journal.stderrIsJournal(["JOURNAL_STREAM": "garbage"]))
        #expect(!Journal.stderrIsJournal(["JOURNAL_STREAM": "1:1"]))
    }
}
