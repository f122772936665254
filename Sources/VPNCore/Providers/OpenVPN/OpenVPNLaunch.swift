#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// The files openvpn reads: the paths of the run's CA bundle, the certificate
/// and the key secrets. No secret value is written anywhere new; the password
/// is answered over the management socket, never put in a file or on argv.
public struct OpenVPNLaunch: Sendable {
    public var interface: String
    public var managementSocket: String
    public var caPath: String
    public var certificatePath: String?
    public var keyPath: String?
    public var tlsCryptPath: String?
    public var tlsAuthPath: String?
    public var tlsCryptV2Path: String?
    /// SO_MARK on openvpn's sockets (`mark`): what the kill switch lets out.
    public var mark: UInt32?

    public init(interface: String, managementSocket: String, caPath: String) {
        self.interface = interface
        self.managementSocket = managementSocket
        self.caPath = caPath
    }

    /// The directives vpnctl writes itself; everything else in the file comes
    /// from the profile's options and is on OpenVPNDirectives' allow-list.
    public static let ownDirectives: Set<String> = [
        "client", "dev", "dev-type", "disable-dco", "ifconfig-noexec", "route-noexec", "script-security", "management",
        "management-client", "management-hold", "management-up-down", "management-query-passwords", "auth-retry", "verb",
        "remote", "ca", "cert", "key", "tls-crypt", "tls-auth", "tls-crypt-v2", "auth-user-pass", "suppress-timestamps", "mark",
        "static-challenge", "setenv",
    ]

    /// The config file for one run. Every option is checked again here (the
    /// store may have been edited by hand) and written back word by word, so
    /// openvpn reads exactly the words that were checked.
    public func render(_ c: OpenVPNConfiguration) throws -> String {
        let q = OpenVPNDirectives.quote
        var lines = [
            "# written by vpnctl for one run; do not edit",
            "client", "dev \(q(interface))", "dev-type tun", "disable-dco",
            "ifconfig-noexec", "route-noexec", "script-security 1",
            "management \(q(managementSocket)) unix", "management-client", "management-hold", "management-up-down",
            "management-query-passwords", "verb 3",
            // The supervisor stamps each line; unstamped, a repeated line is
            // the same line and the log counts it instead of writing it.
            "suppress-timestamps",
        ]
        for (i, r) in c.remotes.enumerated() {
            guard Endpoint.isHostName(r.host) || IPAddress(r.host) != nil, (1...65535).contains(r.port), OpenVPNImport.protocols.contains(r.proto) else {
                throw VPNError(.configurationInvalid, L("protocol.remotes[\(i)] is not a host, a port and a protocol openvpn can use"),
                               remedy: .edit(profile: nil))
            }
            lines.append("remote \(r.host) \(r.port) \(r.proto)")
        }
        lines.append("ca \(q(caPath))")
        if let p = certificatePath { lines.append("cert \(q(p))") }
        if let p = keyPath { lines.append("key \(q(p))") }
        if let p = tlsCryptPath { lines.append("tls-crypt \(q(p))") }
        if let p = tlsAuthPath { lines.append("tls-auth \(q(p))") }
        if let p = tlsCryptV2Path { lines.append("tls-crypt-v2 \(q(p))") }
        if c.username != nil {
            // openvpn stays up after a refused login and asks again: vpnctl
            // answers a server's challenge, and does what the profile's
            // auth-retry says (the tunnel reads it; openvpn never sees it).
            lines += ["auth-user-pass", "auth-retry interact"]
            if let sc = c.staticChallenge { lines.append("static-challenge \(q(sc.text)) \(sc.echo ? 1 : 0)") }
            // What vpnctl answers besides a password: a web sign-in (its URL
            // shown), a URL to open, a text challenge. SSO servers ask.
            lines.append("setenv IV_SSO webauth,openurl,crtext")
        } else {
            lines.append("auth-retry none")
        }
        if let mark { lines.append("mark \(mark)") }
        for (i, option) in c.options.enumerated() {
            if let problem = OpenVPNDirectives.problem(in: option) {
                throw VPNError(.configurationInvalid, L("protocol.options[\(i)]: \(problem)"), remedy: .edit(profile: nil))
            }
            let words = OpenVPNDirectives.tokenize(option) ?? []
            if words.first == "auth-retry" { continue }
            lines.append(OpenVPNDirectives.render(words))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
