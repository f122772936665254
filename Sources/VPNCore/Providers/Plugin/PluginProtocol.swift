import FoundationEssentials

/// The plugin protocol (man vpnctl-provider(7)): one JSON object per line on
/// fd 4. This is the supervisor's side: what a plugin may say, read
/// strictly, and what the supervisor says to it.
public enum PluginMessage: Equatable, Sendable {
    /// NEPacketTunnelNetworkSettings: prefixes in CIDR form.
    case setTunnelNetworkSettings(id: Int?, Settings)
    case status(VPNStatus)
    /// cancelTunnelWithError: an NEVPNConnectionError name and a message.
    case error(ConnectionError.Kind, String)
    /// A secret of the profile, by its providerConfiguration key.
    case secret(id: Int?, name: String)

    public struct Settings: Equatable, Sendable {
        public var addresses: [String] = []
        public var routes: [String] = []
        public var excludedRoutes: [String] = []
        public var dns: [String] = []
        public var mtu: Int? = nil
        public init() {}
    }

    /// The longest line either side sends, newline included.
    public static let maximumLineLength = 65536

    /// Reads one line; throws a `PluginProblem` naming what is wrong.
    public static func parse(_ line: [UInt8]) throws -> PluginMessage {
        let value: JSONValue
        do { value = try JSONSyntax.parse(line) } catch { throw PluginProblem("a line that is not JSON (\(error))") }
        let r = JSONReader(value)
        do {
            guard let type = try r.string("type") else { throw PluginProblem("a message without a \"type\"") }
            let id = try r.int("id")
            switch type {
            case "setTunnelNetworkSettings":
                var s = Settings()
                s.addresses = try r.strings("addresses")
                s.routes = try r.strings("routes")
                s.excludedRoutes = try r.strings("excludedRoutes")
                s.dns = try r.strings("dns")
                s.mtu = try r.int("mtu")
                for a in s.addresses where CIDR(a) == nil || !a.contains("/") { throw PluginProblem("settings with an address that is not ADDRESS/PREFIX: \(shown(a))") }
                for p in s.routes + s.excludedRoutes where CIDR(p) == nil || !p.contains("/") { throw PluginProblem("settings with a route that is not a prefix: \(shown(p))") }
                for d in s.dns where IPAddress(d) == nil { throw PluginProblem("settings with a DNS server that is not an address: \(shown(d))") }
                if let mtu = s.mtu, !(576...65535).contains(mtu) { throw PluginProblem("settings with an MTU of \(mtu) (576–65535)") }
                return .setTunnelNetworkSettings(id: id, s)
            case "status":
                switch try r.string("status") {
                case "connecting": return .status(.connecting)
                case "connected": return .status(.connected)
                case "reasserting": return .status(.reasserting)
                case let other: throw PluginProblem("a status that is not connecting, connected or reasserting: \(shown(other ?? "none"))")
                }
            case "error":
                let name = try r.string("name") ?? ""
                guard let kind = ConnectionError.Kind.named(name) else {
                    throw PluginProblem("an error whose name is not an NEVPNConnectionError name: \(shown(name))")
                }
                return .error(kind, try r.string("message") ?? "")
            case "secret":
                guard let name = try r.string("name"), !name.isEmpty else { throw PluginProblem("a secret request without a name") }
                return .secret(id: id, name: name)
            default:
                throw PluginProblem("a message of unknown type \(shown(type))")
            }
        } catch let p as JSONDecodeProblem {
            throw PluginProblem("a malformed message (\(p))")
        }
    }

    static func shown(_ s: String) -> String {
        var out = ""
        JSONValue.quote(String(s.prefix(80)), into: &out)
        return out
    }

    // MARK: supervisor -> plugin

    public static func start(providerConfiguration: [String: String], serverAddress: String?, interface: String) -> String {
        var members: [String: JSONValue] = ["type": .string("start"), "interface": .string(interface),
                                            "providerConfiguration": .object(JSONObject(providerConfiguration.mapValues { .string($0) }))]
        if let serverAddress { members["serverAddress"] = .string(serverAddress) }
        return JSONValue.object(JSONObject(members)).serialized
    }

    public static func stop(_ reason: StopReason) -> String {
        JSONValue.object(["type": .string("stop"), "reason": .string(reason.rawValue)]).serialized
    }

    public static func settingsReply(id: Int?, error: String?) -> String {
        var m: [String: JSONValue] = ["type": .string("setTunnelNetworkSettings"), "ok": .bool(error == nil)]
        if let id { m["id"] = .number(String(id)) }
        if let error { m["error"] = .string(error) }
        return JSONValue.object(JSONObject(m)).serialized
    }

    /// Carries the secret's value: written to the socket only, never logged.
    public static func secretReply(id: Int?, name: String, value: String?, error: String?) -> String {
        var m: [String: JSONValue] = ["type": .string("secret"), "name": .string(name)]
        if let id { m["id"] = .number(String(id)) }
        if let value { m["value"] = .string(value) }
        if let error { m["error"] = .string(error) }
        return JSONValue.object(JSONObject(m)).serialized
    }
}

/// Splits the control socket's bytes into lines, refusing one longer than
/// `limit` (the partial line is never kept beyond it).
public struct PluginLineBuffer: Sendable {
    public let limit: Int
    var pending: [UInt8] = []

    public init(limit: Int = PluginMessage.maximumLineLength) { self.limit = limit }

    /// The complete lines in `bytes` added to what was pending; throws once a
    /// line is longer than the limit.
    public mutating func append(_ bytes: some Collection<UInt8>) throws -> [[UInt8]] {
        pending += bytes
        var lines: [[UInt8]] = []
        var start = pending.startIndex
        while let nl = pending[start...].firstIndex(of: 0x0A) {
            if nl - start + 1 > limit { throw PluginProblem("a line longer than \(limit) bytes") }
            lines.append(Array(pending[start..<nl]))
            start = nl + 1
        }
        pending.removeFirst(start - pending.startIndex)
        if pending.count >= limit { throw PluginProblem("a line longer than \(limit) bytes") }
        return lines
    }
}

extension ConnectionError.Kind {
    /// The kind of an NEVPNConnectionError name.
    public static func named(_ name: String) -> ConnectionError.Kind? {
        (1...19).lazy.compactMap { ConnectionError.Kind(rawValue: $0) }.first { $0.name == name }
    }
}
