import Testing
@testable import VPNCore

@Suite struct CharonProviderTests {
    func psk() -> IKEv2Configuration {
        IKEv2Configuration(serverAddress: "198.18.0.1", remoteIdentifier: "vpn.lab.test", localIdentifier: "alice@lab.test",
                           authenticationMethod: .sharedSecret, sharedSecretSecret: "shared-secret")
    }

    @Test func missingStrongSwanIsNamedWithItsPackagesExit10() {
        var eap = psk()
        eap.username = "bob"
        let e = #expect(throws: VPNError.self) {
            try CharonProvider.checkInstalled(eap, charon: "/nonexistent/charon", plugins: "/nonexistent")
        }
        #expect(e?.code == .providerUnavailable && e?.code.rawValue == 10)
        #expect(e?.message.hasPrefix("strongSwan is not installed for IKEv2: missing charon (/nonexistent/charon), the random plugin") == true)
        #expect(e?.message.contains("the eap-mschapv2 plugin") == true)
        #expect(e?.hint == "install it: apt-get install --no-install-recommends libcharon-extauth-plugins libcharon-extra-plugins "
                + "libstrongswan libstrongswan-standard-plugins strongswan-charon strongswan-libcharon strongswan-swanctl")
    }

    /// The private strongswan.conf: explicit plugins, no routes table, its own
    /// vici socket inside its /run, no secret.
    @Test func privateConfigurationHoldsNoSecretAndOnlyItsPlugins() {
        let conf = CharonLaunch.strongswanConf(psk(), startTimeoutMs: 15_000, resolvconf: false)
        #expect(conf.contains("load_modular = no\n"))
        #expect(conf.contains("load = random nonce openssl pem pkcs1 pkcs8 x509 revocation constraints pubkey kdf kernel-libipsec kernel-netlink socket-default vici resolve\n"))
        #expect(conf.contains("file = /run/resolv.conf\n"))
        #expect(!CharonLaunch.strongswanConf(psk(), startTimeoutMs: 15_000, resolvconf: true).contains(" resolve\n"),
                "with a resolvconf, charon would hand it the DNS servers")
        #expect(conf.contains("socket = unix:///run/charon.vici\n"))
        #expect(conf.contains("routing_table = 0\n") && conf.contains("retransmit_tries = 4\n"))
        #expect(!conf.contains("include"))
        #expect(CharonLaunch.retransmitTries(startTimeoutMs: 3_000) == 1)
        #expect(CharonLaunch.retransmitTries(startTimeoutMs: 60_000) == 5)
    }

    @Test func connectionForEachAuthentication() throws {
        let conn = try #require(CharonLaunch.connection(psk(), caCertificate: nil, identity: [])["vpnctl"]?.section)
        #expect(conn["remote_addrs"]?.texts == ["198.18.0.1"] && conn["vips"]?.texts == ["0.0.0.0", "::"])
        #expect(conn["dpd_delay"]?.text == "600s" && conn["mobike"]?.text == "yes" && conn["keyingtries"]?.text == "1")
        #expect(conn["local"]?.section == VICI.Message([("id", .text("alice@lab.test")), ("auth", .text("psk"))]))
        #expect(conn["remote"]?.section == VICI.Message([("auth", .text("psk")), ("id", .text("vpn.lab.test"))]))
        let child = try #require(conn["children"]?.section?["vpnctl"]?.section)
        #expect(child["remote_ts"]?.texts == ["0.0.0.0/0", "::/0"])

        var eap = psk()
        eap.authenticationMethod = .none
        eap.localIdentifier = nil
        eap.username = "bob"
        eap.deadPeerDetectionRate = .high
        eap.disableMOBIKE = true
        eap.ikeProposals = ["aes256-sha256-modp2048"]
        let e = try #require(CharonLaunch.connection(eap, caCertificate: "CA", identity: [])["vpnctl"]?.section)
        #expect(e["local"]?.section == VICI.Message([("auth", .text("eap-mschapv2")), ("eap_id", .text("bob"))]))
        #expect(e["remote"]?.section == VICI.Message([("auth", .text("pubkey")), ("id", .text("vpn.lab.test")), ("cacerts", .texts(["CA"]))]))
        #expect(e["dpd_delay"]?.text == "60s" && e["mobike"]?.text == "no" && e["proposals"]?.texts == ["aes256-sha256-modp2048"])

        var both = psk()
        both.authenticationMethod = .certificate
        both.username = "bob"
        let b = try #require(CharonLaunch.connection(both, caCertificate: "CA", identity: ["CERT"])["vpnctl"]?.section)
        #expect(b["local-1"]?.section == VICI.Message([("id", .text("alice@lab.test")), ("auth", .text("pubkey")), ("certs", .texts(["CERT"]))]))
        #expect(b["local-2"]?.section == VICI.Message([("auth", .text("eap-mschapv2")), ("eap_id", .text("bob"))]))
        #expect(b["local"] == nil)
    }

    @Test func secretsGoOnlyIntoVICIMessages() throws {
        var c = psk()
        c.username = "bob"
        let creds = CharonLaunch.credentials(c, psk: Array("k".utf8), password: Array("p".utf8), key: Array("KEY".utf8))
        #expect(creds.map(\.command) == ["load-shared", "load-shared", "load-key"])
        #expect(creds[0].message["type"]?.text == "IKE" && creds[0].message["data"]?.text == "k")
        #expect(creds[1].message["type"]?.text == "EAP" && creds[1].message["owners"]?.texts == ["bob"])
        #expect(creds[2].message["type"]?.text == "any" && creds[2].message["data"]?.text == "KEY")
    }

    @Test func nameserversFromTheResolvePluginsFile() {
        #expect(CharonLaunch.nameservers("nameserver 198.19.21.53   # by strongSwan\nnameserver 2001:db8::53 # by strongSwan\n# x\nnameserver junk\n")
                == ["198.19.21.53", "2001:db8::53"])
    }

    @Test func identitySecretSplitsIntoCertificatesAndKey() {
        let pem = "-----BEGIN CERTIFICATE-----\nAQID\n-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----\nBAUG\n-----END EC PRIVATE KEY-----\n"
        let (certs, key) = CharonLaunch.splitIdentity(Array(pem.utf8))
        #expect(certs.count == 1 && certs[0].contains("BEGIN CERTIFICATE"))
        #expect(key.map { String(decoding: $0, as: UTF8.self).hasPrefix("-----BEGIN EC PRIVATE KEY-----") } == true)
        #expect(CharonLaunch.splitIdentity(Array("junk".utf8)).key == nil)
    }
}

