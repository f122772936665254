#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// IKEv2 (the Personal VPN transport) through strongSwan's charon, one
/// private charon per tunnel, driven over vici (see `CharonTunnel`). The
/// kernel here has no ESP, so the data path is charon's kernel-libipsec: the
/// provider owns its TUN (ipsecN).
public struct CharonProvider: TunnelProvider {
    public static let kind = ProtocolConfiguration.Kind.ikev2
    public static let implementation = "strongswan"
    /// Debian's path; charon is not in PATH.
    public static let charonPath = "/usr/lib/ipsec/charon"
    public static let pluginDirectory = "/usr/lib/ipsec/plugins"
    public static let packages = "strongswan-charon libcharon-extra-plugins libcharon-extauth-plugins libstrongswan-standard-plugins libstrongswan-extra-plugins"
    let config: IKEv2Configuration

    public init?(profile: Profile) {
        guard case .ikev2(let c) = profile.protocol else { return nil }
        config = c
    }

    public var requirements: ProviderRequirements {
        ProviderRequirements(program: Self.charonPath, package: Self.packages,
                             trustAnchors: config.caFingerprint.map { [$0] } ?? [], interface: .providerOwns)
    }

    /// The plugins each profile needs, and the package each comes from.
    /// With a resolvconf installed, charon's resolve plugin would hand the
    /// pushed DNS servers to it (and so to the machine's resolver); without
    /// one it writes them to a file, here inside charon's private /run.
    public static let resolvconfInstalled = access("/sbin/resolvconf", X_OK) == 0

    public static func plugins(for c: IKEv2Configuration, resolvconf: Bool = resolvconfInstalled) -> [(name: String, package: String)] {
        var p: [(String, String)] = [
            ("random", "libstrongswan"), ("nonce", "libstrongswan"), ("openssl", "libstrongswan-standard-plugins"),
            ("pem", "libstrongswan"), ("pkcs1", "libstrongswan"), ("pkcs8", "libstrongswan"), ("x509", "libstrongswan"),
            ("revocation", "libstrongswan"), ("constraints", "libstrongswan"), ("pubkey", "libstrongswan"),
            ("kdf", "libstrongswan"), ("kernel-libipsec", "libcharon-extra-plugins"), ("kernel-netlink", "strongswan-libcharon"),
            ("socket-default", "strongswan-libcharon"), ("vici", "strongswan-swanctl"),
        ]
        if !resolvconf { p.append(("resolve", "libstrongswan")) }
        if c.username != nil {
            // MD4 and DES for MSCHAPv2: openssl's legacy provider, else gcrypt.
            p += [("eap-identity", "libcharon-extauth-plugins"), ("eap-mschapv2", "libcharon-extauth-plugins"),
                  ("gcrypt", "libstrongswan-extra-plugins")]
        }
        return p
    }

    /// charon and the plugins this profile needs must be installed; each
    /// missing one is named with its package (exit 10).
    public func preflight(_ environment: ProviderEnvironment) throws {
        try Self.checkInstalled(config, charon: Self.charonPath, plugins: Self.pluginDirectory)
        if let fp = config.caFingerprint { _ = try TrustStore(configDirectory: environment.configDirectory).certificate(fp) }
    }

    static func checkInstalled(_ config: IKEv2Configuration, charon: String, plugins: String) throws {
        var missing: [(String, String)] = []
        if access(charon, X_OK) != 0 { missing.append(("charon (\(charon))", "strongswan-charon")) }
        for (name, package) in Self.plugins(for: config) where name != "gcrypt" && name != "resolve" {
            if access("\(plugins)/libstrongswan-\(name).so", R_OK) != 0 { missing.append((L("the \(name) plugin"), package)) }
        }
        if Processes.which("unshare", path: nil) == nil { missing.append(("unshare", "util-linux")) }
        if !missing.isEmpty {
            let packages = Array(Set(missing.map { $0.1 })).sorted().joined(separator: " ")
            throw VPNError(.providerUnavailable, L("strongSwan is not installed for IKEv2: missing \(missing.map { $0.0 }.joined(separator: ", "))"),
                           hint: L("install it: apt-get install --no-install-recommends \(packages)"))
        }
    }

    public func checkSecret(name: String, value: [UInt8]) throws {
        guard name == config.identitySecret else { return }
        let blocks = PEM.blocks(String(decoding: value, as: UTF8.self))
        guard blocks.contains(where: { $0.label == "CERTIFICATE" }), blocks.contains(where: { $0.label.hasSuffix("PRIVATE KEY") }) else {
            throw VPNError(.configurationInvalid, L("secret '\(name)' must hold the client certificate and its private key, both PEM"),
                           hint: "cat client.crt client.key | vpnctl secret set <profile> \(name) --stdin") // English: a command line
        }
    }

