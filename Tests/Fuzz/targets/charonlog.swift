import VPNCore

/// charon's log lines (vici `log` events), one per input line: never crash;
/// a diagnosis always quotes charon, and the first decisive line stays.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    var d = CharonDiagnosis()
    var first: ConnectionError?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        d.observe(String(line))
        if first == nil { first = d.fatal }
        if let f = first, d.fatal != f { fatalError("a later line replaced the first diagnosis") }
    }
    if let f = d.fatal, !f.message.contains("charon: ") { fatalError("a diagnosis that does not quote charon: \(f.message)") }
    for connected in [true, false] { _ = d.downError(connected: connected) }
    return 0
}
