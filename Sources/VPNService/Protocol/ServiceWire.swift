import FoundationEssentials
import VPNCore

/// The agent's reply on the wire: JSON lines, each an object whose "event"
/// member says what it is. Events (`progress`, `change`, `onDemand`,
/// `onDemandPauseFailed`, `watching`, `transition`, `logLine`, and
/// `credentials`, which the client answers with a line of its own) come while
/// the call runs; a reply ends with one `result` (the call's typed result)
/// or one `error` (a VPNError as data: code, name, message, hint, remedy,
/// cause, problems). A stream (`watch`, `logs` with follow) ends with an
/// `error` or when the client hangs up. Times are seconds since 1970.
public enum ServiceReply {
    case event(ServiceEvent)
    /// The result's JSON object, decoded by the caller, who knows its type.
    case result([UInt8])
    case error(VPNError)

    /// The longest line a client reads (a status of thousands of profiles fits).
    public static let maximumLineLength = 64 << 20

    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .secondsSince1970
        // The same reply is the same bytes: members in the order of their names.
        e.outputFormatting = [.sortedKeys]
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .secondsSince1970
        return d
    }

    /// One line: the event, result or error, then "\n".
    public static func line(event: ServiceEvent) throws -> [UInt8] {
        Array(try encoder().encode(EventLine(event: event))) + [0x0A]
    }

    public static func line<R: Encodable>(result: R) throws -> [UInt8] {
        Array(try encoder().encode(ResultLine(result: result))) + [0x0A]
    }

    public static func line(error: VPNError) -> [UInt8] {
        // A VPNError always encodes: strings, numbers and enums only.
        let bytes = (try? encoder().encode(ErrorLine(error: WireError(error)))).map(Array.init) ?? Array(#"{"event":"error","error":{"code":1,"name":"failure","message":"unencodable error"}}"#.utf8)
        return bytes + [0x0A]
    }

    /// Reads one line of a reply (without its "\n").
    public static func parse(_ line: [UInt8]) throws -> ServiceReply {
        // The agent's own shape (sorted members): the result's bytes are cut
        // out as they are, without parsing the line twice.
        let resultHead = Array(#"{"event":"result","result":"#.utf8)
        if line.count > resultHead.count, line.last == UInt8(ascii: "}"), line.starts(with: resultHead) {
            return .result(Array(line[resultHead.count..<(line.count - 1)]))
        }
        let decoder = decoder()
        let head: Head
        do { head = try decoder.decode(Head.self, from: Data(line)) } catch {
            throw ServiceProtocolError("a reply line is not a JSON object with an event")
        }
        do {
            switch head.event {
            case "result":
                // The result's bytes, cut out of the line by the parser that checked it.
                let r = try JSONReader(parsing: line)
                guard let value = try r.optional("result")?.value else { throw ServiceProtocolError("a result without a value") }
                return .result(Array(value.serialized.utf8))
            case "error":
                return .error(try decoder.decode(ErrorLine.self, from: Data(line)).error.vpnError)
            default:
                return .event(try decoder.decode(EventLine.self, from: Data(line)).event)
            }
        } catch let e as ServiceProtocolError {
            throw e
        } catch {
            throw ServiceProtocolError("a reply's \(head.event.abbreviated(40)) line is malformed: \(error)".abbreviated(300))
        }
    }

    struct Head: Decodable { let event: String }

    struct ResultLine<R: Encodable>: Encodable {
        let event = "result"
        let result: R
    }

    struct ErrorLine: Codable {
        var event = "error"
        let error: WireError
    }

    struct EventLine: Codable {
        let event: ServiceEvent

        enum Keys: String, CodingKey { case event, profile, action, line, change, reason, profiles, transition, request }

        init(event: ServiceEvent) { self.event = event }

        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            switch event {
            case .progress(let p, let action):
                try c.encode("progress", forKey: .event); try c.encode(p, forKey: .profile); try c.encode(action, forKey: .action)
            case .change(let line):
                try c.encode("change", forKey: .event); try c.encode(line, forKey: .line)
            case .onDemand(let p, let change):
                try c.encode("onDemand", forKey: .event); try c.encode(p, forKey: .profile); try c.encode(change, forKey: .change)
            case .onDemandPauseFailed(let p, let reason):
                try c.encode("onDemandPauseFailed", forKey: .event); try c.encode(p, forKey: .profile); try c.encode(reason, forKey: .reason)
            case .watching(let n):
                try c.encode("watching", forKey: .event); try c.encode(n, forKey: .profiles)
            case .transition(let t):
                try c.encode("transition", forKey: .event); try c.encode(t, forKey: .transition)
            case .logLine(let line):
                try c.encode("logLine", forKey: .event); try c.encode(line, forKey: .line)
            case .credentials(let r):
                try c.encode("credentials", forKey: .event); try c.encode(r, forKey: .request)
            }
        }

        init(from decoder: Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            switch try c.decode(String.self, forKey: .event) {
            case "progress": event = .progress(profile: try c.decode(String.self, forKey: .profile), action: try c.decode(String.self, forKey: .action))
            case "change": event = .change(line: try c.decode(String.self, forKey: .line))
            case "onDemand":
                event = .onDemand(profile: try c.decode(String.self, forKey: .profile), change: try c.decode(OnDemandChange.self, forKey: .change))
            case "onDemandPauseFailed":
                event = .onDemandPauseFailed(profile: try c.decode(String.self, forKey: .profile), reason: try c.decode(String.self, forKey: .reason))
            case "watching": event = .watching(profiles: try c.decode(Int.self, forKey: .profiles))
            case "transition": event = .transition(try c.decode(StatusTransition.self, forKey: .transition))
            case "logLine": event = .logLine(try c.decode(String.self, forKey: .line))
            case "credentials": event = .credentials(try c.decode(CredentialRequest.self, forKey: .request))
            case let other:
                throw DecodingError.dataCorruptedError(forKey: .event, in: c, debugDescription: "unknown event \(other.abbreviated(40))")
            }
        }
    }
}

/// A VPNError as the wire carries it, with its stable name beside the code.
struct WireError: Codable {
    let code: ExitCode
    let name: String
    let message: String
    let hint: String?
    let remedy: VPNError.Remedy?
    let cause: VPNError.Cause?
    let problems: [String]

    init(_ e: VPNError) {
        code = e.code
        name = e.code.name
        message = e.message
        hint = e.hint
        remedy = e.remedy
        cause = e.cause
        problems = e.problems
    }

    var vpnError: VPNError { VPNError(code, message, hint: hint, remedy: remedy, cause: cause, problems: problems) }
}
