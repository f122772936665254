import FoundationEssentials

/// The user name and password exchange over openvpn's management interface
/// (management-notes.txt): what to answer when openvpn asks, and what to ask
/// the person who started the tunnel. Answers live here, in memory only.
struct OpenVPNAuth {
    /// The profile's `auth-retry` (openvpn's default: none).
    enum Retry: String { case none, nointeract, interact }

    /// A question the server asks: a CRV1 dynamic challenge (in the
    /// AUTH_FAILED reason) or a CR_TEXT challenge (an INFOMSG after the password).
    struct Challenge: Equatable {
        /// "R": an answer is required; "E": it may be shown as typed.
        var flags: Set<Character>
        var text: String
        /// CRV1 only: the server's state id and the user name it decoded.
        var state: String? = nil
        var username: String? = nil

        var echo: Bool { flags.contains("E") }

        /// "CRV1:R,E:state:base64-user:text" (from `Verification Failed: 'Auth' ['CRV1:...']`).
        static func crv1(in text: String) -> Challenge? {
            let parts = text.components(separatedBy: "CRV1:")
            guard parts.count >= 2 else { return nil }
            var body = parts.dropFirst().joined(separator: "CRV1:")
            if body.hasSuffix("']") { body.removeLast(2) }
            let f = body.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            guard f.count == 4, !f[1].isEmpty else { return nil }
            let user = Data(base64Encoded: f[2]).map { String(decoding: $0, as: UTF8.self) }
            return Challenge(flags: Set(f[0].filter { $0 != "," }), text: f[3], state: f[1], username: user)
        }

        /// "CR_TEXT:R,E:text" (from `>INFOMSG:`).
        static func crText(_ message: String) -> Challenge? {
            guard message.hasPrefix("CR_TEXT:") else { return nil }
            let f = message.dropFirst(8).split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard f.count == 2 else { return nil }
            return Challenge(flags: Set(f[0].filter { $0 != "," }), text: f[1])
        }
    }

    let retry: Retry
    /// `auth-nocache`: a typed password is forgotten once sent.
    let noCache: Bool
    let staticChallenge: OpenVPNConfiguration.StaticChallenge?
    var username: String?
    var password: String?
    /// Whether the password was typed (a stored one is read again, never forgotten).
    var typed: Bool
    /// The static challenge's code: good for one login.
    var code: String?
    /// The answer to a CRV1 challenge, sent with the next login.
    var challengeResponse: (state: String, username: String?, response: String)?

    init(config: OpenVPNConfiguration, answers: CredentialAnswers, storedPassword: String?) {
        let words = config.options.map { OpenVPNDirectives.tokenize($0) ?? [] }
        retry = words.last(where: { $0.first == "auth-retry" && $0.count == 2 }).flatMap { Retry(rawValue: $0[1]) } ?? .none
        noCache = words.contains(["auth-nocache"])
        staticChallenge = config.staticChallenge
        let typedUser = answers[.username].flatMap { $0.isEmpty ? nil : $0 }
        username = typedUser ?? config.username
        password = answers[.password] ?? storedPassword
        typed = answers[.password] != nil
        code = answers[.oneTimeCode]
    }

    /// What openvpn's `Need 'Auth'` needs that is not at hand (a reconnect
    /// after the code was used, a forgotten typed password); empty: answer now.
    var missing: [CredentialRequest.Field] {
        if challengeResponse != nil { return [] }
        var f: [CredentialRequest.Field] = []
        if password == nil { f += CredentialRequest.userAndPassword(username) }
        if let c = staticChallenge, code == nil { f.append(.init(.oneTimeCode, prompt: c.text, echo: c.echo)) }
        return f
    }

    mutating func take(_ a: CredentialAnswers) {
        if let u = a[.username], !u.isEmpty { username = u }
        if let p = a[.password] { password = p; typed = true }
        if let c = a[.oneTimeCode] { code = c }
    }

    /// The user name and password to send now, and forgets what is good for
    /// one login (the code, a challenge's answer, with auth-nocache a typed password).
    mutating func login() -> (username: String, password: String) {
        defer {
            code = nil
            challengeResponse = nil
            if noCache && typed { password = nil }
        }
        if let r = challengeResponse {
            return (r.username ?? username ?? "", "CRV1::\(r.state)::\(r.response)")
        }
        let pw = password ?? ""
        if staticChallenge != nil {
            return (username ?? "", "SCRV1:\(Data(pw.utf8).base64EncodedString()):\(Data((code ?? "").utf8).base64EncodedString())")
        }
        return (username ?? "", pw)
    }

    /// After the server refused the login: whether to ask the person again
    /// (auth-retry interact), retry as it is (nointeract), or end (none).
    mutating func refused() -> Retry {
        if retry == .interact {
            password = nil
            code = nil
        }
        return retry
    }
}
