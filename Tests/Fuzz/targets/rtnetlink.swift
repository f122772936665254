import VPNSystem

/// RTM_NEWLINK answers, as `stats` parses them in place: never crash or read
/// past a message; counters carry the name of their link.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard let (links, _) = try? LinkDump.links(in: UnsafeRawBufferPointer(start: data, count: size)) else { return 0 }
    for link in links {
        if let c = link.counters, c.name != link.name { fatalError("counters named \(c.name), link \(link.name)") }
    }
    return 0
}
