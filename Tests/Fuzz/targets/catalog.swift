import VPNCore

/// Message catalogs (.mo) and the placeholder formatter, through the code
/// vpnctl and the agent run for every message: the input is read as a
/// catalog and every string in it looked up and rendered; then the input is
/// made the translation of a message with two arguments and rendered. Never
/// a trap, whatever the catalog or the format, and a format without '%'
/// comes out as itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    if let catalog = MessageCatalog(bytes: bytes) {
        // The strings a catalog holds end in NUL: each piece is a candidate original.
        for piece in bytes.split(separator: 0, maxSplits: 64).prefix(64) where piece.count < 256 {
            let key = String(decoding: piece, as: UTF8.self)
            if let t = catalog.translation(of: key) {
                precondition(String(validating: Array(t.utf8), as: UTF8.self) != nil)
                _ = Localization.translate(LocalizedText(stringLiteral: key), in: catalog)
            }
        }
    }

    guard let format = String(validating: bytes, as: UTF8.self), !format.utf8.contains(0) else { return 0 }
    let original = "fuzz %1$s and %2$s"
    guard let catalog = MessageCatalog(bytes: mo(original, format)) else { fatalError("a one-entry catalog is refused") }
    guard catalog.translation(of: original) == (format.isEmpty ? nil : format) else {
        fatalError("the catalog does not give back its translation")
    }
    let a = "%2$s", b = "%%"
    let out = Localization.translate("fuzz \(a) and \(b)", in: catalog)
    if !format.isEmpty && !format.utf8.contains(0x25) && out != format {
        fatalError("a format without '%' changed: \(format.debugDescription) -> \(out.debugDescription)")
    }
    return 0
}

/// A little-endian .mo with one entry (msgfmt's layout, no hash table).
func mo(_ original: String, _ translation: String) -> [UInt8] {
    func le(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    let o = Array(original.utf8), t = Array(translation.utf8)
    let strings = 28 + 16
    return le(0x9504_12DE) + le(0) + le(1) + le(28) + le(36) + le(0) + le(0)
        + le(o.count) + le(strings) + le(t.count) + le(strings + o.count + 1)
        + o + [0] + t + [0]
}
