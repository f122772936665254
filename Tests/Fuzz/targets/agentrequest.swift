import VPNCore
import VPNService

/// Requests to the agent (any local user can send one): never crash; a
/// request that parses is of this protocol's version, names a known call,
/// no text over the limit, and reads back the same after serializing.
/// Reply lines (what the client reads): never crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? ServiceReply.parse(bytes)
    guard let r = try? ServiceRequest.parse(bytes) else { return 0 }
    if size > ServiceRequest.maximumSize { fatalError("parsed a request of \(size) bytes") }
    if !ServiceCall.names.contains(r.call.name) { fatalError("unknown call \(r.call.name) accepted") }
    if let p = r.call.profile, p.isEmpty || p.utf8.count > ServiceRequest.maximumValueLength { fatalError("bad profile accepted") }
    if case .verify(_, let probe, let dns, _) = r.call, probe.utf8.count > ServiceRequest.maximumValueLength
        || (dns?.utf8.count ?? 0) > ServiceRequest.maximumValueLength { fatalError("long value accepted") }
    guard let again = try? ServiceRequest.parse(Array(r.serialized.utf8.dropLast())) else { fatalError("serialized request does not parse") }
    if again != r { fatalError("request changed on a round trip") }
    return 0
}
