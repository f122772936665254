import VPNCore

/// Configuration profiles (.mobileconfig, plain or CMS-signed), through the
/// mapping `vpnctl import` runs: never crash, and every profile a file maps
/// to is one the validator accepts with the secrets the file carried.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let contents = try? MobileConfig.read(bytes, source: "f", defaultName: "f") else { return 0 }
    for item in contents.items {
        let r = item.result
        let problems = ProfileValidator(secretExists: { r.secrets[$0] != nil }).problems(in: r.profile)
        if !problems.isEmpty { fatalError("a mapped profile does not validate: \(problems)") }
        for (name, _) in r.secrets where !SecretStore.isValidName(name) { fatalError("invalid secret name \(name)") }
    }
    return 0
}
