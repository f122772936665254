import FoundationEssentials

/// X25519 (RFC 7748): a WireGuard public key from its private key, so that
/// `show` can print the key a user gives the server without running `wg`.
/// Field elements are sixteen 16-bit limbs in Int64s, which leaves room for
/// the products and carries without 128-bit arithmetic. The ladder and the
/// final reduction select with masks, never with branches on secret bits.
public enum Curve25519 {
    typealias Field = [Int64]

    static let zero: Field = Array(repeating: 0, count: 16)
    static let one: Field = [1] + Array(repeating: 0, count: 15)
    /// a24 = (A - 2) / 4 = 121665, for Curve25519's A = 486662.
    static let a24: Field = [0xDB41, 1] + Array(repeating: 0, count: 14)

    /// The public key for a 32-byte private key (clamped as RFC 7748 says).
    public static func publicKey(_ privateKey: [UInt8]) -> [UInt8]? {
        guard privateKey.count == 32 else { return nil }
        var basePoint = [UInt8](repeating: 0, count: 32)
        basePoint[0] = 9
        return scalarMult(privateKey, basePoint)
    }

    /// The base64 public key for a base64 private key, as `wg pubkey` prints it.
    public static func publicKey(base64 privateKey: String) -> String? {
        guard let key = WireGuardKey.decode(privateKey), let pub = publicKey(key) else { return nil }
        return Data(pub).base64EncodedString()
    }

    static func scalarMult(_ scalar: [UInt8], _ point: [UInt8]) -> [UInt8] {
        var z = scalar
        z[31] = (z[31] & 127) | 64
        z[0] &= 248
        let x = unpack(point)
        // RFC 7748's ladder with (a, c) = (x_2, z_2) and (b, d) = (x_3, z_3).
        var a = one, b = x, c = zero, d = one
        for i in stride(from: 254, through: 0, by: -1) {
            let bit = Int64((z[i >> 3] >> UInt8(i & 7)) & 1)
            swap(&a, &b, bit)
            swap(&c, &d, bit)
            var e = add(a, c)
            a = sub(a, c)
            c = add(b, d)
            b = sub(b, d)
            d = mul(e, e)
            let f = mul(a, a)
            a = mul(c, a)
            c = mul(b, e)
            e = add(a, c)
            a = sub(a, c)
            b = mul(a, a)
            c = sub(d, f)
            a = mul(c, a24)
            a = add(a, d)
            c = mul(c, a)
            a = mul(d, f)
            d = mul(b, x)
            b = mul(e, e)
            swap(&a, &b, bit)
            swap(&c, &d, bit)
        }
        return pack(mul(a, invert(c)))
    }

    static func unpack(_ bytes: [UInt8]) -> Field {
        var o = zero
        for i in 0..<16 { o[i] = Int64(bytes[2 * i]) + (Int64(bytes[2 * i + 1]) << 8) }
        o[15] &= 0x7FFF
        return o
    }

    /// Fully reduced mod 2^255 - 19, little-endian.
    static func pack(_ n: Field) -> [UInt8] {
        var t = n
        carry(&t); carry(&t); carry(&t)
        var m = zero
        for _ in 0..<2 {
            m[0] = t[0] - 0xFFED
            for i in 1..<15 {
                m[i] = t[i] - 0xFFFF - ((m[i - 1] >> 16) & 1)
                m[i - 1] &= 0xFFFF
            }
            m[15] = t[15] - 0x7FFF - ((m[14] >> 16) & 1)
            let borrow = (m[15] >> 16) & 1
            m[14] &= 0xFFFF
            swap(&t, &m, 1 - borrow)
        }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<16 {
            out[2 * i] = UInt8(t[i] & 0xFF)
            out[2 * i + 1] = UInt8((t[i] >> 8) & 0xFF)
        }
        return out
    }

    /// Brings each limb back to 16 bits; the carry out of the top limb
    /// wraps around times 38 (2^256 = 38 mod p).
    static func carry(_ o: inout Field) {
        for i in 0..<16 {
            o[i] += 1 << 16
            let c = o[i] >> 16
            if i < 15 { o[i + 1] += c - 1 } else { o[0] += 38 * (c - 1) }
            o[i] -= c << 16
        }
    }

    /// Exchanges p and q when bit is 1, in constant time.
    static func swap(_ p: inout Field, _ q: inout Field, _ bit: Int64) {
        let mask = ~(bit - 1)
        for i in 0..<16 {
            let t = mask & (p[i] ^ q[i])
            p[i] ^= t
            q[i] ^= t
        }
    }

    static func add(_ a: Field, _ b: Field) -> Field { (0..<16).map { a[$0] + b[$0] } }
    static func sub(_ a: Field, _ b: Field) -> Field { (0..<16).map { a[$0] - b[$0] } }

    static func mul(_ a: Field, _ b: Field) -> Field {
        var t = [Int64](repeating: 0, count: 31)
        for i in 0..<16 {
            for j in 0..<16 { t[i + j] += a[i] * b[j] }
        }
        for i in 0..<15 { t[i] += 38 * t[i + 16] }
        var o = Array(t[0..<16])
        carry(&o)
        carry(&o)
        return o
    }

    /// c^(p-2) by square-and-multiply over the fixed exponent 2^255 - 21.
    static func invert(_ i: Field) -> Field {
        var c = i
        for a in stride(from: 253, through: 0, by: -1) {
            c = mul(c, c)
            if a != 2 && a != 4 { c = mul(c, i) }
        }
        return c
    }
}
