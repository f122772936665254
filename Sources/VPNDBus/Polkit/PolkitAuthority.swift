/// polkit's word on a caller's action on a profile, where polkitd runs on
/// the service's bus: org.freedesktop.PolicyKit1.Authority.CheckAuthorization
/// with the caller as a system-bus-name subject, the action
/// org.vpnctl.control, and the profile and operation as details, so that an
/// administrator's rule (/etc/polkit-1/rules.d) can say yes to, say, one
/// group's start of one profile. The service asks only when a profile's
/// own policy refuses: polkit adds grants, it never takes one away.
public struct PolkitAuthority: Sendable {
    public static let actionID = "org.vpnctl.control"
    static let busName = "org.freedesktop.PolicyKit1"

    /// The bus polkitd is asked on (the service's own).
    let address: String

    public init(address: String) { self.address = address }

    public enum Verdict: Equatable, Sendable {
        case authorized
        /// Yes once the caller authenticates, which it did not allow to be
        /// asked (or no agent could ask).
        case challenge
        case notAuthorized
        /// No polkitd on this bus.
        case absent
    }

    /// The verdict on `operation` (a policy action's name) on `profile`
    /// for the connection `subject` (a unique name) on the bus. With
    /// `interactive`, polkit may have the caller's authentication agent
    /// ask for a password, for up to 90 s.
    public func check(subject: String, profile: String, operation: String, interactive: Bool) throws -> Verdict {
        let bus = try BusConnection(address: address)
        let details: [(BusValue, BusValue)] = [
            (.string("profile"), .string(profile)),
            (.string("operation"), .string(operation)),
        ]
        guard let m = BusMessage.methodCall(destination: Self.busName, path: "/org/freedesktop/PolicyKit1/Authority",
                                            interface: "org.freedesktop.PolicyKit1.Authority", member: "CheckAuthorization",
                                            [.structure([.string("system-bus-name"), .dictionary([("name", .string(subject))])]),
                                             .string(Self.actionID), .entries(key: "s", value: "s", details),
                                             .uint32(interactive ? 1 : 0), .string("")]) else {
            throw BusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "no memory for a polkit check")
        }
        let reply: [BusValue]
        do { reply = try bus.call(m, timeoutMs: interactive ? 90_000 : 10_000) } catch let e as BusError where Self.meansAbsent(e.name) {
            return .absent
        }
        guard case .structure(let result)? = reply.first, result.count >= 2, case .bool(let authorized) = result[0], case .bool(let challenge) = result[1] else {
            throw BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "polkit's CheckAuthorization answered \(reply), not (bba{ss})")
        }
        return authorized ? .authorized : challenge ? .challenge : .notAuthorized
    }

    /// The bus's errors for a name nobody owns and none can start.
    static func meansAbsent(_ name: String) -> Bool {
        name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
    }
}
