import VPNCore

/// wg-quick files, through what `vpnctl import` runs: never crash, and a file
/// that imports exports and re-imports to the same profile.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = try? ImportFormat.importChecked(bytes, name: "f", source: "f"),
          case .wireguard(let config) = first.profile.protocol else { return 0 }
    let exported = WGQuick.export(config, secret: { first.secrets[$0].map { String(decoding: $0, as: UTF8.self) } })
    guard let again = try? ImportFormat.importChecked(Array(exported.utf8), name: "f", source: "f") else {
        fatalError("an imported profile does not re-import:\n\(exported)")
    }
    if again.profile.protocol != first.profile.protocol || again.secrets != first.secrets {
        fatalError("export and re-import changed the profile:\n\(exported)")
    }
    return 0
}
