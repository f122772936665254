#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Synchronization
import VPNCore
import VPNService
import VPNSystem

/// org.vpnctl.VPN1 on a bus: each method is a typed service call, decided
/// for the caller the bus names (its uid, from the bus) by the same policy
/// as the agent's socket, and run by the same use cases. Starts and stops
/// do not wait (as NEVPNConnection's do not): the outcome arrives as
/// PropertiesChanged, from the same event source as `status --watch`.
public final class VPNBusService: @unchecked Sendable {
    let bus: BusConnection
    let settings: AgentSettings
    let searchPath: String?
    /// The vpnctl that supervises the tunnels this service starts.
    let supervisor: String
    /// The callers on the bus now, by unique name: the uid the bus gives
    /// and the groups the system's databases gave when it first called (a
    /// unique name is never reused; the bus too reads a connection's groups
    /// once, and a lookup may go as far as systemd-userdbd). A name goes
    /// when it leaves the bus. These are also the receivers of
    /// PropertiesChanged: a signal goes to each caller that may see its
    /// profile, never to the whole bus.
    let callers = Mutex<[String: Caller]>([:])
    /// The profiles whose status polkit let a connection read that its
    /// user's policy does not: their transitions are signalled to it too,
    /// while it stays on the bus.
    let polkitReaders = Mutex<[String: Set<UUID>]>([:])
    /// The store's profiles as last read, to tell what a change added and removed.
    let storeSnapshot = Mutex<[Profile]>([])
    var storeWatch: FileWatch?
    /// Where the calls that take a while run (nil: in place, on the caller's thread).
    var calls: BackgroundCalls?
    /// Asked when a profile's policy refuses a caller (nil: never).
    public var polkit: PolkitAuthority?

    public init(bus: BusConnection, settings: AgentSettings, searchPath: String?, supervisor: String) {
        self.bus = bus
        self.settings = settings
        self.searchPath = searchPath
        self.supervisor = supervisor
    }

    func service(_ access: ServiceAccess = .unrestricted) -> LocalService {
        let s = LocalService(configDirectory: settings.configDirectory, runDirectory: settings.runDirectory, path: searchPath, access: access)
        s.supervisorExecutable = supervisor
        return s
    }

    /// Serves the objects, then owns the name (so that nobody calls before they are served).
    public func publish() throws {
        try bus.serve(ProfileObjects.managerPath) { [unowned self] m in self.handle(m) }
        try bus.onNameLost { [unowned self] name in
            _ = callers.withLock { $0.removeValue(forKey: name) }
            _ = polkitReaders.withLock { $0.removeValue(forKey: name) }
        }
        try bus.requestName(ProfileObjects.busName)
    }

    // MARK: dispatch

    func handle(_ m: BusMessage) -> BusReply? {
        guard m.isMethodCall else { return nil }
        AgentAuthorization.speak(nil)
        do {
            let call = try BusCall.decode(m)
            let who = try asker(m)
            do { return try run(call, m, who) } catch let needed as PolkitNeeded {
                // polkit may take as long as the caller takes to type a password.
                do { return try inBackground(m, who) { [self] in try run(call, m, who.offLoop) } } catch { throw needed.refusal }
            }
        } catch {
            return Self.reply(for: error)
        }
    }

    /// Decides and runs a decoded call for `who`.
    func run(_ call: BusCall, _ m: BusMessage, _ who: Asker) throws -> BusReply {
        switch call {
        case .introspect(let path):
            return .values([.string(try introspect(path, who))])
        case .ping:
            return .values([])
        case .getProperty(let path, let interface, let name):
            guard interface == ProfileObjects.profileInterface || interface.isEmpty else { throw noSuchProperty(interface, name) }
            guard let value = try propertyValues(try BusCall.profile(at: path), who).first(where: { $0.0 == name })?.1 else {
                throw noSuchProperty(interface, name)
            }
            return .values([.variant(value)])
        case .getAllProperties(let path, let interface):
            if path == ProfileObjects.managerPath || interface != ProfileObjects.profileInterface && !interface.isEmpty {
                return .values([.dictionary([])])
            }
            return .values([.dictionary(try propertyValues(try BusCall.profile(at: path), who))])
        case .managedObjects:
            return .values([try managedObjects(who)])
        case .listProfiles:
            let (_, service) = try granted(.list, who)
            return .values([.array(of: "o", try service.list().profiles.map { .objectPath(ProfileObjects.path(of: $0.id)) })])
        case .profileByName(let name):
            // Decided as a status read; the profile read to decide names the object.
            let grant = try authorize(.isConnected(profile: name), who)
            guard let p = grant.profile else { throw Self.failed("profile '\(name)' went meanwhile") }
            return .values([.objectPath(ProfileObjects.path(of: p.id))])
        case .start, .stop, .toggle, .verify, .stats:
            return try profile(call, m, who)
        }
    }

