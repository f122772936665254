import FoundationEssentials
import VPNCore

/// `vpnctl genkey`: a WireGuard private key as `wg genkey` makes it (X25519
/// through libcrypto, base64).
enum GenkeyCommand {
    static let spec = CommandSpec(
        name: "genkey", abstract: L("Print a new WireGuard private key (base64), as 'wg genkey' does."),
        discussion: L("""
        The key is random (libcrypto) and clamped as X25519 keys are. Keep it where
        only you can read it (umask 077), or hand it straight to vpnctl:
        vpnctl genkey | vpnctl create NAME wireguard --private-key-file - ...
        Its public key, for the server's peer entry: vpnctl pubkey < KEY.
        """),
        examples: [
            "vpnctl genkey > office.key",
            "vpnctl genkey | tee office.key | vpnctl pubkey",
        ],
        run: run)

    /// `genkey --json` and `pubkey --json`: the key each prints, the other nil.
    struct KeyResult: Encodable {
        var schemaVersion = 1
        let privateKey: String?
        let publicKey: String?
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let key: [UInt8]
        do { key = try X25519.generatePrivateKey() } catch let p as Crypto.Problem {
            throw VPNError(.failure, L("cannot make a key: \(p.message)"))
        }
        let text = Data(key).base64EncodedString()
        if inv.options.json {
            inv.output.emit(KeyResult(privateKey: text, publicKey: nil))
        } else {
            inv.output.line(text)
        }
        return .ok
    }
}
