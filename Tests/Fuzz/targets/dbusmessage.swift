import VPNDBus

/// Messages to org.vpnctl.VPN1 (any user on the system bus may send one),
/// from their wire form, as libdbus reads them (dbus_message_demarshal):
/// reading the arguments and decoding the call never crash; a refusal is a
/// named D-Bus error; a profile's call names a profile id; and a call that
/// decodes decodes the same from its own wire form again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard let m = BusMessage.demarshal(Array(UnsafeBufferPointer(start: data, count: size))) else { return 0 }
    _ = m.arguments()
    let call: BusCall
    do { call = try BusCall.decode(m) } catch {
        if !error.name.hasPrefix("org.freedesktop.DBus.Error.") || error.message.isEmpty { fatalError("an unnamed refusal: \(error)") }
        return 0
    }
    switch call {
    case .start(let p, _), .stop(let p), .toggle(let p), .verify(let p, _), .stats(let p):
        if p.utf8.count != 36 || p != p.lowercased() { fatalError("a profile call names \(p)") }
    default: break
    }
    guard let bytes = m.marshal(), let again = BusMessage.demarshal(bytes) else { fatalError("a decoded message does not marshal back") }
    if (try? BusCall.decode(again)) != call { fatalError("the call changed on a round trip") }
    return 0
}
