import FoundationEssentials
import VPNCore
import VPNService

/// The objects the service exports, in the shape of NEVPNManager and
/// NEVPNConnection: one manager, one object per profile.
public enum ProfileObjects {
    public static let busName = "org.vpnctl.VPN1"
    public static let managerPath = "/org/vpnctl/VPN1"
    public static let managerInterface = "org.vpnctl.VPN1.Manager"
    public static let profileInterface = "org.vpnctl.VPN1.Profile"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let objectManagerInterface = "org.freedesktop.DBus.ObjectManager"
    static let profilePrefix = "/org/vpnctl/VPN1/profile/"
    static let errorPrefix = "org.vpnctl.VPN1.Error."

    /// /org/vpnctl/VPN1/profile/<the id's 32 hex digits>: a path element
    /// may hold only [A-Za-z0-9_], so the id goes without its dashes.
    public static func path(of id: UUID) -> String {
        profilePrefix + String(id.lowercasedString.filter { $0 != "-" })
    }

    /// The profile id a path names, or nil.
    public static func id(at path: String) -> UUID? {
        guard path.utf8.starts(with: profilePrefix.utf8) else { return nil }
        return UUID.parse(compactHex: path.utf8.dropFirst(profilePrefix.utf8.count))
    }

    /// The properties of org.vpnctl.VPN1.Profile, by name, in the order of
    /// the interface's XML.
    public static func properties(_ row: ProfileList.Row, _ s: ProfileStatus) -> [(String, BusValue)] {
        let d = s.status
        let error = d.lastDisconnectError
        return [
            ("Id", .string(row.id.lowercasedString)),
            ("Name", .string(row.name)),
            ("Protocol", .string(row.protocol)),
            ("Enabled", .bool(row.enabled)),
            ("Status", .structure([.uint32(UInt32(d.status.rawValue)), .string(d.status.name)])),
            ("ConnectedSince", .string(d.connectedSince.map(Timestamp.iso8601) ?? "")),
            ("Interface", .string(d.interface ?? "")),
            ("LastDisconnectError", .structure([.int32(Int32(error?.code ?? 0)), .string(error?.name ?? ""), .string(error?.message ?? "")])),
            ("OnDemand", .bool(s.onDemandEnabled)),
        ]
    }

    /// Verify's answer (a{sv}): Verdict (s, as `vpnctl verify` prints it),
    /// Proven (b: the probe's path is the tunnel, exit 0 of the command),
    /// Checks (a(sbs): each step's name, whether it held, what it found).
    public static func verification(_ report: VerifyReport) -> [(String, BusValue)] {
        [("Verdict", .string(report.verdict.rawValue)),
         ("Proven", .bool(report.verdict == .pathProven)),
         ("Checks", .array(of: "(sbs)", report.checks.map { .structure([.string($0.name), .bool($0.ok), .string($0.detail)]) }))]
    }

    /// The properties a transition changes.
    static let transitionProperties: Set<String> = ["Status", "ConnectedSince", "Interface", "LastDisconnectError"]

    /// A VPNError as a D-Bus error named after its stable name
    /// (org.vpnctl.VPN1.Error.ConfigurationUnknown), the hint after the message.
    public static func busError(_ e: VPNError) -> BusError {
        let name = e.code.name
        let message = ([e.message] + e.problems.map { "- " + $0 } + (e.hint.map { [L("hint: \($0)")] } ?? [])).joined(separator: "\n")
        return BusError(name: errorPrefix + name.prefix(1).uppercased() + name.dropFirst(), message: message)
    }
}
