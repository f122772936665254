import VPNCore

/// Property lists (XML and binary), through the reader `vpnctl import` runs:
/// never crash, never run away on cycles, shared objects or deep nesting, and
/// a value read writes back (binary and XML) and reads again to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? PropertyList.parse(bytes) else { return 0 }
    let binary = value.binaryDocument()
    guard let again = try? PropertyList.parse(binary), same(again, value) else {
        fatalError("a value read does not survive the binary writer: \(value)")
    }
    let xml = value.xmlDocument()
    guard let fromXML = try? PropertyList.parse(Array(xml.utf8)) else {
        fatalError("a value read does not survive the XML writer:\n\(xml)")
    }
    if !containsDateOrReal(value) && !same(fromXML, value) {
        fatalError("the XML writer changed the value:\n\(xml)")
    }
    return 0
}

/// Equality with reals and dates compared bit for bit (NaN included).
func same(_ a: PropertyList, _ b: PropertyList) -> Bool {
    switch (a, b) {
    case (.real(let x), .real(let y)), (.date(let x), .date(let y)): return x.bitPattern == y.bitPattern
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
    case (.dict(let x), .dict(let y)): return x.count == y.count && x.allSatisfy { k, v in y[k].map { same(v, $0) } ?? false }
    default: return a == b
    }
}

/// XML dates keep whole seconds and reals their decimal text: not bit-exact.
func containsDateOrReal(_ v: PropertyList) -> Bool {
    switch v {
    case .real, .date: return true
    case .array(let a): return a.contains(where: containsDateOrReal)
    case .dict(let d): return d.values.contains(where: containsDateOrReal)
    default: return false
    }
}
