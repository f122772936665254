#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import VPNCore
import VPNService
import VPNSystem

/// `vpnctl ondemand`: turn a profile's on-demand rules on or off, pause them
/// for now, see what they would do. The agent runs them.
enum OnDemandCommand {
    static let profileArgument = PositionalSpec("profile", help: L("The profile's name or UUID."))

    static let spec = CommandSpec(
        name: "ondemand", abstract: L("Turn a profile's on-demand rules on or off, pause them, or test them against the network now."),
        discussion: L("""
        On-demand rules (the profile's onDemand; see vpnctl-profile(5)) are run by the
        agent (vpnctl agent) on every network change: the first rule whose conditions all
        match decides (connect, disconnect or ignore). 'vpnctl stop' of a profile with
        on-demand on pauses it, so that the tunnel stays down until 'ondemand resume' or
        'start'. A pause survives an agent restart, not a reboot.
        """),
        subcommands: [enableSpec, disableSpec, pauseSpec, resumeSpec, statusSpec, testSpec])

    static let enableSpec = CommandSpec(
        name: "enable", abstract: L("Turn on-demand on for a profile (saved in the profile)."),
        examples: ["vpnctl ondemand enable office", "vpnctl ondemand enable office --json"],
        positionals: [profileArgument], run: { try setEnabled($0, true) })

    static let disableSpec = CommandSpec(
        name: "disable", abstract: L("Turn on-demand off for a profile; the tunnel is left as it is."),
        examples: ["vpnctl ondemand disable office", "vpnctl ondemand disable office --json"],
        positionals: [profileArgument], run: { try setEnabled($0, false) })

    static let pauseSpec = CommandSpec(
        name: "pause", abstract: L("Pause on-demand for a profile until 'ondemand resume' or 'start'; the tunnel is left as it is."),
        examples: ["vpnctl ondemand pause office", "vpnctl ondemand pause office && vpnctl stop office"],
        positionals: [profileArgument], run: { try setPaused($0, true) })

    static let resumeSpec = CommandSpec(
        name: "resume", abstract: L("Let the agent run a profile's on-demand rules again."),
        examples: ["vpnctl ondemand resume office", "vpnctl ondemand resume office --json"],
        positionals: [profileArgument], run: { try setPaused($0, false) })

    static let statusSpec = CommandSpec(
        name: "status", abstract: L("Show on-demand's state for every profile with rules, or for one."),
        examples: ["vpnctl ondemand status", "vpnctl ondemand status office --json"],
        positionals: [PositionalSpec("profile", optional: true, help: L("The profile's name or UUID."))], run: runStatus)

    static let testSpec = CommandSpec(
        name: "test", abstract: L("Evaluate a profile's rules against the network now, rule by rule; changes nothing."),
        discussion: L("""
        Prints the network as on-demand sees it (the primary interface and its type, the
        resolver's search domains and servers), then each rule with each condition and
        whether it held, and the rule that decides. Probe URLs are requested. Exit 0
        whatever the rules decide.
        """),
        examples: ["vpnctl ondemand test office", "vpnctl ondemand test office --json"],
        positionals: [profileArgument], run: runTest)

    struct ChangeResult: Encodable {
        var schemaVersion = 1
        let name: String
        let id: String
        let enabled: Bool
        let paused: Bool
        let changed: Bool
    }

    static func pauses(_ inv: Invocation) -> OnDemandPauses { OnDemandPauses(runDirectory: inv.options.runDirectory) }

    static func warn(_ inv: Invocation, _ profile: Profile) {
        let validator = ProfileValidator(secretExists: { _ in true })
        for w in validator.warnings(in: profile) { inv.output.note(L("warning: \(w)")) }
    }

    static func setEnabled(_ inv: Invocation, _ enabled: Bool) throws -> ExitCode {
        let manager = try inv.loadedManager()
        var profile = try manager.profile(named: inv.args.positionals[0])
        if enabled && profile.onDemand.rules.isEmpty {
            throw VPNError(.configurationInvalid, L("'\(profile.name)' has no on-demand rules"),
                           hint: L("add them with: vpnctl edit \(profile.name) (onDemand.rules; see vpnctl-profile(5))"))
        }
        let changed = profile.onDemand.enabled != enabled
        if changed {
            profile.onDemand.enabled = enabled
            profile = try manager.save(profile)
        }
        let paused = pauses(inv).isPaused(profile.id)
        if inv.options.json {
            inv.output.emit(ChangeResult(name: profile.name, id: profile.id.lowercasedString, enabled: enabled, paused: paused, changed: changed))
            return .ok
        }
        if enabled {
            inv.output.line(changed ? L("on-demand enabled for '\(profile.name)'") : L("on-demand is already enabled for '\(profile.name)'"))
        } else {
            inv.output.line(changed ? L("on-demand disabled for '\(profile.name)'") : L("on-demand is already disabled for '\(profile.name)'"))
        }
        if enabled {
            warn(inv, profile)
            if paused { inv.output.note(L("it is paused: vpnctl ondemand resume \(profile.name)")) }
        }
        return .ok
    }

