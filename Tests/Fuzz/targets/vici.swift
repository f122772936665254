import VPNCore

/// vici packets as charon's socket delivers them: never crash; a packet that
/// decodes encodes back to a packet that decodes to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var framer = VICI.Framer()
    framer.feed(bytes)
    while let body = try? framer.next() {
        guard let packet = try? VICI.Packet.decode(body) else { continue }
        guard let again = try? packet.encoded() else { continue }
        var f = VICI.Framer()
        f.feed(again)
        guard let b = try? f.next(), let p = try? VICI.Packet.decode(b), p == packet else {
            fatalError("a decoded packet does not survive encoding")
        }
    }
    return 0
}
