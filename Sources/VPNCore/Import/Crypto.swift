import CCrypto
import FoundationEssentials

/// What vpnctl asks of libcrypto (OpenSSL 3): reading certificates, opening
/// PKCS#12 identities, and checking CMS SignedData (signed configuration
/// profiles). vpnctl never creates keys or certificates.
public enum Crypto {
    /// Why libcrypto refused: the message, with OpenSSL's own reasons after it.
    public struct Problem: Error, CustomStringConvertible, Equatable, Sendable {
        public let message: String
        public var description: String { message }
        public init(_ message: String) { self.message = message }
    }

    /// One X.509 certificate, as vpnctl shows it.
    public struct Certificate: Equatable, Sendable {
        public let der: [UInt8]
        public let subject: String
        public let issuer: String
        /// ISO 8601, UTC.
        public let notBefore: String
        public let notAfter: String
        public var fingerprint: String { SHA256.hex(der) }
        public var pem: String { PEM.encode(label: "CERTIFICATE", der: der) }
    }

    /// A certificate and its private key, from a PKCS#12 file.
    public struct Identity: Sendable {
        public let certificate: Certificate
        /// PKCS#8 PEM: a secret, never printed.
        public let privateKeyPEM: [UInt8]
        /// Further certificates the file carried (a chain).
        public let chain: [Certificate]
    }

    /// What a signed profile held, and who signed it.
    public struct SignedContent: Sendable {
        public let content: [UInt8]
        public let signer: Certificate
        /// Whether the signer was checked against the given anchors.
        public let chainVerified: Bool
    }

    /// OpenSSL's queued reasons, oldest first, cleared.
    static func errors() -> String {
        var reasons: [String] = []
        while true {
            var file: UnsafePointer<CChar>? = nil, function: UnsafePointer<CChar>? = nil, data: UnsafePointer<CChar>? = nil
            var line: Int32 = 0, flags: Int32 = 0
            let code = ERR_get_error_all(&file, &line, &function, &data, &flags)
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            var text = String(cString: ERR_reason_error_string(code) ?? buffer.withUnsafeBufferPointer { $0.baseAddress! })
            if let data, flags & ERR_TXT_STRING != 0, data.pointee != 0 { text += " (\(String(cString: data)))" }
            if !reasons.contains(text) { reasons.append(text) }
        }
        return reasons.joined(separator: "; ")
    }

    static func failure(_ message: String) -> Problem {
        let why = errors()
        return Problem(why.isEmpty ? message : "\(message): \(why)")
    }

