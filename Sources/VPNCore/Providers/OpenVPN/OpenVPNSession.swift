/// What the supervisor does about openvpn's holds and states over one run.
/// openvpn re-enters the management hold after every soft restart
/// (ping-restart, SIGUSR1, a TLS error, the server restarting) and waits for
/// `hold release`: each hold is released while the tunnel is meant to be up,
/// none once it is stopping. `>HOLD:Waiting for hold release:N` carries
/// openvpn's own back-off (connect-retry): with a hold, openvpn skips its
/// restart pause and leaves the N seconds to the management client.
public struct OpenVPNSession: Equatable, Sendable {
    public enum Action: Equatable, Sendable {
        case releaseHold(afterSeconds: Int)
        /// The tunnel is up; `session` counts from 1, so 2 and on are reconnects.
        case connected(session: Int)
        case reasserting
    }

    public private(set) var status: VPNStatus = .connecting
    public private(set) var sessions = 0
    public private(set) var stopping = false

    public init() {}

    public mutating func stop() { stopping = true }

    public mutating func observe(_ m: ManagementMessage) -> [Action] {
        guard !stopping else { return [] }
        switch m {
        case .hold(let text):
            let seconds = text.split(separator: ":").last.flatMap { Int(String($0).trimmingSpaces()) } ?? 0
            return [.releaseHold(afterSeconds: min(max(seconds, 0), 300))]
        case .state(let name, _):
            switch OpenVPNState.status(name) {
            case .connected where status != .connected:
                status = .connected
                sessions += 1
                return [.connected(session: sessions)]
            case .reasserting where status == .connected:
                status = .reasserting
                return [.reasserting]
            default:
                return []
            }
        default:
            return []
        }
    }
}
