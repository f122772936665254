import CCrypto
import FoundationEssentials

/// WireGuard keys through libcrypto's X25519 (RFC 7748), as `wg genkey` and
/// `wg pubkey` make them: 32 bytes, base64.
public enum X25519 {
    /// A new private key from libcrypto's random generator, clamped as
    /// `wg genkey` clamps it (RFC 7748, section 5).
    public static func generatePrivateKey() throws -> [UInt8] {
        var key = [UInt8](repeating: 0, count: 32)
        ERR_clear_error()
        guard RAND_bytes(&key, 32) == 1 else { throw Crypto.failure(L("libcrypto could not make random bytes")) }
        key[0] &= 248
        key[31] = (key[31] & 127) | 64
        return key
    }

    /// The public key of a 32-byte private key.
    public static func publicKey(_ privateKey: [UInt8]) throws -> [UInt8] {
        guard privateKey.count == 32 else { throw Crypto.Problem(L("an X25519 private key is 32 bytes, not \(privateKey.count)")) }
        ERR_clear_error()
        guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, privateKey, 32) else {
            throw Crypto.failure(L("libcrypto refused the X25519 private key"))
        }
        defer { EVP_PKEY_free(key) }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &out, &length) == 1, length == 32 else {
            throw Crypto.failure(L("libcrypto could not derive the X25519 public key"))
        }
        return out
    }

    /// `wg pubkey`: the base64 public key for a base64 private key (one
    /// line; surrounding spaces and line breaks are ignored); nil when the
    /// text is not a WireGuard key.
    public static func publicKey(base64 text: String) throws -> String? {
        let trimmed = text.trimmingCharactersOfLineEnds()
        guard let key = WireGuardKey.decode(trimmed) else { return nil }
        return Data(try publicKey(key)).base64EncodedString()
    }
}

extension String {
    func trimmingCharactersOfLineEnds() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }
}