    public func advice(for error: ConnectionError.Kind) -> String? {
        switch error {
        case .serverNotResponding: return "check that the server is up and reachable on UDP 500 and 4500"
        case .authenticationFailed: return "check the shared secret, or the username and password, with 'vpnctl secret set'"
        case .negotiationFailed: return "check ikeProposals and childProposals against what the server accepts"
        case .serverCertificateInvalid: return "check remoteIdentifier and the trust anchor (caFingerprint) against the server's certificate"
        default: return nil
        }
    }

    public func makeTunnel(in context: TunnelContext) -> any ProviderTunnel {
        var config = config
        // The EAP identity typed at the prompt, where it was changed.
        if let user = context.credentials[.username], !user.isEmpty { config.username = user }
        return CharonTunnel(context: context, config: config, program: Self.charonPath)
    }

    /// The run's private directory (strongswan.conf, pid file, vici socket).
    public static func cleanUp(after record: RuntimeRecord, runtime: RuntimeStore) -> [String] {
        let dir = CharonLaunch.privateDirectory(runtime, record.id)
        guard FileSystem.exists(dir) else { return [] }
        for f in ["strongswan.conf", "charon.pid", "charon.vici", "resolv.conf"] { unlink("\(dir)/\(f)") }
        return rmdir(dir) == 0 ? ["removed \(dir)"] : []
    }
}

/// What one run of charon is given: a private strongswan.conf (no secrets),
/// and the vici messages that load the connection and the credentials.
public struct CharonLaunch {
    public static let connectionName = "vpnctl"
    /// Where the run's private directory appears inside charon's own mount
    /// namespace (bind-mounted over /run: charon's pid file is compiled in).
    public static let insideDirectory = "/run"

    public static func privateDirectory(_ runtime: RuntimeStore, _ id: UUID) -> String {
        "\(runtime.directory)/\(id.lowercasedString).charon"
    }

    /// retransmit_tries so that charon gives up (serverNotResponding) well
    /// within the start timeout: 1 s, then x1.4 each time.
    public static func retransmitTries(startTimeoutMs: Int64) -> Int {
        var total = 0.0, tries = 0
        let budget = Double(startTimeoutMs) / 1000 * 0.8
        for n in 0...5 {
            total += pow(1.4, Double(n))
            if total > budget { break }
            tries = n
        }
        return max(tries, 1)
    }

    public static func strongswanConf(_ c: IKEv2Configuration, startTimeoutMs: Int64,
                                      resolvconf: Bool = CharonProvider.resolvconfInstalled) -> String {
        let plugins = CharonProvider.plugins(for: c, resolvconf: resolvconf).map { $0.name }.joined(separator: " ")
        return """
        # written by vpnctl for one run; no secrets (they are loaded over vici)
        charon {
          load_modular = no
          load = \(plugins)
          # Addresses and routes are vpnctl's (the settings applier); no
          # policy-routing table that a killed charon would leave behind.
          install_routes = no
          install_virtual_ip = yes
          routing_table = 0
          # Any free ports: two tunnels in one namespace each have their charon.
          port = 0
          port_nat_t = 0
          retransmit_timeout = 1.0
          retransmit_base = 1.4
          retransmit_tries = \(retransmitTries(startTimeoutMs: startTimeoutMs))
          close_ike_on_child_failure = yes
          plugins {
            vici {
              socket = unix://\(insideDirectory)/charon.vici
            }
            openssl {
              load_legacy = yes
            }
            # The DNS servers the server pushes, read back by vpnctl; never /etc/resolv.conf.
            resolve {
              file = \(insideDirectory)/resolv.conf
            }
          }
          syslog {
            daemon {
              default = -1
            }
          }
          filelog {
            stderr {
              default = 1
              ike_name = yes
            }
          }
        }

        """
    }