    static func setPaused(_ inv: Invocation, _ paused: Bool) throws -> ExitCode {
        let answer = try inv.service.pauseOnDemand(inv.args.positionals[0], paused)
        let name = answer.name, changed = answer.changed
        if inv.options.json {
            inv.output.emit(ChangeResult(name: answer.name, id: answer.id.lowercasedString, enabled: answer.enabled,
                                         paused: paused, changed: changed))
            return .ok
        }
        if paused {
            inv.output.line(changed ? L("on-demand paused for '\(name)'; the tunnel is left as it is")
                                    : L("on-demand is already paused for '\(name)'"))
        } else {
            inv.output.line(changed ? L("on-demand resumed for '\(name)'") : L("on-demand was not paused for '\(name)'"))
        }
        if !answer.enabled { inv.output.note(L("on-demand is disabled for '\(name)': vpnctl ondemand enable \(name)")) }
        return .ok
    }

    struct StatusRow: Encodable {
        let name: String
        let id: String
        let enabled: Bool
        let paused: Bool
        let rules: Int
        let status: String
        let startedBy: StartOrigin?
        /// What the agent last decided (nil before it has evaluated the profile).
        let agentDecision: OnDemandReport.Entry?

        enum Keys: String, CodingKey { case name, id, enabled, paused, rules, status, startedBy, agentDecision }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(name, forKey: .name)
            try c.encode(id, forKey: .id)
            try c.encode(enabled, forKey: .enabled)
            try c.encode(paused, forKey: .paused)
            try c.encode(rules, forKey: .rules)
            try c.encode(status, forKey: .status)
            try c.encodeOrNull(startedBy, forKey: .startedBy)
            try c.encodeOrNull(agentDecision, forKey: .agentDecision)
        }
    }

    struct StatusResult: Encodable {
        var schemaVersion = 1
        let agentRunning: Bool
        let profiles: [StatusRow]
    }

    static func agentRunning(_ inv: Invocation) -> Bool {
        guard let fd = try? UnixSocket.connect(to: AgentSettings.socketPath(runDirectory: inv.options.runDirectory)) else { return false }
        close(fd)
        return true
    }

    static func runStatus(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profiles = try inv.args.positionals.first.map { [try manager.profile(named: $0)] }
            ?? manager.profiles.filter { !$0.onDemand.rules.isEmpty }
        let paused = try pauses(inv).paused()
        let running = agentRunning(inv)
        // A report is the running agent's; one left by a stopped agent is stale.
        let report = running ? try OnDemandReport.read(runDirectory: inv.options.runDirectory) : nil
        let rows = try profiles.map { p -> StatusRow in
            let d = try inv.controller.derive(p)
            return StatusRow(name: p.name, id: p.id.lowercasedString, enabled: p.onDemand.enabled, paused: paused.contains(p.id),
                             rules: p.onDemand.rules.count, status: d.status.name, startedBy: d.isActive ? d.record?.startedBy : nil,
                             agentDecision: p.onDemand.enabled ? report?.entry(p.id) : nil)
        }
        if inv.options.json {
            inv.output.emit(StatusResult(agentRunning: running, profiles: rows))
            return .ok
        }
        if rows.isEmpty {
            inv.output.note(L("no profile has on-demand rules (onDemand.rules; see vpnctl-profile(5))"))
            return .ok
        }
        inv.output.table([L("NAME"), L("ON-DEMAND"), L("RULES"), L("TUNNEL"), L("STARTED BY"), L("AGENT'S DECISION")], rows.map { r in
            [r.name, !r.enabled ? L("disabled") : r.paused ? L("paused") : L("on"), String(r.rules), VPNStatus.displayName(of: r.status),
             r.startedBy.map(originText) ?? "-",
             r.agentDecision.map { d in d.rule.map { L("rule \($0): \(d.decision) (\(d.reason))") } ?? d.decision } ?? "-"]
        })
        for r in rows { if let note = r.agentDecision?.note { inv.output.line("\(r.name): \(note)") } }
        if !running && rows.contains(where: { $0.enabled && !$0.paused }) {
            inv.output.note(L("the agent is not running, so no rule is run: systemctl start vpnctl-agent.socket"))
        }
        return .ok
    }

    /// StartOrigin.text (the agent's log keeps it English) in the reader's language.
    static func originText(_ o: StartOrigin) -> String { L("on-demand rule \(o.rule): \(o.reason)") }

    struct TestResult: Encodable {
        var schemaVersion = 1
        let name: String
        let enabled: Bool
        let paused: Bool
        let network: NetworkJSON
        let rules: [RuleOutcome]
        let decidingRule: Int?
        let decision: String?
        let reason: String
        let warnings: [String]

        enum Keys: String, CodingKey { case name, enabled, paused, network, rules, decidingRule, decision, reason, warnings }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(name, forKey: .name)
            try c.encode(enabled, forKey: .enabled)
            try c.encode(paused, forKey: .paused)
            try c.encode(network, forKey: .network)
            try c.encode(rules, forKey: .rules)
            try c.encodeOrNull(decidingRule, forKey: .decidingRule)
            try c.encodeOrNull(decision, forKey: .decision)
            try c.encode(reason, forKey: .reason)
            try c.encode(warnings, forKey: .warnings)
        }
    }

    struct NetworkJSON: Encodable {
        let snapshot: NetworkSnapshot
        enum Keys: String, CodingKey { case primaryInterface, interfaceType, ssid, searchDomains, dnsServers }
        func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            if let p = snapshot.primary {
                try c.encode(p.name, forKey: .primaryInterface)
                try c.encode(p.type.rawValue, forKey: .interfaceType)
            } else {
                try c.encodeNil(forKey: .primaryInterface)
                try c.encodeNil(forKey: .interfaceType)
            }
            try c.encodeOrNull(snapshot.primary?.ssid, forKey: .ssid)
            try c.encode(snapshot.searchDomains, forKey: .searchDomains)
            try c.encode(snapshot.dnsServers, forKey: .dnsServers)
        }
    }

    static func runTest(_ inv: Invocation) throws -> ExitCode {
        let manager = try inv.loadedManager()
        let profile = try manager.profile(named: inv.args.positionals[0])
        let controller = inv.controller
        let tunnels = Set(manager.profiles.compactMap { p -> String? in
            guard let d = try? controller.derive(p), d.isActive else { return nil }
            return d.interface
        })
        let network = NetworkObserver(runDirectory: inv.options.runDirectory).snapshot(tunnels: tunnels)
        let e = OnDemandEvaluator.evaluate(profile.onDemand.rules, on: network, probe: { HTTPProbe.probe($0) })
        let warnings = ProfileValidator(secretExists: { _ in true }).warnings(in: profile)
        let paused = pauses(inv).isPaused(profile.id)
        if inv.options.json {
            inv.output.emit(TestResult(name: profile.name, enabled: profile.onDemand.enabled, paused: paused,
                                       network: NetworkJSON(snapshot: network), rules: e.rules, decidingRule: e.decidingRule,
                                       decision: e.decision?.rawValue, reason: e.reason, warnings: warnings))
            return .ok
        }
        inv.output.line(L("network: \(network.summary)"))
        if profile.onDemand.rules.isEmpty {
            inv.output.line(L("'\(profile.name)' has no on-demand rules"))
            return .ok
        }
        // "yes" and "no" padded to one width, so that the conditions line up.
        let yes = L("yes"), no = L("no")
        let markWidth = max(yes.terminalWidth, no.terminalWidth)
        for r in e.rules {
            let (n, action) = (r.number, r.action.rawValue)
            guard r.evaluated else { inv.output.line(L("rule \(n) (\(action)): not evaluated (rule \(e.decidingRule ?? 0) decided)")); continue }
            if r.conditions.isEmpty { inv.output.line(L("rule \(n) (\(action)): matches (no conditions)")); continue }
            inv.output.line(r.matched ? L("rule \(n) (\(action)): matches") : L("rule \(n) (\(action)): does not match"))
            for c in r.conditions {
                let mark = c.matched ? yes : no
                inv.output.line("  \(mark)\(String(repeating: " ", count: markWidth - mark.terminalWidth))  \(c.condition): \(c.text)")
            }
        }
        if let n = e.decidingRule, let a = e.decision {
            inv.output.line(L("decision: rule \(n): \(a.rawValue) (\(e.reason))"))
        } else {
            inv.output.line(L("decision: none (no rule matches: on-demand leaves the tunnel as it is)"))
        }
        if !profile.onDemand.enabled { inv.output.note(L("on-demand is disabled for '\(profile.name)': the agent does not run these rules")) }
        if paused { inv.output.note(L("on-demand is paused for '\(profile.name)': vpnctl ondemand resume \(profile.name)")) }
        for w in warnings { inv.output.note(L("warning: \(w)")) }
        return .ok
    }
}
