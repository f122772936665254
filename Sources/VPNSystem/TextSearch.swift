#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// Whether `needle` occurs in this string, compared as UTF-8 bytes. The
    /// standard library's `contains(_: some StringProtocol)` builds a search
    /// table (a hashed dictionary) on every call; this allocates nothing,
    /// which matters where every line of a provider's output is classified.
    public func containsUTF8(_ needle: String) -> Bool {
        if needle.isEmpty { return true }
        let found = utf8.withContiguousStorageIfAvailable { h in
            needle.utf8.withContiguousStorageIfAvailable { n in String.search(h, n) }
        }
        if let f = found, let result = f { return result }
        let h = Array(utf8), n = Array(needle.utf8)
        return h.withUnsafeBufferPointer { hp in n.withUnsafeBufferPointer { np in String.search(hp, np) } }
    }

    static func search(_ h: UnsafeBufferPointer<UInt8>, _ n: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let hb = h.baseAddress, let nb = n.baseAddress, n.count <= h.count else { return n.isEmpty }
        let first = Int32(nb.pointee), last = h.count - n.count
        var i = 0
        while i <= last {
            guard let hit = memchr(hb + i, first, last - i + 1) else { return false }
            i = hb.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if memcmp(hb + i, nb, n.count) == 0 { return true }
            i += 1
        }
        return false
    }
}
