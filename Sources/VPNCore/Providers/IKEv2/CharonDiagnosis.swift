import FoundationEssentials

/// What charon's log lines (vici `log` events) say about why a connection
/// failed, as NEVPNConnectionError names, quoting charon. Fed every line;
/// the first decisive line wins, later ones only add context.
public struct CharonDiagnosis: Equatable, Sendable {
    /// The failure the lines so far point to.
    public private(set) var fatal: ConnectionError?
    /// The last line that looked like a reason, for messages.
    public private(set) var lastReason: String?
    /// A request was retransmitted and not yet answered (DPD, rekey), or a
    /// MOBIKE address change is under way.
    public private(set) var retransmitting = false

    public init() {}

    public static let quoteLimit = 200

    /// Observes one log message; returns true when the line is news for the
    /// state machine (a retransmit started or ended).
    @discardableResult
    public mutating func observe(_ line: String, now: Date = Date()) -> Bool {
        let msg = String(line.prefix(1000))
        let quoted = "charon: \(msg.prefix(Self.quoteLimit))"
        func set(_ kind: ConnectionError.Kind, _ text: String) {
            lastReason = msg
            if fatal == nil { fatal = ConnectionError(kind, text) }
        }
        if msg.contains("received AUTHENTICATION_FAILED notify") {
            set(.authenticationFailed, "the server refused this client's credentials (\(quoted))")
        } else if msg.contains("EAP") && msg.contains("failed") {
            set(.authenticationFailed, "EAP authentication failed: wrong username or password? (\(quoted))")
        } else if msg.contains("received NO_PROPOSAL_CHOSEN notify") || msg.contains("no acceptable proposal") || msg.contains("received TS_UNACCEPTABLE notify") {
            set(.negotiationFailed, "the server accepts none of this profile's proposals (\(quoted))")
        } else if let id = Self.identity(in: msg, after: "constraint check failed: identity '") {
            set(.serverCertificateInvalid, "the server's certificate is not for the remote identifier '\(id)' (\(quoted))")
        } else if let id = Self.identity(in: msg, after: "no trusted RSA public key found for '") ?? Self.identity(in: msg, after: "no trusted ECDSA public key found for '")
                    ?? Self.identity(in: msg, after: "no trusted public key found for '") {
            set(.serverCertificateInvalid, "no trusted certificate for the remote identifier '\(id)': the server's certificate does not chain to the trust anchor, or is for another identity (\(quoted))")
        } else if msg.contains("certificate invalid (valid from ") {
            // "subject certificate invalid (valid from Jan 01 00:00:00 2020 to Jan 02 00:00:00 2020)"
            let (from, to) = Self.validity(msg)
            if let to, to < now {
                set(.serverCertificateExpired, "the server's certificate has expired (\(quoted))")
            } else if let from, from > now {
                set(.serverCertificateNotYetValid, "the server's certificate is not valid yet (\(quoted))")
            } else {
                set(.serverCertificateInvalid, "the server's certificate is outside its validity (\(quoted))")
            }
        } else if msg.contains("unable to resolve") || msg.contains("resolving ") && msg.contains("failed") {
            set(.serverAddressResolutionFailed, "the server's name does not resolve (\(quoted))")
        } else if msg.contains("giving up after") && msg.contains("retransmits") {
            set(.serverNotResponding, "the server did not answer (\(quoted))")
        } else if msg.contains("peer not responding") || msg.contains("DPD") && msg.contains("failed") {
            set(.serverDead, "the server stopped answering dead peer detection (\(quoted))")
        } else if msg.hasPrefix("retransmit ") && msg.contains("of request") || msg.contains("requesting address change using MOBIKE") {
            let was = retransmitting
            retransmitting = true
            lastReason = msg
            return !was
        } else if retransmitting && msg.contains("parsed") && msg.contains("response") {
            retransmitting = false
            return true
        } else if msg.contains("received DELETE for IKE_SA") {
            lastReason = msg
        }
        return false
    }

    /// After a connected tunnel went down: the error to report.
    public func downError(connected: Bool) -> ConnectionError {
        if let fatal {
            // Retransmits exhausted on an established SA is a dead server.
            if connected && fatal.kind == .serverNotResponding {
                return ConnectionError(.serverDead, fatal.message.replacingAll("the server did not answer", with: "the server stopped answering"))
            }
            return fatal
        }
        if let r = lastReason, r.contains("received DELETE") {
            return ConnectionError(.serverDisconnected, "the server closed the connection (charon: \(r.prefix(Self.quoteLimit)))")
        }
        return ConnectionError(connected ? .serverDisconnected : .negotiationFailed,
                               "the IKE SA went down" + (lastReason.map { " (charon: \($0.prefix(Self.quoteLimit)))" } ?? ""))
    }

    /// The two times of charon's "valid from %T to %T" (UTC, "Jan 02 00:00:00 2020").
    static func validity(_ msg: String) -> (from: Date?, to: Date?) {
        guard let r = msg.firstRange(of: "valid from ") else { return (nil, nil) }
        let rest = msg[r.upperBound...].prefix(60)
        let parts = rest.split(separator: " to ", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return (nil, nil) }
        return (time(parts[0]), time(String(parts[1].prefix { $0 != ")" })))
    }

    static func time(_ text: String) -> Date? {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let f = text.split(separator: " ")
        guard f.count == 4, let m = months.firstIndex(of: String(f[0])), let d = Int(f[1]), let y = Int(f[3]),
              (1...31).contains(d), (1970...9999).contains(y) else { return nil }
        let hms = f[2].split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3 else { return nil }
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let yy = m < 2 ? y - 1 : y
        let era = yy / 400
        let yoe = yy - era * 400
        let doy = (153 * (m < 2 ? m + 10 : m - 2) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        return Date(timeIntervalSince1970: Double(days * 86400 + hms[0] * 3600 + hms[1] * 60 + hms[2]))
    }

    static func identity(in msg: String, after marker: String) -> String? {
        guard let r = msg.firstRange(of: marker) else { return nil }
        let rest = msg[r.upperBound...]
        guard let end = rest.firstIndex(of: "'") else { return String(rest.prefix(100)) }
        return String(rest[..<end].prefix(100))
    }
}
