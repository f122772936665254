import VPNCore

/// preferences.json as a user may have hand-edited it: never crash (huge
/// numbers included); whatever decodes passes the load-time checks, survives
/// validation and the next save's arithmetic, prints without a raw control
/// character, and encodes and decodes to the same preferences.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let prefs = try? PreferencesCodec.decode(bytes, path: "p") else { return 0 }
    for p in prefs.profiles {
        if !ProfileName.problems(p.name).isEmpty { fatalError("a profile with an invalid name loaded") }
        if p.revision < 0 { fatalError("a negative revision loaded") }
        _ = p.revision.addingReportingOverflow(1)
        _ = ProfileValidator(secretExists: { _ in true }).problems(in: p)
        for text in [p.name.escapingControls(), p.name.quotedForMessage] where text.unicodeScalars.contains(where: { $0.needsEscapeOnTerminal && $0 != "\n" && $0 != "\t" }) {
            fatalError("a control character survives escaping")
        }
    }
    guard let encoded = try? PreferencesCodec.encode(prefs), let again = try? PreferencesCodec.decode(encoded, path: "p") else {
        fatalError("decoded preferences do not survive encode + decode")
    }
    if again != prefs { fatalError("encode + decode changed the preferences") }
    return 0
}
