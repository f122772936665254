#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNSystem

/// `apps`: what a running profile's app rules cover now.
public struct AppsReport: Codable, Equatable, Sendable {
    public struct Process: Codable, Equatable, Sendable {
        public let pid: Int32
        public let uid: UInt32?
        public let command: String
        public let cgroup: String
    }
    public let name: String
    public let id: UUID
    public let mode: AppRules.Mode
    /// The slice `vpnctl run` asks systemd for (vpnctl-KEY.slice).
    public let slice: String
    /// The cgroup vpnctl made for the profile where systemd does not manage
    /// the tree (nil: `vpnctl run` asks systemd for a scope in `slice`).
    public let ownedCgroup: String?
    /// The cgroups the rules cover now.
    public let cgroups: [String]
    /// Their processes (a user who is not an administrator sees their own only).
    public let processes: [Process]
}

/// `placeApp`: a process moved into the profile's cgroup.
public struct AppPlacement: Codable, Equatable, Sendable {
    public let name: String
    public let pid: Int32
    public let cgroup: String
}

/// The app rules' use cases, on a running profile: which programs they
/// cover, and a process put under them (`vpnctl run`, `vpnctl app add`).
public struct AppUseCases {
    public let controller: TunnelController

    public init(controller: TunnelController) { self.controller = controller }

    /// The profile's app rules as the running supervisor put them in place.
    func inPlace(_ profile: Profile) throws -> AppRoutingRecord {
        guard profile.appRules != nil else {
            throw VPNError(.configurationInvalid, L("'\(profile.name)' has no appRules: every program uses it as its routes say"),
                           hint: L("add appRules with 'vpnctl edit \(profile.name)' (see vpnctl-profile(5))"))
        }
        let status = try controller.derive(profile)
        guard status.isActive, status.supervisorAlive, let apps = status.record?.apps else {
            throw VPNError(.notConnected, L("'\(profile.name)' is not running: its app rules are not in place"),
                           hint: L("vpnctl start \(profile.name)"))
        }
        return apps
    }

    /// `onlyUID`: list only that user's processes (nil: everyone's).
    public func apps(_ profile: Profile, onlyUID: UInt32?) throws -> AppsReport {
        let apps = try inPlace(profile)
        let tree = CgroupTree(mountPoint: apps.cgroupMount)
        var processes: [AppsReport.Process] = []
        for c in apps.covered {
            for pid in tree.processes(under: c) {
                let uid = Processes.owner(of: pid)
                if let onlyUID, uid != onlyUID { continue }
                let argv = Processes.commandLine(of: pid) ?? []
                processes.append(AppsReport.Process(pid: pid, uid: uid, command: argv.joined(separator: " ").escapingControls(keepLineBreaks: false),
                                                    cgroup: CgroupTree.cgroup(of: pid) ?? c))
            }
        }
        return AppsReport(name: profile.name, id: profile.id, mode: apps.mode, slice: AppRouting.slice(for: profile.id),
                          ownedCgroup: apps.ownedCgroup, cgroups: apps.covered, processes: processes)
    }

    /// Moves `pid` into the profile's own cgroup. A caller other than root
    /// may move only a process of their own (real and effective uid theirs).
    public func place(_ profile: Profile, pid: Int32, caller: Caller) throws -> AppPlacement {
        let apps = try inPlace(profile)
        let started = Processes.startTime(of: pid)
        guard pid > 0, started != nil, let owner = Processes.owner(of: pid) else {
            throw VPNError(.usage, L("there is no process \(pid)"))
        }
        guard caller.isRoot || owner == caller.uid else {
            throw VPNError(.permissionDenied, L("process \(pid) is not yours: only your own processes can be put under the app rules of '\(profile.name)'"))
        }
        // The profile's own cgroup, in this mount namespace's tree: never one a record names.
        guard apps.ownedCgroup != nil, let tree = CgroupTree.current() else {
            throw VPNError(.failure, L("systemd manages the cgroups here: start the program with 'vpnctl run \(profile.name) -- PROGRAM' instead"))
        }
        let owned = AppRouting.ownedCgroup(for: profile.id)
        try tree.move(pid, to: owned)
        // The same process, still the caller's (not a recycled pid, not a set-uid program it ran meanwhile).
        guard caller.isRoot || Processes.startTime(of: pid) == started && Processes.owner(of: pid) == caller.uid else {
            throw VPNError(.permissionDenied, L("process \(pid) changed while it was moved: only your own processes can be put under the app rules of '\(profile.name)'"))
        }
        return AppPlacement(name: profile.name, pid: pid, cgroup: owned)
    }
}