    /// The `load-conn` message: one IKE SA and one child, nothing started by itself.
    public static func connection(_ c: IKEv2Configuration, caCertificate: String?, identity: [String]) -> VICI.Message {
        typealias M = VICI.Message
        var conn = M([("version", .text("2")), ("remote_addrs", .texts([c.serverAddress])),
                      ("encap", .text("yes")), ("keyingtries", .text("1")),
                      ("mobike", .text(c.disableMOBIKE == true ? "no" : "yes"))])
        if let p = c.ikeProposals { conn.append("proposals", .texts(p)) }
        // An IPv6 address too: a server with a v6 pool gives one, one without
        // gives only the IPv4 one (charon goes on with what it got).
        if c.useServerVirtualIP ?? true { conn.append("vips", .texts(["0.0.0.0", "::"])) }
        let dpd = (c.deadPeerDetectionRate ?? .medium).seconds
        conn.append("dpd_delay", .text("\(dpd)s"))
        if let m = c.lifetimeMinutes { conn.append("rekey_time", .text("\(m * 60)s")) }

        var rounds: [M] = []
        var first = M()
        if let id = c.localIdentifier { first.append("id", .text(id)) }
        switch c.authenticationMethod {
        case .sharedSecret:
            first.append("auth", .text("psk"))
        case .certificate:
            first.append("auth", .text("pubkey"))
            if !identity.isEmpty { first.append("certs", .texts(identity)) }
        case .none:
            break
        }
        if let user = c.username {
            var eap = c.authenticationMethod == .none ? first : M()
            eap.append("auth", .text("eap-mschapv2"))
            eap.append("eap_id", .text(user))
            if c.authenticationMethod == .none { first = eap } else { rounds.append(first); first = eap }
        }
        rounds.append(first)
        for (n, round) in rounds.enumerated() { conn.append(rounds.count == 1 ? "local" : "local-\(n + 1)", .section(round)) }

        var remote = M([("auth", .text(c.authenticationMethod == .sharedSecret ? "psk" : "pubkey"))])
        if let id = c.remoteIdentifier { remote.append("id", .text(id)) }
        if let ca = caCertificate, c.authenticationMethod != .sharedSecret { remote.append("cacerts", .texts([ca])) }
        conn.append("remote", .section(remote))

        // Everything, both families, unless the profile narrows it; the server narrows it to what it offers.
        var child = M([("remote_ts", .texts(c.remoteTrafficSelectors ?? ["0.0.0.0/0", "::/0"])), ("mode", .text("tunnel")), ("dpd_action", .text("clear"))])
        if let p = c.childProposals { child.append("esp_proposals", .texts(p)) }
        if let m = c.lifetimeMinutes { child.append("rekey_time", .text("\(m * 60)s")) }
        conn.append("children", .section(M([(connectionName, .section(child))])))
        return M([(connectionName, .section(conn))])
    }

    /// The `load-shared` and `load-key` messages for the profile's secrets.
    public static func credentials(_ c: IKEv2Configuration, psk: [UInt8]?, password: [UInt8]?, key: [UInt8]?) -> [(command: String, message: VICI.Message)] {
        var out: [(String, VICI.Message)] = []
        if let psk { out.append(("load-shared", VICI.Message([("id", .text("psk")), ("type", .text("IKE")), ("data", .bytes(psk))]))) }
        if let password, let user = c.username {
            out.append(("load-shared", VICI.Message([("id", .text("eap")), ("type", .text("EAP")), ("data", .bytes(password)),
                                                       ("owners", .texts([user]))])))
        }
        if let key { out.append(("load-key", VICI.Message([("type", .text("any")), ("data", .bytes(key))]))) }
        return out
    }

    /// The identity secret split: certificates (PEM, in order) and the private key (PEM).
    public static func splitIdentity(_ bytes: [UInt8]) -> (certificates: [String], key: [UInt8]?) {
        let blocks = PEM.blocks(String(decoding: bytes, as: UTF8.self))
        let certs = blocks.filter { $0.label == "CERTIFICATE" }.compactMap { b in b.der.map { PEM.encode(label: "CERTIFICATE", der: $0) } }
        let key = blocks.first { $0.label.hasSuffix("PRIVATE KEY") }.flatMap { b in b.der.map { Array(PEM.encode(label: b.label, der: $0).utf8) } }
        return (certs, key)
    }

    /// The DNS servers in the resolve plugin's file ("nameserver 198.19.21.53   # by strongSwan").
    public static func nameservers(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", IPAddress(String(words[1])) != nil else { return nil }
            return String(words[1])
        }
    }

    /// The TUN a process holds, from its fds' `iff:` lines in /proc.
    public static func tunName(of pid: pid_t) -> String? {
        guard let fds = try? FileSystem.list("/proc/\(pid)/fdinfo") else { return nil }
        for fd in fds {
            guard let bytes = try? FileSystem.readFile("/proc/\(pid)/fdinfo/\(fd)", from: 0, limit: 4096) else { continue }
            for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("iff:") {
                return String(line.dropFirst(4)).trimmingSpaces()
            }
        }
        return nil
    }
}
