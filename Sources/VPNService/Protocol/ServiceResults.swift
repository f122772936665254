import FoundationEssentials
import VPNCore

// The typed results of the service's calls. Every front end renders them
// in its own words, language and terminal; none of them is text to print.

/// `list`: the profiles the caller may see.
public struct ProfileList: Codable, Equatable, Sendable {
    public struct Row: Codable, Equatable, Sendable {
        public let id: UUID
        public let name: String
        public let enabled: Bool
        public let `protocol`: String
        public let revision: Int

        public init(_ p: Profile) {
            id = p.id
            name = p.name
            enabled = p.enabled
            `protocol` = p.protocol.kind.rawValue
            revision = p.revision
        }
    }

    public var profiles: [Row]
    /// Whether the caller sees only the profiles whose policy names them.
    public var restricted: Bool
    /// Where the store is (for "no profiles in ..."); nil when restricted.
    public var storePath: String?
}

/// `can`: the policy's answer for this caller.
public struct CanAnswer: Codable, Equatable, Sendable {
    public let action: PolicyAction
    public let profile: String
    public let id: UUID
    public let user: String
    public let allowed: Bool
    public let reason: String
}

/// `isConnected`.
public struct ConnectedAnswer: Codable, Equatable, Sendable {
    public let name: String
    public let status: VPNStatus
    public var connected: Bool { status == .connected }
}

/// One profile's status, with what on-demand is doing with it.
public struct ProfileStatus: Codable, Equatable, Sendable {
    public var status: DerivedStatus
    public var onDemandEnabled: Bool
    public var onDemandPaused: Bool
    /// The agent's last word on its rules ("no rule matched", a backoff).
    public var onDemandNote: String?
}

/// `status`: every profile the caller may see, or the one asked for.
public struct StatusReport: Codable, Equatable, Sendable {
    public var profiles: [ProfileStatus]
    public var restricted: Bool
}

/// What a start or stop did to on-demand: a start by hand resumes it, a
/// stop pauses it (so that the agent does not start it again).
public enum OnDemandChange: String, Codable, Sendable {
    case resumed, paused
}

/// `start`, `stop` and `toggle` of one profile.
public struct TunnelReport: Codable, Equatable, Sendable {
    public enum Outcome: String, Codable, Sendable {
        /// start: it was connected already; accepted (no wait); connected.
        case alreadyConnected, accepted, connected
        /// stop: no live supervisor (what a dead one left is in `cleanedUp`); requested (no wait); stopped.
        case notRunning, requested, stopped
        /// toggle: the start or stop it made failed (`failure` says how).
        case failed
    }

    public var action: String
    public var outcome: Outcome
    public var status: DerivedStatus
    /// stop: what was cleaned up after a dead supervisor.
    public var cleanedUp: [String] = []
    /// stop: whether a supervisor ran when the stop began.
    public var wasRunning = false
    public var onDemand: OnDemandChange?
    /// toggle: the failure's code (connectionFailed, timedOut); the status says why.
    public var failure: ExitCode?
    /// start --persist of a profile whose provider cannot be persistent: why
    /// it started as any start does.
    public var notPersistent: String?

    public init(action: String, outcome: Outcome, status: DerivedStatus) {
        self.action = action
        self.outcome = outcome
        self.status = status
    }
}

/// `stop` with no profile: every tunnel it stopped.
public struct StopAllReport: Codable, Equatable, Sendable {
    public var stopped: [TunnelReport]
}

/// `verify`.
public struct VerifyAnswer: Codable, Equatable, Sendable {
    public let profile: String
    public let probe: String
    public let report: VerifyReport
}

/// `stats`: the profile's status, from which the caller's side samples
/// its interface (the kernel's counters are anyone's to read).
public struct StatsAnswer: Codable, Equatable, Sendable {
    public let status: DerivedStatus
}

/// `logs` without `follow`: the lines written since `since`.
public struct LogsAnswer: Codable, Equatable, Sendable {
    public let profile: String
    public let id: UUID
    public var lines: [String]
    /// Whether the profile has a log at all.
    public var hasLog: Bool
}

