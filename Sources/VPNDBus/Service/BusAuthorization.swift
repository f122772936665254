#if canImport(Glibc)
import Glibc
#endif
import VPNCore
import VPNService

/// Who a call is decided for: the user the bus names, its connection
/// (polkit's subject), whether it lets polkit have it authenticate, and
/// whether the call runs off the loop now, where polkit may be asked (its
/// answer may take as long as the caller takes to type a password).
struct Asker {
    let caller: Caller
    let busName: String
    let interactive: Bool
    var isOffLoop = false

    var offLoop: Asker {
        var a = self
        a.isOffLoop = true
        return a
    }

    /// The service itself, for the signals it sends of itself.
    static let service = Asker(caller: VPNBusService.root, busName: "", interactive: false)
}

/// A refusal that polkit may overturn, thrown on the loop so that the
/// call is decided again off it.
struct PolkitNeeded: Error {
    let refusal: Error
}

extension VPNBusService {
    /// Decides `call` for `who` as the agent does; where the profile's
    /// policy refuses (or hides the profile) and polkitd runs, polkit's
    /// answer for org.vpnctl.control on that profile and operation decides.
    func authorize(_ call: ServiceCall, _ who: Asker) throws -> AgentAuthorization.Grant {
        do {
            return try AgentAuthorization.authorize(call, caller: who.caller, settings: settings)
        } catch where polkit != nil && call.profile != nil && call.action != nil && Self.polkitMayOverturn(error) {
            guard who.isOffLoop else { throw PolkitNeeded(refusal: error) }
            return try polkitGrant(call, who, refusal: error)
        }
    }

    /// A refusal by the profile's policy: denied, or hidden from the caller.
    static func polkitMayOverturn(_ error: Error) -> Bool {
        error is AgentAuthorization.Denial || (error as? VPNError)?.code == .configurationUnknown
    }

    /// polkit's answer, asked off the loop: a grant for this call on this
    /// profile alone, or the policy's refusal as it was.
    func polkitGrant(_ call: ServiceCall, _ who: Asker, refusal: Error) throws -> AgentAuthorization.Grant {
        guard let polkit, let reference = call.profile, let action = call.action,
              let profile = try? AgentAuthorization.visibleProfile(reference, caller: Self.root, settings: settings) else { throw refusal }
        let user = who.caller.userName.map { "user '\($0)'" } ?? "uid \(who.caller.uid)"
        let verdict: PolkitAuthority.Verdict
        do {
            verdict = try polkit.check(subject: who.busName, profile: profile.name, operation: action.rawValue, interactive: who.interactive)
        } catch {
            fputs("vpnctl-dbus: polkit could not be asked whether \(user) may \(action.rawValue) '\(profile.name)': \(error)\n", stderr)
            throw refusal
        }
        switch verdict {
        case .authorized:
            fputs("vpnctl-dbus: polkit authorizes \(user) to \(action.rawValue) '\(profile.name)' (\(PolkitAuthority.actionID))\n", stderr)
            if action == .status { polkitReaders.withLock { $0[who.busName, default: []].insert(profile.id) } }
            return AgentAuthorization.grant(call, profile: profile, caller: who.caller, settings: settings)
        case .challenge where !who.interactive:
            throw BusError(name: "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
                           message: "polkit lets \(user) \(action.rawValue) '\(profile.name)' once authenticated (\(PolkitAuthority.actionID)); call again with interactive authorization allowed, from a session with an authentication agent")
        case .challenge, .notAuthorized, .absent:
            throw refusal
        }
    }
}
