import VPNSystem

/// The exit codes vpnctl documents. They are part of its contract with scripts.
public enum ExitCode: Int32, Codable, CaseIterable, Sendable {
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
    case noSuchInterface = 13

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
        case .noSuchInterface: return "noSuchInterface"
        }
    }

    /// One line for the exit-code tables in --help (translated there), the README and the man page.
    public var meaning: String {
        switch self {
        case .ok: return L("ok")
        case .failure: return L("other failure")
        case .usage: return L("usage error")
        case .timedOut: return L("timed out")
        case .connectionFailed: return L("connection failed")
        case .configurationInvalid: return L("configuration invalid")
        case .configurationDisabled: return L("configuration disabled")
        case .configurationStale: return L("configuration stale")
        case .configurationReadWriteFailed: return L("preferences read/write failed")
        case .configurationUnknown: return L("no such profile")
        case .providerUnavailable: return L("provider unavailable")
        case .permissionDenied: return L("permission denied")
        case .notConnected: return L("not connected")
        case .noSuchInterface: return L("no such interface")
        }
    }
}

/// The one error type the core hands to the command line. Each carries its
/// exit code, a message naming what is wrong, advice that names no command
/// (`hint`), what to do in vpnctl's own terms (`remedy`, which each front
/// end words as it must), the system error under it (`cause`), and, for
/// validation, every problem found.
public struct VPNError: Error, CustomStringConvertible, Sendable {
    public let code: ExitCode
    public let message: String
    public let hint: String?
    public let remedy: Remedy?
    public let cause: Cause?
    public let problems: [String]

    public init(_ code: ExitCode, _ message: String, hint: String? = nil, remedy: Remedy? = nil, cause: Cause? = nil,
                problems: [String] = []) {
        self.code = code
        self.message = message
        self.hint = hint
        self.remedy = remedy
        self.cause = cause
        self.problems = problems
    }

    /// The system error under a VPNError.
    public enum Cause: Codable, Equatable, Sendable {
        /// A system call's errno.
        case system(Int32)
        /// A netlink request's libnl error code.
        case netlink(Int32)
    }

    /// What the user can do about it, as an action on vpnctl; the command
    /// line says it as a command, the agent as whatever its client shows.
    public enum Remedy: Codable, Equatable, Sendable {
        /// Enable the profile.
        case enable(profile: String)
        /// Edit the profile (a field of it; and maybe set its secrets).
        case edit(profile: String?, field: String? = nil, secrets: Bool = false)
        /// Set one of the profile's secrets.
        case setSecret(profile: String?, name: String)
        /// Run with the privileges the files need, or on other files.
        case privileges
        /// The store is empty: import a profile first.
        case importFirst
        /// List the profiles (again, after they changed).
        case list(again: Bool)
        /// Remove the profile and import it again.
        case reimport
        /// Ask root or a member of the admin group to grant the action in the profile's policy.
        case grant(profile: String, adminGroup: String)
    }

    public var description: String { message }

    /// The same error, its message prefixed (the profile it concerns).
    public func prefixed(_ prefix: String) -> VPNError {
        VPNError(code, prefix + message, hint: hint, remedy: remedy, cause: cause, problems: problems)
    }

    public static func usage(_ message: String, hint: String? = nil) -> VPNError {
        VPNError(.usage, message, hint: hint)
    }

    public static func invalid(_ what: String, problems: [String], hint: String? = nil, remedy: Remedy? = nil) -> VPNError {
        VPNError(.configurationInvalid, what, hint: hint, remedy: remedy, problems: problems)
    }

    /// Any error from any layer as the VPNError it stands for. The one rule
    /// for permissions: EPERM or EACCES, from a system call or from netlink,
    /// is exit 11 (permission denied), whichever layer met it.
    public static func from(_ error: Error, otherwise code: ExitCode = .failure) -> VPNError {
        if let e = error as? VPNError { return e }
        let text = "\(error)".abbreviated(1000)
        if let e = error as? SystemError {
            return VPNError(e.errno.isPermission ? .permissionDenied : code, text, cause: .system(e.errno.rawValue))
        }
        if let e = error as? NetlinkError {
            return VPNError(e.isPermission ? .permissionDenied : code, text, cause: .netlink(e.code))
        }
        return VPNError(code, text)
    }
}
