/// The WireGuard cross-platform UAPI (wireguard.com/xplatform): `set=1` and
/// `get=1` exchanges of key=value lines over a unix socket. Keys are hex here.
public enum WireGuardUAPI {
    public struct PeerConfig: Equatable, Sendable {
        public var publicKeyHex: String
        public var presharedKeyHex: String?
        public var endpoint: String?
        public var keepalive: Int?
        public var allowedIPs: [String]
    }

    /// The `set=1` request. Ends with the blank line that terminates it.
    public static func setRequest(privateKeyHex: String, listenPort: Int?, fwmark: UInt32?, peers: [PeerConfig]) -> String {
        var s = "set=1\nprivate_key=\(privateKeyHex)\n"
        if let listenPort { s += "listen_port=\(listenPort)\n" }
        if let fwmark { s += "fwmark=\(fwmark)\n" }
        s += "replace_peers=true\n"
        for p in peers {
            s += "public_key=\(p.publicKeyHex)\n"
            if let psk = p.presharedKeyHex { s += "preshared_key=\(psk)\n" }
            if let e = p.endpoint { s += "endpoint=\(e)\n" }
            if let k = p.keepalive { s += "persistent_keepalive_interval=\(k)\n" }
            s += "replace_allowed_ips=true\n"
            for a in p.allowedIPs { s += "allowed_ip=\(a)\n" }
        }
        return s + "\n"
    }

    /// Changes one peer's keepalive. Going from 0 to non-zero makes
    /// wireguard-go send a keepalive at once, which starts a handshake.
    public static func keepaliveRequest(publicKeyHex: String, seconds: Int) -> String {
        "set=1\npublic_key=\(publicKeyHex)\nupdate_only=true\npersistent_keepalive_interval=\(seconds)\n\n"
    }

    public struct PeerStatus: Equatable, Sendable {
        public var publicKeyHex: String
        public var lastHandshakeSec: Int64 = 0
        public var lastHandshakeNsec: Int64 = 0
        public var rxBytes: UInt64 = 0
        public var txBytes: UInt64 = 0
        public var endpoint: String? = nil
    }

    public enum ReplyError: Error, Equatable, Sendable, CustomStringConvertible {
        case errno(Int)
        case malformed(String)

        public var description: String {
            switch self {
            case .errno(let n): return "wireguard-go answered errno=\(n)"
            case .malformed(let line): return "wireguard-go sent a malformed line \(line.quotedForMessage)"
            }
        }
    }

    /// Parses a `get=1` reply. Unknown keys are ignored, as the protocol asks.
    public static func parseGet(_ text: String) throws -> [PeerStatus] {
        var peers: [PeerStatus] = []
        var sawErrno = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let eq = line.firstIndex(of: "=") else { throw ReplyError.malformed(String(line.prefix(80))) }
            let key = line[..<eq], value = line[line.index(after: eq)...]
            switch key {
            case "errno":
                sawErrno = true
                guard let n = Int(value) else { throw ReplyError.malformed(String(line.prefix(80))) }
                if n != 0 { throw ReplyError.errno(n) }
            case "public_key":
                peers.append(PeerStatus(publicKeyHex: String(value)))
            // In range, so that seconds * 1000 + nanoseconds / 10^6 cannot overflow.
            case "last_handshake_time_sec":
                guard let v = Int64(value), (0...(Int64.max / 1000 - 1000)).contains(v) else { throw ReplyError.malformed(String(line.prefix(80))) }
                if !peers.isEmpty { peers[peers.count - 1].lastHandshakeSec = v }
            case "last_handshake_time_nsec":
                guard let v = Int64(value), (0..<1_000_000_000).contains(v) else { throw ReplyError.malformed(String(line.prefix(80))) }
                if !peers.isEmpty { peers[peers.count - 1].lastHandshakeNsec = v }
            case "rx_bytes":
                if !peers.isEmpty, let v = UInt64(value) { peers[peers.count - 1].rxBytes = v }
            case "tx_bytes":
                if !peers.isEmpty, let v = UInt64(value) { peers[peers.count - 1].txBytes = v }
            case "endpoint":
                if !peers.isEmpty { peers[peers.count - 1].endpoint = String(value) }
            default:
                continue
            }
        }
        if !sawErrno { throw ReplyError.malformed("no errno line") }
        return peers
    }

    /// Parses a `set=1` reply: just `errno=N`.
    public static func parseSet(_ text: String) throws {
        _ = try parseGet(text)
    }
}