    /// The D-Bus error a call's failure is sent as.
    static func reply(for error: Error) -> BusReply {
        if let e = error as? BusError { return .error(e) }
        return .error(ProfileObjects.busError((error as? AgentAuthorization.Denial)?.error ?? VPNError.from(error)))
    }

    /// Runs `work` off the loop when it has one (the calls that spawn
    /// processes or wait), so that nobody else waits for it; in place otherwise.
    func inBackground(_ m: BusMessage, _ who: Asker, _ work: @escaping () throws -> BusReply) throws -> BusReply {
        guard let calls, !who.isOffLoop else { return try work() }
        return try calls.run(m, for: who.caller, work)
    }

    /// Answers the calls that take a while from threads of their own (BackgroundCalls).
    public func answerInBackground(on loop: EventLoop) throws {
        let calls = try BackgroundCalls(bus: bus)
        calls.attach(to: loop)
        self.calls = calls
    }

    static func failed(_ message: String) -> BusError { BusError(name: "org.freedesktop.DBus.Error.Failed", message: message) }

    /// Who sent `m`, as the bus names it.
    func asker(_ m: BusMessage) throws -> Asker {
        Asker(caller: try caller(m.sender), busName: m.sender, interactive: m.allowsInteractiveAuthorization)
    }

    /// The caller the bus names: its uid from the bus, its groups from the system's databases.
    func caller(_ sender: String) throws -> Caller {
        if let known = callers.withLock({ $0[sender] }) { return known }
        let caller = Self.caller(uid: try bus.unixUser(of: sender))
        callers.withLock { $0[sender] = caller }
        return caller
    }

    static func caller(uid: uid_t) -> Caller {
        Caller.fromSystem(uid: uid, gid: UserDatabase.primaryGroup(uid) ?? gid_t(uid))
    }

    /// Authorizes `call` as the agent does, and the service it runs on.
    func granted(_ call: ServiceCall, _ who: Asker) throws -> (ServiceCall, LocalService) {
        let grant = try authorize(call, who)
        return (grant.call, service(grant.access))
    }

    // MARK: the manager

    /// ObjectManager.GetManagedObjects: each profile the caller may see,
    /// with its properties as GetAll gives them.
    func managedObjects(_ who: Asker) throws -> BusValue {
        let (_, service) = try granted(.list, who)
        let profiles = try service.manager().profiles
        let statuses = try service.statuses(of: profiles, readActivity: false)
        return .entries(key: "o", value: "a{sa{sv}}", zip(profiles, statuses).map { p, s in
            (.objectPath(ProfileObjects.path(of: p.id)), Self.interfaces(ProfileObjects.properties(ProfileList.Row(p), s)))
        })
    }

    /// A profile object's interfaces with their properties (a{sa{sv}}).
    static func interfaces(_ properties: [(String, BusValue)]) -> BusValue {
        .entries(key: "s", value: "a{sv}", [(.string(ProfileObjects.profileInterface), .dictionary(properties))])
    }

    // MARK: a profile

    /// The profile's properties, read now (status is derived, never kept):
    /// the store is read once, to decide, and the profile read then is the one shown.
    func propertyValues(_ reference: String, _ who: Asker) throws -> [(String, BusValue)] {
        try profileProperties(reference, who).properties
    }

    /// The profile as read to decide, and its properties.
    func profileProperties(_ reference: String, _ who: Asker) throws -> (profile: Profile, properties: [(String, BusValue)]) {
        let grant = try authorize(.status(profile: reference), who)
        guard let p = grant.profile, let status = try service(grant.access).statuses(of: [p], readActivity: false).first else {
            throw Self.failed("profile \(reference) went meanwhile")
        }
        return (p, ProfileObjects.properties(ProfileList.Row(p), status))
    }

