import VPNCore

/// Requests to the agent (any local user can send one): never crash; a
/// request that parses names a known verb, only options that verb takes,
/// no value over the limit, and reads back the same after serializing.
/// Reply frames: never crash, never claim more bytes than given.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let (_, used) = try? AgentFrame.decode(bytes[...]), used > bytes.count { fatalError("frame took \(used) of \(bytes.count) bytes") }
    guard let r = try? AgentRequest.parse(bytes) else { return 0 }
    if size > AgentRequest.maximumSize { fatalError("parsed a request of \(size) bytes") }
    for f in r.flags where !(r.verb.flags.contains(f) || AgentRequest.Verb.commonFlags.contains(f)) { fatalError("flag \(f) accepted") }
    for (k, v) in r.values {
        if !(r.verb.valueOptions.contains(k) || AgentRequest.Verb.commonValueOptions.contains(k)) { fatalError("value \(k) accepted") }
        if v.utf8.count > AgentRequest.maximumValueLength { fatalError("long value accepted") }
    }
    if r.verb.needsProfile && r.profile == nil { fatalError("\(r.verb) without a profile") }
    guard let again = try? AgentRequest.parse(Array(r.serialized.utf8.dropLast())) else { fatalError("serialized request does not parse") }
    if again != r { fatalError("request changed on a round trip") }
    return 0
}
