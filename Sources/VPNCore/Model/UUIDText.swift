import FoundationEssentials

/// UUID text without the C formatting behind Foundation's: `uuidString`
/// goes through snprintf and `UUID(uuidString:)` through sscanf, which cost
/// more than the rest of a profile's load when a store holds a thousand.
extension UUID {
    /// The lowercase form vpnctl writes everywhere; the same text as
    /// `lowercasedString`.
    public var lowercasedString: String {
        withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits: StaticString = "0123456789abcdef"
                var j = 0
                for (k, byte) in raw.enumerated() {
                    if k == 4 || k == 6 || k == 8 || k == 10 { out[j] = UInt8(ascii: "-"); j += 1 }
                    out[j] = digits.utf8Start[Int(byte >> 4)]
                    out[j + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    j += 2
                }
                return j
            }
        }
    }

    /// `UUID(uuidString:)`, answered directly for the canonical form
    /// (8-4-4-4-12 hex digits, either case); any other text goes to Foundation.
    public static func parse(_ text: String) -> UUID? {
        var text = text
        let bytes = text.withUTF8 { canonicalBytes($0) }
        guard let b = bytes else { return UUID(uuidString: text) }
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// The UUID whose 32 hex digits, without dashes, are `hex` (as a D-Bus
    /// object path writes it), or nil.
    public static func parse<C: Collection<UInt8>>(compactHex hex: C) -> UUID? {
        guard hex.count == 32 else { return nil }
        var b = [UInt8](repeating: 0, count: 16)
        var i = hex.startIndex
        for k in 0..<16 {
            let h = hexDigit(hex[i]); i = hex.index(after: i)
            let l = hexDigit(hex[i]); i = hex.index(after: i)
            guard let h, let l else { return nil }
            b[k] = h << 4 | l
        }
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    static func canonicalBytes(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard text.count == 36 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        var j = 0
        while j < 36 {
            if j == 8 || j == 13 || j == 18 || j == 23 {
                guard text[j] == UInt8(ascii: "-") else { return nil }
                j += 1
                continue
            }
            guard let high = hexDigit(text[j]), let low = hexDigit(text[j + 1]) else { return nil }
            out.append(high << 4 | low)
            j += 2
        }
        return out
    }

    static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
