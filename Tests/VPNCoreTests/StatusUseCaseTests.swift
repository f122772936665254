import Foundation
import Testing
@testable import VPNCore
import VPNSystem

/// Each wait runs the next scripted step (what "happened" meanwhile) and
/// records it, so a test can assert how many waits a watch made.
final class ScriptedEvents: StatusEventSource {
    var steps: [() throws -> Void]
    var waits = 0
    var followed: [UUID: pid_t] = [:]

    init(_ steps: [() throws -> Void]) { self.steps = steps }

    func follow(_ id: UUID, supervisor pid: pid_t) { followed[id] = pid }

    func wait() {
        waits += 1
        if !steps.isEmpty { try? steps.removeFirst()() }
    }
}

@Suite struct StatusUseCaseTests {
    func fixture() throws -> (TempDir, TunnelController, Profile) {
        let dir = TempDir()
        let controller = TunnelController(configDirectory: dir.path + "/etc", runDirectory: dir.path + "/run")
        try controller.runtime.prepare()
        let p = sampleProfile("office")
        // A clean stop's record: what the live system says matches it.
        try controller.runtime.write(RuntimeRecord(id: p.id, name: p.name, status: .disconnected))
        return (dir, controller, p)
    }

    func event(_ p: Profile, _ previous: String, _ status: String, ms: Double = 0) -> TransitionEvent {
        TransitionEvent(time: Date(timeIntervalSince1970: 1_800_000_000 + ms / 1000), id: p.id.uuidString.lowercased(), name: p.name,
                        status: status, previous: previous, interface: status == "disconnected" ? nil : "utun0", error: nil)
    }

    /// Runs a watch to the end of its script; returns "previous>status" per transition.
    func collect(_ watch: StatusWatch, _ events: ScriptedEvents, limit: Int = .max) -> [String] {
        var seen: [String] = []
        let steps = events.steps.count
        watch.run(keepGoing: { events.waits <= steps }) { t in
            seen.append("\(t.previous)>\(t.status)")
            return seen.count < limit
        }
        return seen
    }

    @Test func statusesAreDerivedForEachProfile() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let d = try StatusUseCase(controller: controller).statuses(of: [p, sampleProfile("second")])
        #expect(d.map(\.status) == [.disconnected, .disconnected] && d.map(\.name) == ["office", "second"])
    }

    /// Many profiles: the run directory is listed once, and a profile
    /// whose record is there is still read (a dead supervisor's record
    /// still says so).
    @Test func manyProfilesAreDerivedFromOneListingOfTheRunDirectory() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let crashed = sampleProfile("crashed")
        var record = RuntimeRecord(id: crashed.id, name: crashed.name, status: .connected)
        record.supervisorPid = 999_999_999
        try controller.runtime.write(record)
        let others = (0..<12).map { sampleProfile("p\($0)") }
        let d = try StatusUseCase(controller: controller).statuses(of: [p] + others + [crashed])
        #expect(d.count == 14 && d.allSatisfy { $0.status == .disconnected })
        #expect(d.last?.stopReason == .providerFailed && d.last?.record != nil)
        #expect(d.dropLast().allSatisfy { $0.stopReason == nil })
        #expect(try controller.derive(crashed, recorded: []).record == nil, "a listing without the file: no read")
    }

    @Test func aWatchStartsFromNowAndReportsEachNewTransitionOnce() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        try controller.runtime.appendEvent(event(p, "disconnected", "connecting"), id: p.id)   // history: not replayed
        let events = ScriptedEvents([
            { try controller.runtime.appendEvent(self.event(p, "disconnected", "connecting"), id: p.id)
              try controller.runtime.appendEvent(self.event(p, "connecting", "connected", ms: 5), id: p.id) },
            { try controller.runtime.appendEvent(self.event(p, "connected", "connected"), id: p.id) },     // no change
            { try controller.runtime.appendEvent(self.event(p, "connected", "disconnecting"), id: p.id)
              try controller.runtime.appendEvent(self.event(p, "disconnecting", "disconnected"), id: p.id) },
        ])
        let watch = StatusWatch(controller: controller, profiles: { [p] }, events: events)
        #expect(watch.begin() == 1)
        #expect(collect(watch, events) == ["disconnected>connecting", "connecting>connected",
                                           "connected>disconnecting", "disconnecting>disconnected"])
        #expect(events.waits == 4 && events.followed.isEmpty)
    }

    @Test func aHalfWrittenLineWaitsForItsEnd() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let path = controller.runtime.eventsPath(p.id)
        let line = Array(try RuntimeStore.makeEncoder().encode(event(p, "disconnected", "connecting"))) + [0x0A]
        let events = ScriptedEvents([
            { try AtomicFile.write(Array(line.prefix(20)), to: path, mode: 0o600, durable: false) },
            { try AtomicFile.write(line, to: path, mode: 0o600, durable: false) },
        ])
        let watch = StatusWatch(controller: controller, profiles: { [p] }, events: events)
        watch.begin()
        #expect(collect(watch, events) == ["disconnected>connecting"])
    }

    /// A crash: the log's last word is connected, the supervisor is gone.
    @Test func aConnectedRecordWithoutItsSupervisorIsReportedAsDisconnected() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        var record = RuntimeRecord(id: p.id, name: p.name, status: .connected)
        record.interface = "utun0"
        record.supervisorPid = 999_999_999
        let events = ScriptedEvents([{
            try controller.runtime.appendEvent(self.event(p, "disconnected", "connecting"), id: p.id)
            try controller.runtime.appendEvent(self.event(p, "connecting", "connected"), id: p.id)
            try controller.runtime.write(record)
        }])
        let watch = StatusWatch(controller: controller, profiles: { [p] }, events: events)
        watch.now = { Date(timeIntervalSince1970: 0) }
        watch.begin()
        var seen: [StatusTransition] = []
        watch.run(keepGoing: { events.waits <= 1 }) { seen.append($0); return true }
        #expect(seen.map { "\($0.previous)>\($0.status)" } == ["disconnected>connecting", "connecting>connected", "connected>disconnected"])
        #expect(seen.last?.error?.name == "pluginFailed" && seen.last?.interface == "utun0" && seen.last?.time == Date(timeIntervalSince1970: 0))
    }

    @Test func theHandlerEndsTheWatch() throws {
        let (dir, controller, p) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let events = ScriptedEvents([
            { try controller.runtime.appendEvent(self.event(p, "disconnected", "connecting"), id: p.id)
              try controller.runtime.appendEvent(self.event(p, "connecting", "connected"), id: p.id) },
            { Issue.record("waited after the handler said stop") },
        ])
        let watch = StatusWatch(controller: controller, profiles: { [p] }, events: events)
        watch.begin()
        #expect(collect(watch, events, limit: 1) == ["disconnected>connecting"])
        #expect(events.waits == 1)
    }
}
