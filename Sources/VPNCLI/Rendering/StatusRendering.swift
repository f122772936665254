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
    /// The same shape, built by hand: `status` is called in loops, and
    /// JSONEncoder's generic set-up costs more than the rest of the command.
    /// The keys are in the order they are written (sorted), so no sort.
    var json: JSONValue {
        .object([
            "bypassRoutes": .array(status.bypassRoutes.map { .string($0) }),
            "connectedSince": .optional(status.connectedSince.map(Timestamp.iso8601)),
            "dns": .array(status.dns.map { .string($0) }),
            "id": .string(status.id.lowercasedString),
            "interface": .optional(status.interface),
            "killSwitch": status.killSwitchJSON,
            "lastDisconnectError": status.lastDisconnectError?.json ?? .null,
            "latestHandshake": .optional(status.activity?.latestHandshake.map(Timestamp.iso8601)),
            "name": .string(status.name),
            "persistent": .bool(status.isPersistent),
            "reconnects": .number(String(status.record?.reconnects ?? 0)),
            "resolver": status.resolverJSON,
            "retrying": .optional(status.retrying),
            "rxBytes": status.activity.map { .number(String($0.rxBytes)) } ?? .null,
            "staleResolver": status.staleResolver.map(DerivedStatus.json(of:)) ?? .null,
            "startedBy": status.record?.startedBy.map {
                .object(["by": .string($0.by), "reason": .string($0.reason), "rule": .number(String($0.rule))])
            } ?? .null,
            "status": .string(status.status.name),
            "stopReason": .optional(status.stopReason?.rawValue),
            "txBytes": status.activity.map { .number(String($0.txBytes)) } ?? .null,
        ])
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
    /// The DNS in effect on the system resolver (null when none).
    var resolverJSON: JSONValue { resolver.map(DerivedStatus.json(of:)) ?? .null }

    static func json(of r: ResolverRecord) -> JSONValue {
        .object(["backend": .string(r.backend), "servers": .array(r.servers.map { .string($0) }),
                        "searchDomains": .array(r.searchDomains.map { .string($0) }),
                        "matchDomains": .array(r.matchDomains.map { .string($0) }),
                        "interface": .optional(r.interface), "path": .optional(r.path), "note": .optional(r.note),
                        "reason": .optional(r.reason)])
    }

    /// "on", "blocking" or null.
    var killSwitchJSON: JSONValue { .optional(killSwitch?.rawValue) }

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