    /// Verify's probe timeout, as `vpnctl verify`'s default.
    static let verifyTimeout = 5

    func noSuchProperty(_ interface: String, _ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name) in \(interface.isEmpty ? ProfileObjects.profileInterface : interface)")
    }

    /// A profile's methods: decided on the loop, run off it.
    func profile(_ call: BusCall, _ m: BusMessage, _ who: Asker) throws -> BusReply {
        switch call {
        case .start(let reference, let persist):
            let (call, service) = try granted(.start(profile: reference, wait: false, timeout: 20, changes: false, persist: persist), who)
            return try inBackground(m, who) {
                _ = try service.start(call.profile ?? reference, wait: false, timeout: 20, changes: false, persist: persist, NoEvents())
                return .values([])
            }
        case .stop(let reference):
            let (call, service) = try granted(.stop(profile: reference, wait: false, timeout: 20, changes: false), who)
            return try inBackground(m, who) {
                _ = try service.stop(call.profile ?? reference, wait: false, timeout: 20, changes: false, NoEvents())
                return .values([])
            }
        case .toggle(let reference):
            // Decided as a toggle; done as the start or stop it stands for, without a wait.
            let (call, service) = try granted(.toggle(profile: reference, timeout: 20, changes: false), who)
            let id = call.profile ?? reference
            return try inBackground(m, who) {
                if try service.status(id).profiles.first?.status.isActive == true {
                    _ = try service.stop(id, wait: false, timeout: 20, changes: false, NoEvents())
                } else {
                    _ = try service.start(id, wait: false, timeout: 20, changes: false, persist: false, NoEvents())
                }
                return .values([])
            }
        case .verify(let reference, let probe):
            let (call, service) = try granted(.verify(profile: reference, probe: probe, dns: nil, timeout: Self.verifyTimeout), who)
            return try inBackground(m, who) {
                let answer = try service.verify(call.profile ?? reference, probe: probe, dns: nil, timeout: Self.verifyTimeout)
                return .values([.dictionary(ProfileObjects.verification(answer.report))])
            }
        case .stats(let reference):
            // Off the loop: the counters and handshake are asked of the provider, which may be slow to answer.
            let (call, service) = try granted(.stats(profile: reference), who)
            return try inBackground(m, who) {
                let d = try service.stats(call.profile ?? reference).status
                var stats: [(String, BusValue)] = [("Status", .string(d.status.name)), ("Interface", .string(d.interface ?? ""))]
                if let a = d.activity {
                    stats += [("RxBytes", .uint64(a.rxBytes)), ("TxBytes", .uint64(a.txBytes))]
                    if let h = a.latestHandshake { stats.append(("LatestHandshake", .string(Timestamp.iso8601(h)))) }
                }
                return .values([.dictionary(stats)])
            }
        default:
            throw Self.failed("not a profile's method")
        }
    }

    // MARK: introspection

    func introspect(_ path: String, _ who: Asker) throws -> String {
        if path == ProfileObjects.managerPath || path == "/org/vpnctl/VPN1/profile" {
            let (_, service) = try granted(.list, who)
            let ids = try service.list().profiles.map { $0.id }
            return Introspection.node(path == ProfileObjects.managerPath ? Introspection.manager + Introspection.objectManager : "",
                                      children: path == ProfileObjects.managerPath ? ["profile"] : ids.map { String(ProfileObjects.path(of: $0).split(separator: "/").last!) })
        }
        if path == "/" || path == "/org" || path == "/org/vpnctl" {
            return Introspection.node("", children: [path == "/" ? "org" : path == "/org" ? "vpnctl" : "VPN1"])
        }
        _ = try propertyValues(try BusCall.profile(at: path), who)
        return Introspection.node(Introspection.profile, children: [])
    }

    // MARK: signals

    /// Watches for transitions on a thread of its own and sends a
    /// PropertiesChanged for each from `loop`'s thread.
    public func signalTransitions(on loop: EventLoop) throws {
        let queue = try LoopQueue<StatusTransition>()
        loop.watch(queue.readFD) { [unowned self] in
            for t in queue.take() { _ = signal(t) }
        }
        try BackgroundThread.start { [unowned self] in watchTransitions(queue) }
    }

    /// Hands each transition `status --watch` sees to `queue`, for ever.
    func watchTransitions(_ queue: LoopQueue<StatusTransition>) {
        let service = self.service()
        let events = TransitionSignals { t in queue.push(t); return true }
        while true {
            do { try service.watch(nil, events) } catch {
                fputs("vpnctl-dbus: the watch behind PropertiesChanged failed (again in 1 s): \(error)\n", stderr)
                sleep(1)
            }
        }
    }

    /// The service's own caller, for the signals it sends of itself.
    static let root = Caller.fromSystem(uid: 0, gid: 0)

    /// A transition's PropertiesChanged, to each caller on the bus whose
    /// policy lets it see the profile (decided once per uid), addressed to
    /// it: a broadcast would tell every process on the bus about tunnels
    /// its user may not even list.
    func signal(_ t: StatusTransition) -> Bool {
        // The store is read once: who may see the profile is decided on the profile read here.
        guard let (profile, all) = try? profileProperties(t.id.lowercasedString, .service) else { return true }
        let changed = all.filter { ProfileObjects.transitionProperties.contains($0.0) }
        let receivers = Dictionary(grouping: callers.withLock { $0 }, by: \.value.uid)
        let byPolkit = polkitReaders.withLock { $0 }
        let policy = settings.policy
        var messages: [BusMessage] = []
        for (_, callers) in receivers {
            let caller = callers[0].value
            let byPolicy = policy.isAdmin(caller) || policy.canSee(caller, profile)
            for (name, _) in callers where byPolicy || byPolkit[name]?.contains(profile.id) == true {
                if let m = BusMessage.signal(path: ProfileObjects.path(of: t.id), interface: ProfileObjects.propertiesInterface, member: "PropertiesChanged",
                                             destination: name, [.string(ProfileObjects.profileInterface), .dictionary(changed), .array(of: "s", [])]) {
                    messages.append(m)
                }
            }
        }
        bus.send(messages)
        return true
    }
}

