import VPNCore

/// wg-quick files: anything that imports must export and re-import to the same profile.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let text = String(validating: bytes, as: UTF8.self),
          let first = try? WGQuick.parse(text, name: "f", source: "f"),
          case .wireguard(let config) = first.profile.protocol else { return 0 }
    let exported = WGQuick.export(config, secret: { first.secrets[$0].map { String(decoding: $0, as: UTF8.self) } })
    guard let again = try? WGQuick.parse(exported, name: "f", source: "f") else {
        fatalError("an imported profile does not re-import:\n\(exported)")
    }
    if again.profile.protocol != first.profile.protocol || again.secrets != first.secrets {
        fatalError("export and re-import changed the profile:\n\(exported)")
    }
    return 0
}
