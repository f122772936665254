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
    /// The trust anchors (SHA-256 fingerprints) this configuration trusts.
    var anchorReferences: [String] { get }
    /// The public key the server needs, derived from a private key secret
    /// read through `read`; nil for a protocol without one, or when the
    /// secret is unset or unreadable.
    func publicKey(readingSecret read: (String) throws -> [UInt8]) -> String?
    /// Fields a start will need that an import can leave unset (an
    /// OpenVPN password without its user name), as `protocol.field`.
    var fieldsToSetBeforeStart: [String] { get }
}

extension ConfigurationModel {
    public var tunnelRoutes: [String] { [] }
    public var anchorReferences: [String] { [] }
    public func publicKey(readingSecret read: (String) throws -> [UInt8]) -> String? { nil }
    public var fieldsToSetBeforeStart: [String] { [] }
}

/// A configuration as labelled rows, then free lines (WireGuard's peers).
public struct ConfigurationRows: Sendable {
    public var fields: [(label: String, value: String)] = []
    public var lines: [String] = []

    public init() {}

    public mutating func add(_ label: String, _ value: String) { fields.append((label, value)) }
}
