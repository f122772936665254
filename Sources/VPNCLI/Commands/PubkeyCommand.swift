import FoundationEssentials
import VPNCore

/// `vpnctl pubkey`: the public key of a WireGuard private key, as `wg pubkey`
/// derives it (X25519 through libcrypto, base64).
enum PubkeyCommand {
    static let spec = CommandSpec(
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
        run: run)

    static func run(_ inv: Invocation) throws -> ExitCode {
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
            inv.output.emit(GenkeyCommand.KeyResult(privateKey: nil, publicKey: publicKey))
        } else {
            inv.output.line(publicKey)
        }
        return .ok
    }
}
