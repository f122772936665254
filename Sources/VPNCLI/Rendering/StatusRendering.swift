#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// The JSON shape of one profile's status, shared by status, start, stop and toggle.
struct StatusJSON: Encodable {
    let status: DerivedStatus

    enum Keys: String, CodingKey {
        case id, name, status, interface, connectedSince, reconnects, lastDisconnectError, stopReason, dns, resolver, killSwitch, bypassRoutes, startedBy,
             staleResolver, persistent, retrying
        case latestHandshake, rxBytes, txBytes
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(status.id.lowercasedString, forKey: .id)
        try c.encode(status.name, forKey: .name)
        try c.encode(status.status.name, forKey: .status)
        try c.encodeOrNull(status.interface, forKey: .interface)
        try c.encodeOrNull(status.connectedSince.map(Timestamp.iso8601), forKey: .connectedSince)
        try c.encode(status.record?.reconnects ?? 0, forKey: .reconnects)
        try c.encodeOrNull(status.lastDisconnectError, forKey: .lastDisconnectError)
        try c.encodeOrNull(status.stopReason?.rawValue, forKey: .stopReason)
        try c.encode(status.dns, forKey: .dns)
        try c.encodeOrNull(status.resolver.map(ResolverJSON.init), forKey: .resolver)
        try c.encodeOrNull(status.killSwitch?.rawValue, forKey: .killSwitch)
        try c.encode(status.bypassRoutes, forKey: .bypassRoutes)
        try c.encodeOrNull(status.record?.startedBy, forKey: .startedBy)
        try c.encodeOrNull(status.staleResolver.map(ResolverJSON.init), forKey: .staleResolver)
        try c.encode(status.isPersistent, forKey: .persistent)
        try c.encodeOrNull(status.retrying, forKey: .retrying)
        try c.encodeOrNull(status.activity?.latestHandshake.map(Timestamp.iso8601), forKey: .latestHandshake)
        try c.encodeOrNull(status.activity?.rxBytes, forKey: .rxBytes)
        try c.encodeOrNull(status.activity?.txBytes, forKey: .txBytes)
    }
}

extension StatusJSON {
    /// The same shape, written by hand: `status` is called in loops, and
    /// JSONEncoder's generic set-up costs more than the rest of the command.
    /// The keys are written in sorted order, as `emit` sorts them.
    var jsonText: String {
        var w = JSONWriter()
        write(to: &w)
        return w.text
    }

    func write(to w: inout JSONWriter) {
        let s = status
        w.object { w in
            w.member("bypassRoutes", s.bypassRoutes)
            w.member("connectedSince", s.connectedSince.map(Timestamp.iso8601))
            w.member("dns", s.dns)
            w.member("id", s.id.lowercasedString)
            w.member("interface", s.interface)
            w.member("killSwitch", s.killSwitch?.rawValue)
            w.key("lastDisconnectError")
            if let e = s.lastDisconnectError {
                w.object { w in
                    w.member("code", e.code)
                    w.member("domain", e.domain)
                    w.member("message", e.message)
                    w.member("name", e.name)
                }
            } else {
                w.null()
            }
            w.member("latestHandshake", s.activity?.latestHandshake.map(Timestamp.iso8601))
            w.member("name", s.name)
            w.member("persistent", s.isPersistent)
            w.member("reconnects", s.record?.reconnects ?? 0)
            w.key("resolver")
            DerivedStatus.write(s.resolver, to: &w)
            w.member("retrying", s.retrying)
            w.member("rxBytes", s.activity?.rxBytes)
            w.key("staleResolver")
            DerivedStatus.write(s.staleResolver, to: &w)
            w.key("startedBy")
            if let by = s.record?.startedBy {
                w.object { w in
                    w.member("by", by.by)
                    w.member("reason", by.reason)
                    w.member("rule", by.rule)
                }
            } else {
                w.null()
            }
            w.member("status", s.status.name)
            w.member("stopReason", s.stopReason?.rawValue)
            w.member("txBytes", s.activity?.txBytes)
        }
    }
}

/// `resolver` in status JSON, with the same members as `resolverJSON`.
struct ResolverJSON: Encodable {
    let r: ResolverRecord
    init(_ r: ResolverRecord) { self.r = r }
    enum Keys: String, CodingKey { case backend, servers, searchDomains, matchDomains, interface, path, note, reason }
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(r.backend, forKey: .backend)
        try c.encode(r.servers, forKey: .servers)
        try c.encode(r.searchDomains, forKey: .searchDomains)
        try c.encode(r.matchDomains, forKey: .matchDomains)
        try c.encodeOrNull(r.interface, forKey: .interface)
        try c.encodeOrNull(r.path, forKey: .path)
        try c.encodeOrNull(r.note, forKey: .note)
        try c.encodeOrNull(r.reason, forKey: .reason)
    }
}

extension DerivedStatus {
    /// A resolver record as status JSON writes it (null when none), with the
    /// members of ResolverJSON.
    static func write(_ r: ResolverRecord?, to w: inout JSONWriter) {
        guard let r else { return w.null() }
        w.object { w in
            w.member("backend", r.backend)
            w.member("interface", r.interface)
            w.member("matchDomains", r.matchDomains)
            w.member("note", r.note)
            w.member("path", r.path)
            w.member("reason", r.reason)
            w.member("searchDomains", r.searchDomains)
            w.member("servers", r.servers)
        }
    }

    /// One line for people: "198.19.8.1 (resolv.conf)".
    var resolverText: String? { resolver.map(DerivedStatus.text(of:)) }

    static func text(of r: ResolverRecord) -> String {
        var parts = r.servers
        parts += r.searchDomains.map { "search \($0)" }
        parts += r.matchDomains.map { "~\($0)" }
        return parts.joined(separator: " ") + " (\(r.backend))"
    }

    /// The DNS column of `status`: the resolver in effect, else the DNS the
    /// tunnel asked for, else "-".
    var dnsCell: String { resolverText ?? (dns.isEmpty ? "-" : dns.joined(separator: ",")) }

    /// Whether a table of these statuses has a DNS column.
    static func showsDNS(_ all: [DerivedStatus]) -> Bool { all.contains { !$0.dns.isEmpty || $0.resolver != nil } }
}

struct OneStatusResult: Encodable {
    var schemaVersion = 1
    let action: String
    let profile: StatusJSON
}

/// A one-line status for people: symbol, status, profile, interface, error.
func statusCard(_ d: DerivedStatus, _ out: Output) -> String {
    let symbol: String, colour: String
    switch d.status {
    case .connected: symbol = "●"; colour = "32"
    case .connecting, .reasserting, .disconnecting: symbol = "◐"; colour = "33"
    default:
        if d.lastDisconnectError != nil && d.stopReason != .userInitiated { symbol = "✗"; colour = "31" }
        else { symbol = "○"; colour = "90" }
    }
    var s = "\(out.paint(symbol + " " + d.status.displayName, colour))  \(d.name)"
    if let i = d.interface { s += "  \(i)" }
    if let e = d.lastDisconnectError, d.status == .disconnected, d.stopReason != .userInitiated {
        s += "  " + out.paint("\(e.name): \(e.message)", "31")
    }
    return s
}
