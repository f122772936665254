#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import VPNCore
import VPNSystem
import VPNTestSupport

/// What a start asks for, how the answers reach the supervisor, and what
/// openvpn is told: SCRV1 for a static challenge, CRV1 for a dynamic one.
@Suite struct CredentialTests {
    static let sc = OpenVPNConfiguration.StaticChallenge(text: "Enter your code", echo: true)

    func config(options: [String] = [], challenge: OpenVPNConfiguration.StaticChallenge? = nil) -> OpenVPNConfiguration {
        var c = OpenVPNConfiguration(remotes: [.init(host: "vpn.example.net")], caFingerprints: [String(repeating: "a", count: 64)],
                                     username: "bob", passwordSecret: "password", options: options)
        c.staticChallenge = challenge
        return c
    }

    @Test func whatAStartAsksDependsOnWhatIsStored() {
        let c = config(challenge: Self.sc)
        #expect(c.credentialFields(stored: { _ in false }).map(\.kind) == [.username, .password, .oneTimeCode])
        #expect(c.credentialFields(stored: { $0 == "password" }).map(\.kind) == [.oneTimeCode])
        #expect(c.credentialFields(stored: { _ in false }).first?.offered == "bob", "the stored username is offered")
        #expect(config().credentialFields(stored: { _ in true }).isEmpty)
        let ike = IKEv2Configuration(serverAddress: "vpn.example.net", authenticationMethod: .none, username: "eve", passwordSecret: "password")
        #expect(ike.credentialFields(stored: { _ in false }).map(\.kind) == [.username, .password])
        #expect(ike.credentialFields(stored: { _ in true }).isEmpty)
    }

    @Test func aStaticChallengeIsSentAsSCRV1AndTheCodeIsGoodForOneLogin() {
        var a = OpenVPNAuth(config: config(challenge: Self.sc), answers: CredentialAnswers([.oneTimeCode: "123456"]), storedPassword: "bob pass")
        #expect(a.missing.isEmpty)
        let login = a.login()
        #expect(login.username == "bob")
        #expect(login.password == "SCRV1:Ym9iIHBhc3M=:MTIzNDU2")
        // A reconnect needs a new code; the stored password stays.
        #expect(a.missing.map(\.kind) == [.oneTimeCode])
    }

    @Test func aTypedPasswordIsForgottenWithAuthNocacheOnly() {
        var kept = OpenVPNAuth(config: config(), answers: CredentialAnswers([.password: "typed", .username: "alice"]), storedPassword: nil)
        #expect(kept.login() == ("alice", "typed"))
        #expect(kept.missing.isEmpty)
        var forgotten = OpenVPNAuth(config: config(options: ["auth-nocache"]), answers: CredentialAnswers([.password: "typed"]), storedPassword: nil)
        #expect(forgotten.login() == ("bob", "typed"))
        #expect(forgotten.missing.map(\.kind) == [.username, .password])
        var stored = OpenVPNAuth(config: config(options: ["auth-nocache"]), answers: CredentialAnswers(), storedPassword: "s")
        _ = stored.login()
        #expect(stored.missing.isEmpty, "a stored password is read again, never forgotten")
    }

    @Test func authRetryDecidesWhatARefusalDoes() {
        var none = OpenVPNAuth(config: config(), answers: CredentialAnswers(), storedPassword: "s")
        #expect(none.refused() == .none)
        var again = OpenVPNAuth(config: config(options: ["auth-retry nointeract"]), answers: CredentialAnswers(), storedPassword: "s")
        #expect(again.refused() == .nointeract)
        #expect(again.missing.isEmpty)
        var ask = OpenVPNAuth(config: config(options: ["auth-retry interact"]), answers: CredentialAnswers(), storedPassword: "s")
        #expect(ask.refused() == .interact)
        #expect(ask.missing.map(\.kind) == [.username, .password])
    }

    @Test func challengesAreReadAsTheServerSendsThem() {
        let text = "Verification Failed: 'Auth' ['CRV1:R,E:st42:Y2Fyb2w=:Enter the code: from your token']"
        let c = OpenVPNAuth.Challenge.crv1(in: text)
        #expect(c == OpenVPNAuth.Challenge(flags: ["R", "E"], text: "Enter the code: from your token", state: "st42", username: "carol"))
        #expect(OpenVPNAuth.Challenge.crv1(in: "Verification Failed: 'Auth'") == nil)
        #expect(OpenVPNAuth.Challenge.crText("CR_TEXT:R:What is your PIN?") == OpenVPNAuth.Challenge(flags: ["R"], text: "What is your PIN?"))
        #expect(OpenVPNAuth.Challenge.crText("CR_TEXT:R,E:x")?.echo == true)
        var a = OpenVPNAuth(config: config(), answers: CredentialAnswers(), storedPassword: "s")
        a.challengeResponse = ("st42", "carol", "7890")
        #expect(a.login() == ("carol", "CRV1::st42::7890"))
        #expect(a.login() == ("bob", "s"), "a challenge's answer is sent once")
    }

    @Test func theLineCarriesTheAnswersAndTheQuestionsOnTheWay() throws {
        let (start, theirs) = try CredentialLine.pair()
        defer { start.close() }
        let supervisor = CredentialLine(fd: theirs)
        defer { supervisor.close() }
        start.give(CredentialAnswers([.password: "pw", .oneTimeCode: "123456"]))
        let given = supervisor.initialAnswers()
        #expect(given[.password] == "pw" && given[.oneTimeCode] == "123456")
        // A question on the way, answered by the start's side.
        let loop = EventLoop(idleMs: 20)
        var reply: CredentialAnswers?? = .none
        supervisor.ask(CredentialRequest(profile: "p", fields: [.init(.challenge, prompt: "PIN", echo: false)], timeoutSeconds: 5),
                       on: loop) { reply = .some($0) }
        var asked: CredentialRequest?
        #expect(start.serve { asked = $0; return CredentialAnswers([.challenge: "7890"]) } != nil)
        for _ in 0..<50 where reply == nil { loop.turn() }
        #expect(asked?.fields.first?.prompt == "PIN")
        #expect(reply??[.challenge] == "7890")
        // The start gone: a question gets no answer.
        start.close()
        reply = .none
        supervisor.ask(CredentialRequest(profile: "p", fields: [], url: "https://sso.example/x", timeoutSeconds: 5), on: loop) { reply = .some($0) }
        for _ in 0..<50 where reply == nil { loop.turn() }
        #expect(reply == .some(nil))
    }

    @Test func theRenderedFileAnnouncesWhatIsAnsweredAndKeepsAuthRetryToItself() throws {
        let launch = OpenVPNLaunch(interface: "utun0", managementSocket: "/run/m", caPath: "/run/ca")
        let text = try launch.render(config(options: ["auth-retry none", "auth-nocache"], challenge: Self.sc))
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains("auth-retry interact"))
        #expect(!lines.contains("auth-retry none"), "the tunnel reads the profile's auth-retry; openvpn stays up and asks")
        #expect(lines.contains("static-challenge \"Enter your code\" 1"))
        #expect(lines.contains("setenv IV_SSO webauth,openurl,crtext"))
        #expect(lines.contains("auth-nocache"))
        let certOnly = try launch.render(OpenVPNConfiguration(remotes: [.init(host: "vpn.example.net")], caFingerprints: [], keySecret: "key"))
        #expect(certOnly.contains("auth-retry none\n") && !certOnly.contains("IV_SSO"))
    }
}
