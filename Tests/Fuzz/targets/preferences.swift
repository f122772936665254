import VPNCore

/// preferences.json as a user may have hand-edited it: never crash; whatever
/// decodes encodes and decodes to the same preferences.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let prefs = try? PreferencesCodec.decode(bytes, path: "p") else { return 0 }
    guard let encoded = try? PreferencesCodec.encode(prefs), let again = try? PreferencesCodec.decode(encoded, path: "p") else {
        fatalError("decoded preferences do not survive encode + decode")
    }
    if again != prefs { fatalError("encode + decode changed the preferences") }
    return 0
}
