import FoundationEssentials

/// What each protocol's configuration answers for itself, so that nothing
/// outside it (and `ProtocolConfiguration`'s own coding) asks which protocol
/// a profile is: its problems for the validator, and its rows for `show` and
/// any other front end.
public protocol ConfigurationModel: Sendable {
    /// Every problem found, each naming its field (`protocol.addresses: ...`).
    func problems(_ v: ProfileValidator) -> [String]
    /// The labelled fields, in order, and the lines after them; `secret`
    /// renders a secret reference (its name, and whether it is set).
    func described(secret: (String?) -> String) -> ConfigurationRows
    /// The server's host names or addresses, as configured.
    var serverHosts: [String] { get }
    /// The prefixes routed into the tunnel by the profile itself (not what a
    /// server pushes).
    var tunnelRoutes: [String] { get }
}

extension ConfigurationModel {
    public var tunnelRoutes: [String] { [] }
}

/// A configuration as labelled rows, then free lines (WireGuard's peers).
public struct ConfigurationRows: Sendable {
    public var fields: [(label: String, value: String)] = []
    public var lines: [String] = []

    public init() {}

    public mutating func add(_ label: String, _ value: String) { fields.append((label, value)) }
}
