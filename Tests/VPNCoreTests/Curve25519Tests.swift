import Testing
@testable import VPNCore

@Suite struct Curve25519Tests {
    func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    /// RFC 7748, section 6.1: Alice's and Bob's key pairs.
    @Test func rfc7748KeyPairs() {
        #expect(Curve25519.publicKey(bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
                == bytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(Curve25519.publicKey(bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
                == bytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
    }

    /// RFC 7748, section 5.2: one iteration of the scalar-multiplication test.
    @Test func rfc7748ScalarMult() {
        #expect(Curve25519.scalarMult(bytes("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                                      bytes("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))
                == bytes("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"))
    }

    /// The same key `wg pubkey` prints for the fixtures' private key.
    @Test func matchesWgPubkey() {
        #expect(Curve25519.publicKey(base64: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=") == "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=")
        #expect(Curve25519.publicKey(base64: "not a key") == nil)
        #expect(Curve25519.publicKey([1, 2, 3]) == nil)
    }
}