@Suite struct CharonDiagnosisTests {
    @Test(arguments: [
        ("received AUTHENTICATION_FAILED notify error", ConnectionError.Kind.authenticationFailed),
        ("EAP method EAP_MSCHAPV2 failed for peer 198.18.0.1", .authenticationFailed),
        ("received NO_PROPOSAL_CHOSEN notify error", .negotiationFailed),
        ("constraint check failed: identity 'wrong.lab.test' required ", .serverCertificateInvalid),
        ("no trusted ECDSA public key found for 'wrong.lab.test'", .serverCertificateInvalid),
        ("subject certificate invalid (valid from Jan 01 00:00:00 2020 to Jan 02 00:00:00 2020)", .serverCertificateExpired),
        ("subject certificate invalid (valid from Jan 01 00:00:00 2099 to Jan 02 00:00:00 2099)", .serverCertificateNotYetValid),
        ("unable to resolve nonexistent.invalid, initiate aborted", .serverAddressResolutionFailed),
        ("giving up after 4 retransmits", .serverNotResponding),
    ])
    func mapsCharonLinesToConnectionErrors(line: String, kind: ConnectionError.Kind) {
        var d = CharonDiagnosis()
        d.observe("initiating IKE_SA vpnctl[1] to 198.18.0.1")
        d.observe(line)
        #expect(d.fatal?.kind == kind)
        #expect(d.fatal?.message.contains("charon: \(line)") == true)
        d.observe("received AUTHENTICATION_FAILED notify error")
        #expect(d.fatal?.kind == kind, "the first decisive line wins")
    }

    @Test func validityTimesAreUTC() {
        #expect(CharonDiagnosis.time("Jan 02 00:00:00 2020")?.timeIntervalSince1970 == 1_577_923_200)
        #expect(CharonDiagnosis.time("Mar 01 12:30:05 2024")?.timeIntervalSince1970 == 1_709_296_205)
        #expect(CharonDiagnosis.time("Foo 01 00:00:00 2020") == nil)
    }

    @Test func identityIsNamed() {
        var d = CharonDiagnosis()
        d.observe("constraint check failed: identity 'wrong.lab.test' required ")
        #expect(d.fatal?.message.hasPrefix("the server's certificate is not for the remote identifier 'wrong.lab.test'") == true)
    }

    @Test func retransmitsMakeReassertingAndAnAnswerEndsIt() {
        var d = CharonDiagnosis()
        let first = d.observe("retransmit 1 of request with message ID 4")
        #expect(first && d.retransmitting)
        let second = d.observe("retransmit 2 of request with message ID 4")
        #expect(!second)
        let answered = d.observe("parsed INFORMATIONAL response 4 [ ]")
        #expect(answered && !d.retransmitting)
        #expect(d.downError(connected: true).kind == .serverDisconnected)
        let mobike = d.observe("requesting address change using MOBIKE")
        #expect(mobike && d.retransmitting)
        d.observe("parsed INFORMATIONAL response 5 [ N(UPD_SA_ADDR) ]")
        d.observe("giving up after 5 retransmits")
        #expect(d.downError(connected: true).kind == .serverDead)
        #expect(d.downError(connected: false).kind == .serverNotResponding)
    }
}
