import FoundationEssentials

/// What each protocol's configuration answers for itself, so that nothing
/// outside it (and `ProtocolConfiguration`'s own coding) asks which protocol
/// a profile is: its problems for the validator, its rows for `show` and
/// any other front end, what an import says the tunnel will do, and how
/// `export` writes it.
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
    /// The secret holding the password a user types (auth-user-pass, EAP),
    /// where the protocol has one.
    var passwordSecret: String? { get }
    /// What a start asks for because the profile does not store it: the
    /// password when its secret is not set, a static challenge's code.
    /// `stored` says whether a secret is set.
    func credentialFields(stored: (String) -> Bool) -> [CredentialRequest.Field]
    /// What the tunnel itself will do, read off this configuration: the
    /// `tunnel`, `families`, `routes`, `table`, DNS and `keptOutside` of the
    /// import summary, before the profile's own DNS settings and kill switch.
    var tunnelSummary: ImportSummary { get }
    /// Whether `create` ends with import's next steps (the public key to give
    /// the server, the secrets to set, then start).
    var createPrintsNextSteps: Bool { get }
    /// Whether the provider can keep a persistent tunnel whose server does
    /// not answer at start, trying again until it does (else `persistentRefusal`).
    var keepsTrying: Bool { get }
    /// Why this protocol cannot be persistent (said when a profile asks).
    var persistentRefusal: String { get }
    /// The formats `export` can write this configuration in.
    var exportFormats: [ProfileExport.Format] { get }
    /// The format `export` writes when none is asked for.
    var defaultExportFormat: ProfileExport.Format { get }
    /// The file in a text format of the protocol's own (wg-quick, .ovpn),
    /// before vpnctl's marker lines; nil for a format that is not one of them.
    /// `secret` gives a secret's value or nil (left out), `anchor` a trust
    /// anchor's PEM.
    func exportedText(as format: ProfileExport.Format, secret: (String?) -> String?,
                      anchor: (String) throws -> String) throws -> String?
    /// Fills in the VPN payload of an Apple configuration profile: the
    /// payload's type keys, the protocol's settings dictionary, and the
    /// payloads that go beside it.
    func writeVPNPayload(_ payload: inout ProfileExport.VPNPayload, secret: (String?) -> String?,
                         anchor: (String) throws -> String) throws
}

extension ConfigurationModel {
    public var tunnelRoutes: [String] { [] }
    public var anchorReferences: [String] { [] }
    public func publicKey(readingSecret read: (String) throws -> [UInt8]) -> String? { nil }
    public var fieldsToSetBeforeStart: [String] { [] }
    public var passwordSecret: String? { nil }
    public func credentialFields(stored: (String) -> Bool) -> [CredentialRequest.Field] { [] }
    public var createPrintsNextSteps: Bool { true }
    public var keepsTrying: Bool { false }
    public var persistentRefusal: String { L("only WireGuard profiles can be persistent so far") }
    public func exportedText(as format: ProfileExport.Format, secret: (String?) -> String?,
                             anchor: (String) throws -> String) throws -> String? { nil }
}

/// A configuration as labelled rows, then free lines (WireGuard's peers).
public struct ConfigurationRows: Sendable {
    public var fields: [(label: String, value: String)] = []
    public var lines: [String] = []

    public init() {}

    public mutating func add(_ label: String, _ value: String) { fields.append((label, value)) }
}