/// What a call reports while it runs, before its result.
public enum ServiceEvent: Equatable, Sendable {
    /// A wait goes on (a spinner may turn): the profile it waits for, and
    /// for what ("start", "stop", "verify").
    case progress(profile: String, action: String)
    /// A change the supervisor made to the system ("[#] ip link set utun0 up").
    case change(line: String)
    /// A start or stop changed on-demand for the profile.
    case onDemand(profile: String, change: OnDemandChange)
    /// On-demand could not be paused; the stop goes on.
    case onDemandPauseFailed(profile: String, reason: String)
    /// `watch`: how many profiles are watched.
    case watching(profiles: Int)
    /// `watch`: one transition.
    case transition(StatusTransition)
    /// `logs` with `follow`: one line of the log.
    case logLine(String)
    /// A start asks its caller (a password, a code, a sign-in URL to show);
    /// the client answers with one `CredentialReply` line on the same socket.
    case credentials(CredentialRequest)
}

/// The client's answer to a `credentials` event: one JSON line.
public struct CredentialReply: Codable, Sendable {
    public var answers: CredentialAnswers?
    public var declined: Bool?
    public init(answers: CredentialAnswers?) {
        self.answers = answers
        declined = answers == nil ? true : nil
    }
    /// The longest answer line read.
    public static let maximumLineLength = 65536
}

/// Where a call's events go: a front end's renderer, or the agent's
/// socket to its client. `emit` returns false when nobody wants more (a
/// reader gone, a count reached): a stream then ends.
public protocol ServiceEvents: AnyObject {
    func emit(_ event: ServiceEvent) -> Bool
    /// Whether the receiver is still there (checked while a stream waits).
    func isOpen() -> Bool
    /// A descriptor whose hang-up ends a wait at once (the client's socket, stdout).
    var hangupDescriptor: Int32? { get }
    /// Answers what a start asks (a password, a code, a sign-in URL to
    /// show) from the person who asked for it; nil when nobody can answer.
    func credentials(_ request: CredentialRequest) -> CredentialAnswers?
}

extension ServiceEvents {
    public func credentials(_ request: CredentialRequest) -> CredentialAnswers? { nil }
}

/// Events nobody receives: for callers that only want the result.
public final class NoEvents: ServiceEvents {
    public init() {}
    public func emit(_ event: ServiceEvent) -> Bool { true }
    public func isOpen() -> Bool { true }
    public var hangupDescriptor: Int32? { nil }
}

/// `show`: one profile as stored, its secrets named with whether each is
/// set (never their values), and a WireGuard profile's public key (derived
/// from the private key; it is not a secret).
public struct ProfileDetails: Encodable, Equatable, Sendable {
    public struct SecretState: Codable, Equatable, Sendable {
        /// The profile field that refers to it ("privateKey").
        public let field: String
        public let name: String
        public let isSet: Bool
        enum CodingKeys: String, CodingKey { case field, name, isSet = "set" }

        public init(field: String, name: String, isSet: Bool) {
            self.field = field
            self.name = name
            self.isSet = isSet
        }
    }

    public let profile: Profile
    public let secrets: [SecretState]
    public let publicKey: String?

    public init(profile: Profile, secrets: [SecretState], publicKey: String?) {
        self.profile = profile
        self.secrets = secrets
        self.publicKey = publicKey
    }

    /// Read back from the wire with the store's own profile reader: a
    /// profile has one decoding, the preferences file's.
    public init(json bytes: [UInt8]) throws {
        let r = try JSONReader(parsing: bytes)
        guard let profile = try r.optional("profile") else { throw ServiceProtocolError("show's result has no profile") }
        self.profile = try Profile(json: profile)
        secrets = try (r.optional("secrets")?.array() ?? []).map { s in
            guard let field = try s.string("field"), let name = try s.string("name") else {
                throw ServiceProtocolError("show's result names a secret without a field or name")
            }
            return SecretState(field: field, name: name, isSet: try s.bool("set") ?? false)
        }
        publicKey = try r.string("publicKey")
    }
}

/// `ondemand pause` and `ondemand resume`.
public struct OnDemandPauseAnswer: Codable, Equatable, Sendable {
    public let name: String
    public let id: UUID
    public let enabled: Bool
    public let paused: Bool
    /// False when it already was so.
    public let changed: Bool

    public init(name: String, id: UUID, enabled: Bool, paused: Bool, changed: Bool) {
        self.name = name
        self.id = id
        self.enabled = enabled
        self.paused = paused
        self.changed = changed
    }
}