extension VPNBusService {
    // MARK: store changes

    /// Watches the preferences file on `loop`: an import, a removal, an
    /// edit or a policy change becomes, for each caller on the bus, the
    /// ProfileAdded/InterfacesAdded and ProfileRemoved/InterfacesRemoved
    /// of the profiles it may now see or no longer see, and a
    /// PropertiesChanged of what an edit changed. A store that cannot be
    /// watched is said once; the rest of the service goes on.
    public func signalStoreChanges(on loop: EventLoop) {
        let path = PreferencesStore(directory: settings.configDirectory).path
        storeSnapshot.withLock { $0 = (try? storeProfiles()) ?? [] }
        do {
            let watch = try FileWatch(path)
            storeWatch = watch
            loop.watch(watch.fd) { [unowned self] in
                if watch.drain() { storeChanged() }
            }
        } catch {
            fputs("vpnctl-dbus: no ProfileAdded or ProfileRemoved signals: \(error)\n", stderr)
        }
    }

    func storeProfiles() throws -> [Profile] {
        let m = ProfileManager(store: PreferencesStore(directory: settings.configDirectory))
        try m.load()
        return m.profiles
    }

    /// The store read again after a change; a store that does not read
    /// (a writer's rename not yet done) is read at its next change.
    func storeChanged() {
        guard let fresh = try? storeProfiles() else { return }
        let old = storeSnapshot.withLock { s in defer { s = fresh }; return s }
        bus.send(storeSignals(from: old, to: fresh))
    }

    /// A signal before it is addressed: its object, interface, member and arguments.
    typealias StoreSignal = (path: String, interface: String, member: String, arguments: [BusValue])

