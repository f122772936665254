import VPNSystem

/// /proc/net/dev: never crash; what parses, printed back in the kernel's
/// layout, parses to the same counters.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let counters = try? ProcNetDev.parse(bytes) else { return 0 }
    var text = "Inter-|   Receive\n face |bytes\n"
    for c in counters {
        if c.name.isEmpty { fatalError("an interface without a name") }
        text += "\(c.name): \(c.rxBytes) \(c.rxPackets) \(c.rxErrors) \(c.rxDropped) 0 0 0 0 "
            + "\(c.txBytes) \(c.txPackets) \(c.txErrors) \(c.txDropped) 0 0 0 0\n"
    }
    guard let again = try? ProcNetDev.parse(Array(text.utf8)) else { fatalError("re-printed counters do not parse:\n\(text)") }
    if again != counters { fatalError("re-printed counters parse differently") }
    return 0
}
