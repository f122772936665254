/// NEVPNStatus, with the same numbers.
public enum VPNStatus: Int, Codable, CaseIterable, Sendable, CustomStringConvertible {
    case invalid = 0
    case disconnected = 1
    case connecting = 2
    case connected = 3
    case reasserting = 4
    case disconnecting = 5

    public var name: String {
        switch self {
        case .invalid: return "invalid"
        case .disconnected: return "disconnected"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .reasserting: return "reasserting"
        case .disconnecting: return "disconnecting"
        }
    }

    public var description: String { name }

    /// The status word for people, in their language (JSON keeps `name`).
    public var displayName: String {
        switch self {
        case .invalid: return L("invalid")
        case .disconnected: return L("disconnected")
        case .connecting: return L("connecting")
        case .connected: return L("connected")
        case .reasserting: return L("reasserting")
        case .disconnecting: return L("disconnecting")
        }
    }

    /// `displayName` for a status given by its name (any other word as it is).
    public static func displayName(of name: String) -> String {
        allCases.first { $0.name == name }?.displayName ?? name
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    /// Read back from its name, as `encode` writes it.
    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let name = try c.decode(String.self)
        guard let s = VPNStatus.allCases.first(where: { $0.name == name }) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "unknown status \(name.quotedForMessage)")
        }
        self = s
    }
}