    static func withBIO<T>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> T) throws -> T {
        try bytes.withUnsafeBytes { raw in
            // BIO_new_mem_buf takes an int: a larger buffer is refused, not trapped on.
            guard let length = Int32(exactly: raw.count) else { throw Problem(L("\(raw.count) bytes are more than libcrypto reads at once")) }
            guard let bio = BIO_new_mem_buf(raw.baseAddress, length) else { throw failure(L("out of memory")) }
            defer { BIO_free(bio) }
            return try body(bio)
        }
    }

    static func memoryBIOText(_ body: (OpaquePointer) -> Void) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        body(bio)
        var p: UnsafeMutablePointer<CChar>? = nil
        let n = vpnctl_bio_mem_data(bio, &p)
        guard let p, n > 0 else { return [] }
        return p.withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) }
    }

    static func name(_ n: OpaquePointer?) -> String {
        guard let n else { return "" }
        return String(decoding: memoryBIOText { _ = X509_NAME_print_ex($0, n, 0, vpnctl_name_flags()) }, as: UTF8.self)
    }

    static func time(_ t: UnsafePointer<ASN1_TIME>?) -> String {
        var tm = tm()
        guard let t, ASN1_TIME_to_tm(t, &tm) == 1 else { return "unknown" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(tm.tm_year + 1900)-\(two(tm.tm_mon + 1))-\(two(tm.tm_mday))T\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec))Z"
    }

    static func describe(_ x: OpaquePointer) throws -> Certificate {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let n = i2d_X509(x, &out)
        guard n > 0, let out else { throw failure(L("cannot encode a certificate")) }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Certificate(der: Array(UnsafeBufferPointer(start: out, count: Int(n))),
                           subject: name(X509_get_subject_name(x)), issuer: name(X509_get_issuer_name(x)),
                           notBefore: time(X509_get0_notBefore(x)), notAfter: time(X509_get0_notAfter(x)))
    }

    /// One DER certificate, checked: libcrypto must read all of it.
    public static func certificate(der: [UInt8]) throws -> Certificate {
        ERR_clear_error()
        guard !der.isEmpty else { throw Problem(L("empty certificate")) }
        let x: OpaquePointer = try der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let x = d2i_X509(nil, &p, buf.count) else { throw failure(L("not a DER X.509 certificate")) }
            if let p, p != buf.baseAddress! + buf.count {
                X509_free(x)
                throw Problem(L("not a DER X.509 certificate: \(buf.baseAddress! + buf.count - p) bytes after it"))
            }
            return x
        }
        defer { X509_free(x) }
        return try describe(x)
    }

    /// The certificates of a PEM text (each block checked).
    public static func certificates(pem text: String) throws -> [Certificate] {
        var out: [Certificate] = []
        for (i, block) in PEM.blocks(text).enumerated() where block.label == "CERTIFICATE" || block.label == "TRUSTED CERTIFICATE" {
            guard let der = block.der else { throw Problem(L("PEM block \(i + 1) is not valid base64")) }
            out.append(try certificate(der: der))
        }
        return out
    }

    /// The most key-derivation iterations a PKCS#12 MAC may ask for (OpenSSL
    /// and macOS write 2,048; the most careful exporters a few hundred thousand).
    public static let maximumIterations: Int64 = 1_000_000

    /// Whether the legacy provider (RC2-40, 3DES PKCS#12) has been loaded.
    nonisolated(unsafe) static var legacyLoaded = false

    /// Opens a PKCS#12 file. A wrong password is told apart from a damaged
    /// file; files made with legacy algorithms (RC2-40, OpenSSL 1.x, macOS
    /// Keychain exports) need OpenSSL 3's legacy provider, loaded on demand.
    public static func pkcs12(_ der: [UInt8], password: String) throws -> Identity {
        ERR_clear_error()
        let p12: OpaquePointer = try der.withUnsafeBufferPointer { buf in
            var p: UnsafePointer<UInt8>? = buf.baseAddress
            guard let x = d2i_PKCS12(nil, &p, buf.count) else { throw failure(L("not a PKCS#12 file")) }
            return x
        }
        defer { PKCS12_free(p12) }
        if PKCS12_mac_present(p12) == 1 {
            // The file sets how long checking its MAC takes: a hostile one could ask for hours.
            var mac: UnsafePointer<ASN1_OCTET_STRING>? = nil, salt: UnsafePointer<ASN1_OCTET_STRING>? = nil
            var alg: UnsafePointer<X509_ALGOR>? = nil, iter: UnsafePointer<ASN1_INTEGER>? = nil
            PKCS12_get0_mac(&mac, &alg, &salt, &iter, p12)
            var n: Int64 = 1
            if let iter, ASN1_INTEGER_get_int64(&n, iter) != 1 { n = Int64.max }
            guard (1...maximumIterations).contains(n) else {
                throw Problem(L("the PKCS#12 file asks for \(n) MAC iterations (vpnctl allows 1 to \(maximumIterations))"))
            }
        }
        let bagIterations = vpnctl_pkcs12_max_iterations(p12)
        if bagIterations > maximumIterations {
            throw Problem(L("the PKCS#12 file asks for \(bagIterations) key-derivation iterations (vpnctl allows up to \(maximumIterations))"))
        }
        ERR_clear_error()
        if PKCS12_mac_present(p12) == 1 && PKCS12_verify_mac(p12, password, -1) != 1 {
            let why = errors()
            if why.contains("unsupported") || why.contains("unknown digest") {
                throw Problem(L("the PKCS#12 file's integrity check uses an algorithm this OpenSSL lacks: \(why)"))
            }
            throw Problem(L("wrong password for the PKCS#12 file (its integrity check fails)"))
        }
        var key: OpaquePointer? = nil, cert: OpaquePointer? = nil, ca: OpaquePointer? = nil
        var ok = PKCS12_parse(p12, password, &key, &cert, &ca) == 1
        if !ok && !legacyLoaded {
            ERR_clear_error()
            // Loading any provider turns off the implicit default: load both.
            if OSSL_PROVIDER_load(nil, "legacy") != nil, OSSL_PROVIDER_load(nil, "default") != nil { legacyLoaded = true }
            ok = PKCS12_parse(p12, password, &key, &cert, &ca) == 1
        }
        guard ok else {
            throw failure(legacyLoaded ? L("cannot open the PKCS#12 file") : L("cannot open the PKCS#12 file (OpenSSL's legacy provider is not available)"))
        }
        defer {
            EVP_PKEY_free(key)
            X509_free(cert)
            vpnctl_x509_stack_pop_free(ca)
        }
        guard let cert else { throw Problem(L("the PKCS#12 file holds no certificate")) }
        guard let key else { throw Problem(L("the PKCS#12 file holds no private key")) }
        guard X509_check_private_key(cert, key) == 1 else {
            ERR_clear_error()
            throw Problem(L("the PKCS#12 file's private key does not belong to its certificate"))
        }
        let keyPEM = memoryBIOText { _ = PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        guard !keyPEM.isEmpty else { throw failure(L("cannot write the private key")) }
        var chain: [Certificate] = []
        for i in 0..<vpnctl_x509_stack_count(ca) {
            if let x = vpnctl_x509_stack_at(ca, i) { chain.append(try describe(x)) }
        }
        return Identity(certificate: try describe(cert), privateKeyPEM: keyPEM, chain: chain)
    }

    /// A PKCS#12 file (AES, as OpenSSL 3 writes by default) of an identity
    /// kept as PEM (certificate, then private key), for an exported profile.
    public static func pkcs12(identityPEM: [UInt8], password: String) throws -> [UInt8] {
        ERR_clear_error()
        let cert: OpaquePointer = try withBIO(identityPEM) { bio in
            guard let x = PEM_read_bio_X509(bio, nil, nil, nil) else { throw failure(L("the identity holds no PEM certificate")) }
            return x
        }
        defer { X509_free(cert) }
        let key: OpaquePointer = try withBIO(identityPEM) { bio in
            guard let k = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { throw failure(L("the identity holds no PEM private key")) }
            return k
        }
        defer { EVP_PKEY_free(key) }
        guard let p12 = PKCS12_create(password, "vpnctl identity", key, cert, nil, 0, 0, 0, 0, 0) else {
            throw failure(L("cannot make a PKCS#12 file of the identity"))
        }
        defer { PKCS12_free(p12) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let n = i2d_PKCS12(p12, &out)
        guard n > 0, let out else { throw failure(L("cannot encode the PKCS#12 file")) }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(n)))
    }

    /// The DER inside a PEM-armoured CMS (`-----BEGIN PKCS7-----` or
    /// `-----BEGIN CMS-----`, as `openssl smime -outform PEM` writes), or nil.
    public static func derFromPEM(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count < 4 << 20, bytes.starts(with: Array("-----BEGIN ".utf8)) else { return nil }
        let blocks = PEM.blocks(String(decoding: bytes, as: UTF8.self))
        guard blocks.count == 1, ["PKCS7", "CMS"].contains(blocks[0].label) else { return nil }
        return blocks[0].der
    }

    /// Whether `bytes` are a DER (or BER) CMS/PKCS#7 ContentInfo (a signed or
    /// encrypted profile): a SEQUENCE whose first element is a pkcs7 OID. A
    /// PKCS#12 file (a SEQUENCE that starts with its version, an INTEGER) is not.
    public static func looksLikeCMS(_ bytes: [UInt8]) -> Bool {
        if let der = derFromPEM(bytes) { return der.first == 0x30 }
        guard bytes.count > 2, bytes[0] == 0x30 else { return false }
        // The outer length: short form, long form (0x8N and N bytes), or BER's indefinite 0x80.
        let start = 2 + (bytes[1] & 0x80 != 0 ? Int(bytes[1] & 0x7F) : 0)
        let oid: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07]
        return bytes.count >= start + oid.count && Array(bytes[start..<(start + oid.count)]) == oid
    }

    /// Unwraps a CMS SignedData and checks its signature. With `anchors`, the
    /// signer's certificate must also chain to one of them (any purpose:
    /// profiles are often signed with a TLS server certificate).
    public static func verifySigned(_ input: [UInt8], anchors: [Certificate]?) throws -> SignedContent {
        ERR_clear_error()
        let der = derFromPEM(input) ?? input
        let cms: OpaquePointer = try withBIO(der) { bio in
            guard let c = d2i_CMS_bio(bio, nil) else { throw failure(L("not a CMS (PKCS#7) structure")) }
            return c
        }
        defer { CMS_ContentInfo_free(cms) }
        if vpnctl_cms_is_enveloped(cms) == 1 {
            throw Problem(L("the profile is encrypted (CMS EnvelopedData) for another device's key; vpnctl cannot read it"))
        }
        guard vpnctl_cms_is_signed_data(cms) == 1 else { throw Problem(L("the CMS structure is not SignedData")) }
        guard let out = BIO_new(BIO_s_mem()) else { throw failure(L("out of memory")) }
        defer { BIO_free(out) }
        // First the signature alone: a changed byte fails here, whoever signed.
        guard CMS_verify(cms, nil, nil, nil, out, UInt32(CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY)) == 1 else {
            let why = errors()
            if why.contains("signer certificate not found") {
                throw Problem(L("the signed profile does not carry its signer's certificate (signed with -nocerts?), so nothing can be checked"))
            }
            if why.contains("no content") {
                throw Problem(L("the signature is detached: the profile itself is not inside it (sign with -nodetach)"))
            }
            throw Problem(L("the signature does not match the content (the profile was changed after it was signed, or the signature is damaged)")
                          + (why.isEmpty ? "" : ": \(why)"))
        }
        let signers = CMS_get0_signers(cms)
        defer { vpnctl_x509_stack_free(signers) }
        guard vpnctl_x509_stack_count(signers) >= 1, let first = vpnctl_x509_stack_at(signers, 0) else {
            throw Problem(L("the signed profile does not carry its signer's certificate"))
        }
        let signer = try describe(first)
        var p: UnsafeMutablePointer<CChar>? = nil
        let n = vpnctl_bio_mem_data(out, &p)
        let content = p.map { q in q.withMemoryRebound(to: UInt8.self, capacity: max(n, 0)) { Array(UnsafeBufferPointer(start: $0, count: max(n, 0))) } } ?? []
        guard let anchors else { return SignedContent(content: content, signer: signer, chainVerified: false) }
        guard let store = X509_STORE_new() else { throw failure(L("out of memory")) }
        defer { X509_STORE_free(store) }
        for a in anchors {
            let x: OpaquePointer = try a.der.withUnsafeBufferPointer { buf in
                var q: UnsafePointer<UInt8>? = buf.baseAddress
                guard let x = d2i_X509(nil, &q, buf.count) else { throw failure(L("cannot read a --ca certificate")) }
                return x
            }
            X509_STORE_add_cert(store, x)
            X509_free(x)
        }
        X509_STORE_set_purpose(store, X509_PURPOSE_ANY)
        guard let sink = BIO_new(BIO_s_mem()) else { throw failure(L("out of memory")) }
        defer { BIO_free(sink) }
        guard CMS_verify(cms, nil, store, nil, sink, UInt32(CMS_BINARY)) == 1 else {
            throw failure(L("the signer (\(signer.subject)) does not chain to the given CA"))
        }
        return SignedContent(content: content, signer: signer, chainVerified: true)
    }
}
