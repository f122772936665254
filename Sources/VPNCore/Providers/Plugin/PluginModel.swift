import FoundationEssentials

/// What a third-party provider's profile answers for itself: its problems,
/// its `show` rows, its import summary and its export.
extension ProviderConfiguration: ConfigurationModel {
    public var serverHosts: [String] { serverAddress.map { [$0] } ?? [] }
    /// The plugin decides the routes and the DNS at connect time.
    public var tunnelSummary: ImportSummary { ImportSummary(tunnel: "provider") }
    public var exportFormats: [ProfileExport.Format] { [.json, .mobileconfig] }
    public var defaultExportFormat: ProfileExport.Format { .mobileconfig }

    public func writeVPNPayload(_ payload: inout ProfileExport.VPNPayload, secret: (String?) -> String?,
                                anchor: (String) throws -> String) throws {
        ProfileExport.providerPayload(self, into: &payload, secret: secret)
    }

    public func problems(_ v: ProfileValidator) -> [String] {
        let pr = self
        var p: [String] = []
        if pr.providerIdentifier.isEmpty {
            p.append(L("protocol.providerIdentifier: missing"))
        } else if !PluginManifest.isValidIdentifier(pr.providerIdentifier) {
            p.append(L("protocol.providerIdentifier: '\(pr.providerIdentifier.prefix(80))' is not an identifier (letters, digits, '.', '-', '_')"))
        }
        for (key, name) in pr.secrets.sorted(by: { $0.key < $1.key }) {
            p += v.secretRef("protocol.secrets.\(key)", name, required: true, what: "")
        }
        return p
    }

    public func described(secret: (String?) -> String) -> ConfigurationRows {
        var r = ConfigurationRows()
        r.add(L("provider"), providerIdentifier)
        if let serverAddress { r.add(L("server"), serverAddress) }
        for (k, v) in providerConfiguration.sorted(by: { $0.key < $1.key }) { r.add("  \(k)", v) }
        for (k, v) in secrets.sorted(by: { $0.key < $1.key }) { r.add("  \(k)", secret(v)) }
        return r
    }
}
