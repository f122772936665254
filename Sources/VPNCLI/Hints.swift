import VPNCore

/// What the command line tells the user to do, worded as vpnctl commands:
/// the core names the remedy, this file names the command.
enum Hints {
    /// The hint line for an error: its remedy as a command, then the core's
    /// own advice; else the advice for its kind.
    static func text(for e: VPNError) -> String? {
        let parts = [e.remedy.map(command), e.hint].compactMap { $0 }
        if !parts.isEmpty { return parts.joined(separator: ", ") }
        if e.code == .permissionDenied, case .netlink = e.cause {
            return L("run as root (changing interfaces and routes needs CAP_NET_ADMIN)")
        }
        return nil
    }

    static func command(_ remedy: VPNError.Remedy) -> String {
        switch remedy {
        case .enable(let profile):
            return L("enable it with: vpnctl enable \(profile)")
        case .edit(let profile, let field, let secrets):
            let command = "vpnctl edit \(profile ?? "PROFILE")"
            let fix = field.map { L("fix \($0) with: \(command)") } ?? L("fix it with: \(command)")
            return fix + (secrets ? L(" (secrets: vpnctl secret set)") : "")
        case .setSecret(let profile, let name):
            return L("set it with: \("vpnctl secret set \(profile ?? "<profile>") \(name) < file")")
        case .privileges:
            return L("run as root, or point --config-dir / --run-dir at a directory you own")
        case .importFirst:
            return L("there are no profiles yet; add one with: vpnctl import FILE")
        case .list(let again):
            return again ? L("list the profiles again with: vpnctl list") : L("list the profiles with: vpnctl list")
        case .grant(let profile, let group):
            return L("root or a member of group '\(group)' can grant it in the profile's policy: \("vpnctl edit \(profile)")")
        case .reimport:
            return L("import the profile again (vpnctl remove, then vpnctl import: each CA certificate is stored on its own)")
        }
    }
}
