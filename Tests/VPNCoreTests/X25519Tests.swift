import Testing
@testable import VPNCore

/// Issue 36 item 7: `vpnctl genkey`/`pubkey` use libcrypto's X25519.
@Suite struct X25519Tests {
    func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { i in
            let s = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[s..<hex.index(s, offsetBy: 2)], radix: 16)!
        }
    }

    /// RFC 7748, section 6.1: Alice's and Bob's key pairs.
    @Test func item7_rfc7748KeyPairs() throws {
        #expect(try X25519.publicKey(bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
                == bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(try X25519.publicKey(bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
                == bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        #expect(throws: Crypto.Problem.self) { try X25519.publicKey([1, 2, 3]) }
    }

    @Test func item7_base64AsWgPubkeyReadsIt() throws {
        #expect(try X25519.publicKey(base64: "  yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\r\n") == "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=")
        #expect(try X25519.publicKey(base64: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk") == nil)
        #expect(try X25519.publicKey(base64: "") == nil)
    }

    @Test func item7_generatedKeysAreClampedAndAgreeWithTheLadder() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<16 {
            let k = try X25519.generatePrivateKey()
            #expect(k.count == 32 && k[0] & 7 == 0 && k[31] & 0x80 == 0 && k[31] & 0x40 != 0)
            #expect(try X25519.publicKey(k) == Curve25519.publicKey(k))
            seen.insert(k)
        }
        #expect(seen.count == 16)
    }
}
