#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// The command line's side of start, stop and toggle: the service's
/// events rendered as they come (a spinner on a terminal, the supervisor's
/// "[#]" lines with --verbose, warnings), and the outcome's notes.
enum TunnelRendering {
    /// Runs `work` with its events rendered; `onDemand` gets on-demand's
    /// changes as they happen (toggle says them first; start and stop after).
    static func during<R>(_ inv: Invocation, _ spinner: Spinner, prompt: CredentialPrompt? = nil,
                          onDemand: ((String, OnDemandChange) -> Void)? = nil,
                          _ work: (ServiceEvents) throws -> R) throws -> R {
        let events = CommandEvents(inv, prompt: prompt) { event in
            switch event {
            case .progress(let name, let action):
                spinner.tick(action == "start" ? L("connecting \(name)") : L("disconnecting \(name)"))
            case .change(let line):
                if inv.options.verbose {
                    spinner.clear()
                    inv.output.note(line)
                }
            case .onDemand(let name, let change):
                spinner.clear()
                onDemand?(name, change)
            case .onDemandPauseFailed(let name, let reason):
                spinner.clear()
                inv.output.note(L("warning: cannot pause on-demand for '\(name)' (\(reason)); the agent may start it again"))
            case .watching, .transition, .logLine, .credentials:
                break
            }
            return true
        }
        defer { spinner.clear() }
        do {
            return try work(events)
        } catch let e as VPNError where e.code == .configurationInvalid {
            // A --password-file that could not be used is the reason to name.
            if let problem = prompt?.fileProblem { throw problem }
            throw e
        }
    }

    /// What a start or stop found, said in a note.
    static func notes(_ inv: Invocation, _ r: TunnelReport) {
        let name = r.status.name
        if let why = r.notPersistent { inv.output.note(L("--persist has no effect for '\(name)': \(why)")) }
        switch r.outcome {
        case .alreadyConnected: inv.output.note(L("'\(name)' is already connected (\(r.status.interface ?? "?"))"))
        case .accepted: inv.output.note(L("start requested; status: \(r.status.status.displayName)"))
        case .notRunning:
            if !r.cleanedUp.isEmpty {
                inv.output.note(L("'\(name)' had no live supervisor; cleaned up: \(r.cleanedUp.joined(separator: ", "))"))
            } else {
                inv.output.note(L("'\(name)' is not running"))
            }
        case .requested: inv.output.note(L("stop requested; status: \(VPNStatus.disconnecting.displayName)"))
        case .connected, .stopped, .failed: break
        }
    }
}

/// Stops for the commands that replace or remove a profile (root's): as
/// `vpnctl stop` renders them, on-demand left as it is.
enum TunnelActions {
    static func stop(_ inv: Invocation, _ profile: Profile, wait: Bool, timeout: Int) throws -> (ExitCode, DerivedStatus) {
        let service = LocalService(configDirectory: inv.options.configDirectory, runDirectory: inv.options.runDirectory,
                                   path: inv.context.environment["PATH"])
        let report = try TunnelRendering.during(inv, Spinner(for: inv, when: wait)) {
            try service.stopOne(profile, wait: wait, timeout: timeout, changes: inv.options.verbose, $0)
        }
        TunnelRendering.notes(inv, report)
        return (.ok, report.status)
    }
}