    /// The signals that take each caller on the bus from the profiles it
    /// saw in `old` to those it sees in `new`, addressed to it. What a
    /// profile's signals carry is made once, for all the callers told of it.
    func storeSignals(from old: [Profile], to new: [Profile]) -> [BusMessage] {
        let policy = settings.policy
        let service = self.service()
        let before = Dictionary(old.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let manager = ProfileObjects.managerPath
        var statuses: [UUID: ProfileStatus?] = [:]
        func status(_ p: Profile) -> ProfileStatus? {
            if let known = statuses[p.id] { return known }
            let s = (try? service.statuses(of: [p], readActivity: false))?.first
            statuses[p.id] = s
            return s
        }
        var added: [UUID: [StoreSignal]] = [:]
        func adding(_ p: Profile) -> [StoreSignal] {
            if let known = added[p.id] { return known }
            let path = ProfileObjects.path(of: p.id)
            let signals: [StoreSignal] = status(p).map { s in
                [(manager, ProfileObjects.managerInterface, "ProfileAdded", [.objectPath(path)]),
                 (manager, ProfileObjects.objectManagerInterface, "InterfacesAdded",
                  [.objectPath(path), Self.interfaces(ProfileObjects.properties(ProfileList.Row(p), s))])]
            } ?? []
            added[p.id] = signals
            return signals
        }
        var edited: [UUID: [StoreSignal]] = [:]
        func editing(_ p: Profile, was: Profile) -> [StoreSignal] {
            if let known = edited[p.id] { return known }
            var signals: [StoreSignal] = []
            if was != p, let s = status(p) {
                // What the edit changed: the same status, shown with the profile before and after.
                var then = s
                then.onDemandEnabled = was.onDemand.enabled
                let changed = zip(ProfileObjects.properties(ProfileList.Row(p), s), ProfileObjects.properties(ProfileList.Row(was), then))
                    .filter { $0.0.1 != $0.1.1 }.map(\.0)
                if !changed.isEmpty {
                    signals = [(ProfileObjects.path(of: p.id), ProfileObjects.propertiesInterface, "PropertiesChanged",
                                [.string(ProfileObjects.profileInterface), .dictionary(changed), .array(of: "s", [])])]
                }
            }
            edited[p.id] = signals
            return signals
        }
        func removing(_ id: UUID) -> [StoreSignal] {
            let path = ProfileObjects.path(of: id)
            return [(manager, ProfileObjects.managerInterface, "ProfileRemoved", [.objectPath(path)]),
                    (manager, ProfileObjects.objectManagerInterface, "InterfacesRemoved",
                     [.objectPath(path), .array(of: "s", [.string(ProfileObjects.profileInterface)])])]
        }
        var messages: [BusMessage] = []
        for (_, callers) in Dictionary(grouping: callers.withLock { $0 }, by: \.value.uid) {
            let caller = callers[0].value
            let sees: (Profile) -> Bool = policy.isAdmin(caller) ? { _ in true } : { policy.canSee(caller, $0) }
            let saw = Set(old.filter(sees).map(\.id))
            let seesNow = new.filter(sees)
            let seen = Set(seesNow.map(\.id))
            var signals: [StoreSignal] = []
            for p in seesNow {
                if !saw.contains(p.id) { signals += adding(p) } else if let was = before[p.id] { signals += editing(p, was: was) }
            }
            for id in old.map(\.id) where saw.contains(id) && !seen.contains(id) { signals += removing(id) }
            for (name, _) in callers {
                for s in signals {
                    if let m = BusMessage.signal(path: s.path, interface: s.interface, member: s.member, destination: name, s.arguments) { messages.append(m) }
                }
            }
        }
        return messages
    }
}

/// Items from other threads to the loop's (transitions from the watch,
/// replies of calls run in the background): a list under a lock, and a
/// doorbell whose listener the loop waits on.
final class LoopQueue<Item>: @unchecked Sendable {
    let readFD: Int32
    let ringer: Int32
    let pending = Mutex<[Item]>([])

    init() throws {
        (readFD, ringer) = try Doorbell.pair()
    }

    func push(_ item: Item) {
        pending.withLock { $0.append(item) }
        Doorbell.ring(ringer)
    }

    func take() -> [Item] {
        _ = Doorbell.drain(readFD)
        return pending.withLock { all in defer { all = [] }; return all }
    }
}

/// The watch's events, each transition handed to `transition`.
final class TransitionSignals: ServiceEvents {
    let transition: (StatusTransition) -> Bool
    init(_ transition: @escaping (StatusTransition) -> Bool) { self.transition = transition }
    func emit(_ event: ServiceEvent) -> Bool {
        if case .transition(let t) = event { return transition(t) }
        return true
    }
    func isOpen() -> Bool { true }
    var hangupDescriptor: Int32? { nil }
}
