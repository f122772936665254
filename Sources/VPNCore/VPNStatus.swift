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

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        let s = try c.decode(String.self)
        guard let v = VPNStatus.allCases.first(where: { $0.name == s }) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "unknown status '\(s)'")
        }
        self = v
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }
}
