/// The exit codes vpnctl documents. They are part of its contract with scripts.
public enum ExitCode: Int32, CaseIterable, Sendable {
    case ok = 0
    case failure = 1
    case usage = 2
    case timedOut = 3
    case connectionFailed = 4
    case configurationInvalid = 5
    case configurationDisabled = 6
    case configurationStale = 7
    case configurationReadWriteFailed = 8
    case configurationUnknown = 9
    case providerUnavailable = 10
    case permissionDenied = 11
    case notConnected = 12

    /// The stable name printed in JSON errors.
    public var name: String {
        switch self {
        case .ok: return "ok"
        case .failure: return "failure"
        case .usage: return "usage"
        case .timedOut: return "timedOut"
        case .connectionFailed: return "connectionFailed"
        case .configurationInvalid: return "configurationInvalid"
        case .configurationDisabled: return "configurationDisabled"
        case .configurationStale: return "configurationStale"
        case .configurationReadWriteFailed: return "configurationReadWriteFailed"
        case .configurationUnknown: return "configurationUnknown"
        case .providerUnavailable: return "providerUnavailable"
        case .permissionDenied: return "permissionDenied"
        case .notConnected: return "notConnected"
        }
    }

    /// One line for the exit-code tables in --help, the README and the man page.
    public var meaning: String {
        switch self {
        case .ok: return "ok"
        case .failure: return "other failure"
        case .usage: return "usage error"
        case .timedOut: return "timed out"
        case .connectionFailed: return "connection failed"
        case .configurationInvalid: return "configuration invalid"
        case .configurationDisabled: return "configuration disabled"
        case .configurationStale: return "configuration stale"
        case .configurationReadWriteFailed: return "preferences read/write failed"
        case .configurationUnknown: return "no such profile"
        case .providerUnavailable: return "provider unavailable"
        case .permissionDenied: return "permission denied"
        case .notConnected: return "not connected"
        }
    }
}

/// The one error type the core hands to the command line. Each carries its
/// exit code, a message naming what is wrong, an optional hint naming what to
/// do, and, for validation, every problem found.
public struct VPNError: Error, CustomStringConvertible, Sendable {
    public let code: ExitCode
    public let message: String
    public let hint: String?
    public let problems: [String]

    public init(_ code: ExitCode, _ message: String, hint: String? = nil, problems: [String] = []) {
        self.code = code
        self.message = message
        self.hint = hint
        self.problems = problems
    }

    public var description: String { message }

    public static func usage(_ message: String, hint: String? = nil) -> VPNError {
        VPNError(.usage, message, hint: hint)
    }

    public static func invalid(_ what: String, problems: [String], hint: String? = nil) -> VPNError {
        VPNError(.configurationInvalid, what, hint: hint, problems: problems)
    }
}
