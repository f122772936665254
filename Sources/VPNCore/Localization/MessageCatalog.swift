/// A GNU gettext message catalog (a `.mo` file): the translation of each
/// original string. Entries are found by binary search over the sorted
/// table of originals that msgfmt writes, so opening a catalog reads no
/// more than its header; plural forms are not used by vpnctl.
public struct MessageCatalog: Sendable {
    let bytes: [UInt8]
    let bigEndian: Bool
    let count: Int
    let originals: Int
    let translations: Int

    /// Nil when the bytes are not a .mo file (a bad magic number, or tables
    /// that point outside the file).
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 28 else { return nil }
        let magic = (UInt32(bytes[0]) << 24) | (UInt32(bytes[1]) << 16) | (UInt32(bytes[2]) << 8) | UInt32(bytes[3])
        switch magic {
        case 0x9504_12DE: bigEndian = true
        case 0xDE12_0495: bigEndian = false
        default: return nil
        }
        let big = bigEndian
        func word(_ at: Int) -> UInt32? { MessageCatalog.word(bytes, at, bigEndian: big) }
        guard let revision = word(4), revision >> 16 <= 1,
              let n = word(8), let o = word(12), let t = word(16) else { return nil }
        let size = UInt64(bytes.count)
        guard UInt64(o) + UInt64(n) * 8 <= size, UInt64(t) + UInt64(n) * 8 <= size else { return nil }
        self.bytes = bytes
        count = Int(n)
        originals = Int(o)
        translations = Int(t)
    }

    /// The translation of `original`, nil when the catalog has none (or an
    /// empty one or one that is not UTF-8, which msgfmt does not write but a
    /// damaged file might).
    public func translation(of original: String) -> String? {
        let key = Array(original.utf8)
        guard !key.isEmpty else { return nil }
        var low = 0, high = count - 1
        while low <= high {
            let mid = (low + high) / 2
            guard let entry = string(at: originals + mid * 8) else { return nil }
            let order = compare(key, entry)
            if order == 0 {
                guard let t = string(at: translations + mid * 8), t.count > 0 else { return nil }
                // A plural entry's translations are NUL-separated; the first is the singular.
                let end = bytes[t].firstIndex(of: 0) ?? t.upperBound
                // Bytes that are not UTF-8 (a damaged file) mean English, not U+FFFD.
                return String(validating: bytes[t.lowerBound..<end], as: UTF8.self)
            }
            if order < 0 { high = mid - 1 } else { low = mid + 1 }
        }
        return nil
    }

    /// The original's bytes up to its first NUL (a plural original holds
    /// the singular, a NUL, then the plural), compared bytewise as msgfmt sorts.
    private func compare(_ key: [UInt8], _ entry: Range<Int>) -> Int {
        var i = 0
        var j = entry.lowerBound
        while i < key.count, j < entry.upperBound {
            let b = bytes[j]
            if b == 0 { return 1 }
            if key[i] != b { return key[i] < b ? -1 : 1 }
            i += 1
            j += 1
        }
        if i < key.count { return 1 }
        return j < entry.upperBound && bytes[j] != 0 ? -1 : 0
    }

    /// The string a table descriptor (length, offset) at `at` points to.
    private func string(at descriptor: Int) -> Range<Int>? {
        guard let length = word(descriptor), let offset = word(descriptor + 4) else { return nil }
        let end = UInt64(offset) + UInt64(length)
        guard end <= UInt64(bytes.count) else { return nil }
        return Int(offset)..<Int(end)
    }

    private func word(_ at: Int) -> UInt32? { MessageCatalog.word(bytes, at, bigEndian: bigEndian) }

    private static func word(_ bytes: [UInt8], _ at: Int, bigEndian: Bool) -> UInt32? {
        guard at >= 0, at + 4 <= bytes.count else { return nil }
        let b0 = UInt32(bytes[at]), b1 = UInt32(bytes[at + 1]), b2 = UInt32(bytes[at + 2]), b3 = UInt32(bytes[at + 3])
        return bigEndian ? (b0 << 24 | b1 << 16 | b2 << 8 | b3) : (b3 << 24 | b2 << 16 | b1 << 8 | b0)
    }
}