/// Decides connected / reasserting for WireGuard, which has no connected
/// state of its own. Pure, so the rules are unit-tested with a fake clock.
public struct WireGuardHealth: Sendable {
    public enum Verdict: Equatable, Sendable {
        case connecting
        case connected
        case reasserting(String)
    }

    /// WireGuard's keepalive (10 s) plus its rekey timeout (5 s).
    public static let silenceLimit: Int64 = 15_000
    /// REJECT_AFTER_TIME: a session older than this cannot carry data.
    public static let staleHandshake: Int64 = 180_000

    var lastRx: UInt64 = 0
    var lastTx: UInt64 = 0
    var lastRxChangeAt: Int64 = 0
    var sendingWithoutReplySince: Int64? = nil
    var reassertingSince: Int64? = nil
    var handshakeAtReassert: Int64 = 0
    var rxAtReassert: UInt64 = 0
    /// rx when the current path problem was first seen: data received after
    /// it disproves it (wireguard-go sends from a remembered source and
    /// interface, so a deleted default route need not stop the tunnel).
    var rxAtPathProblem: UInt64? = nil
    public private(set) var verdict: Verdict = .connecting

    public init() {}

    /// One observation. `nowMs` is monotonic; `handshakeAgeMs` is nil before
    /// the first handshake; `handshakeEpoch` identifies the handshake.
    public mutating func observe(nowMs: Int64, handshakeEpoch: Int64, handshakeAgeMs: Int64?, rxBytes: UInt64,
                                 txBytes: UInt64, pathProblem: String?) -> Verdict {
        if rxBytes != lastRx { lastRxChangeAt = nowMs; sendingWithoutReplySince = nil }
        if txBytes != lastTx && rxBytes == lastRx && sendingWithoutReplySince == nil { sendingWithoutReplySince = nowMs }
        let sending = txBytes != lastTx
        defer { lastRx = rxBytes; lastTx = txBytes }
        let pathProblem = standingProblem(pathProblem, rxBytes)

        guard let age = handshakeAgeMs else {
            if case .connecting = verdict { return verdict }
            return enterReasserting(nowMs, handshakeEpoch, rxBytes, pathProblem ?? "no handshake")
        }
        if case .connecting = verdict {
            if let pathProblem { return enterReasserting(nowMs, handshakeEpoch, rxBytes, pathProblem) }
            verdict = .connected
            lastRxChangeAt = nowMs
            return verdict
        }
        if let pathProblem { return enterReasserting(nowMs, handshakeEpoch, rxBytes, pathProblem) }
        if let since = sendingWithoutReplySince, nowMs - since >= WireGuardHealth.silenceLimit {
            return enterReasserting(nowMs, handshakeEpoch, rxBytes,
                                    "sent for \((nowMs - since) / 1000) s with nothing received")
        }
        if age > WireGuardHealth.staleHandshake && (sending || sendingWithoutReplySince != nil) {
            return enterReasserting(nowMs, handshakeEpoch, rxBytes, "last handshake \(age / 1000) s ago")
        }
        if case .reasserting = verdict {
            // Back only on evidence: a newer handshake, or data received again.
            if handshakeEpoch > handshakeAtReassert || rxBytes > rxAtReassert {
                verdict = .connected
                reassertingSince = nil
                sendingWithoutReplySince = nil
            }
        }
        return verdict
    }

    /// The path problem, unless data has come in since it was first seen.
    mutating func standingProblem(_ problem: String?, _ rx: UInt64) -> String? {
        guard let problem else {
            rxAtPathProblem = nil
            return nil
        }
        if rxAtPathProblem == nil { rxAtPathProblem = rx }
        return rx > rxAtPathProblem! ? nil : problem
    }

    mutating func enterReasserting(_ now: Int64, _ epoch: Int64, _ rx: UInt64, _ reason: String) -> Verdict {
        if case .reasserting = verdict {
            verdict = .reasserting(reason)
            return verdict
        }
        reassertingSince = now
        handshakeAtReassert = epoch
        rxAtReassert = rx
        verdict = .reasserting(reason)
        return verdict
    }
}
