import FoundationEssentials
import VPNCore

/// `vpnctl genkey` and `vpnctl pubkey`: WireGuard keys as `wg genkey` and
/// `wg pubkey` make them (X25519 through libcrypto, base64).
enum KeyCommands {
    static let genkeySpec = CommandSpec(
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
        run: genkey)

    static let pubkeySpec = CommandSpec(
        name: "pubkey", abstract: L("Read a WireGuard private key on standard input and print its public key, as 'wg pubkey' does."),
        discussion: L("""
        The key is 44 characters of base64 (32 bytes), on one line; spaces and line
        breaks around it are ignored. Anything else exits 5 and prints nothing on
        standard output.
        """),
        examples: [
            "vpnctl pubkey < office.key",
            "vpnctl genkey | vpnctl pubkey",
        ],
        run: pubkey)

    struct KeyResult: Encodable {
        var schemaVersion = 1
        let privateKey: String?
        let publicKey: String?
    }

    static func genkey(_ inv: Invocation) throws -> ExitCode {
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

    static func pubkey(_ inv: Invocation) throws -> ExitCode {
        let input: [UInt8]
        do { input = try inv.context.readStdin(4096) } catch {
            throw VPNError(.usage, L("cannot read the private key from standard input: \(error)"),
                           hint: L("pipe the key in: vpnctl pubkey < KEY"))
        }
        let text = String(decoding: input, as: UTF8.self)
        let publicKey: String?
        do { publicKey = try X25519.publicKey(base64: text) } catch let p as Crypto.Problem {
            throw VPNError(.failure, L("cannot derive the public key: \(p.message)"))
        }
        guard let publicKey else {
            throw VPNError(.configurationInvalid,
                           input.isEmpty ? L("no private key on standard input")
                                         : L("standard input is not a WireGuard private key (44 characters of base64 encoding 32 bytes)"),
                           hint: L("pipe a key in: vpnctl genkey | vpnctl pubkey"))
        }
        if inv.options.json {
            inv.output.emit(KeyResult(privateKey: nil, publicKey: publicKey))
        } else {
            inv.output.line(publicKey)
        }
        return .ok
    }
}
