import VPNCore

/// A method call to org.vpnctl.VPN1, decoded from its message before
/// anything is decided or run: the object, the method, the signature and
/// the arguments (Start's options, Verify's probe) are checked here, and
/// what does not fit is the D-Bus error the caller gets. The fuzz target
/// (Tests/Fuzz/targets/dbusmessage.swift) drives this with any message.
public enum BusCall: Equatable, Sendable {
    case introspect(path: String)
    case ping
    /// Properties.Get and GetAll, on the object at `path` (the manager
    /// has none); `interface` is "" or org.vpnctl.VPN1.Profile for a
    /// profile's properties.
    case getProperty(path: String, interface: String, name: String)
    case getAllProperties(path: String, interface: String)
    case managedObjects
    case listProfiles
    case profileByName(String)
    /// The profile methods, on the profile named by id (the object path's).
    case start(profile: String, persist: Bool)
    case stop(profile: String)
    case toggle(profile: String)
    case verify(profile: String, probe: String)
    case stats(profile: String)

    /// The call `m` makes, or the error to answer it with.
    public static func decode(_ m: BusMessage) throws(BusError) -> BusCall {
        let path = m.path
        switch (m.interface, m.member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            try expect(m, "")
            return .introspect(path: path)
        case ("org.freedesktop.DBus.Peer", "Ping"):
            return .ping
        case (ProfileObjects.propertiesInterface, "Get"):
            try expect(m, "ss")
            guard case let args = m.arguments(), args.count == 2, case .string(let interface) = args[0], case .string(let name) = args[1] else {
                throw invalid("Get's arguments do not read as (ss)")
            }
            return .getProperty(path: path, interface: interface, name: name)
        case (ProfileObjects.propertiesInterface, "GetAll"):
            try expect(m, "s")
            guard case .string(let interface) = m.arguments().first else { throw invalid("GetAll's argument does not read as (s)") }
            return .getAllProperties(path: path, interface: interface)
        case (ProfileObjects.propertiesInterface, "Set"):
            throw BusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the properties of \(ProfileObjects.profileInterface) are read-only")
        case (ProfileObjects.objectManagerInterface, "GetManagedObjects") where path == ProfileObjects.managerPath:
            try expect(m, "")
            return .managedObjects
        case (ProfileObjects.managerInterface, "ListProfiles") where path == ProfileObjects.managerPath:
            try expect(m, "")
            return .listProfiles
        case (ProfileObjects.managerInterface, "GetProfileByName") where path == ProfileObjects.managerPath:
            try expect(m, "s")
            guard case .string(let name) = m.arguments().first else { throw invalid("GetProfileByName's argument does not read as (s)") }
            return .profileByName(name)
        case (ProfileObjects.profileInterface, let member):
            return try profileCall(member, m)
        default:
            throw BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(m.interface).\(m.member) on \(path)")
        }
    }

    /// The profile an object path names, by id, or UnknownObject.
    static func profile(at path: String) throws(BusError) -> String {
        guard let id = ProfileObjects.id(at: path) else {
            throw BusError(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path)")
        }
        return id.lowercasedString
    }

    static func profileCall(_ member: String, _ m: BusMessage) throws(BusError) -> BusCall {
        let profile = try profile(at: m.path)
        switch member {
        case "Start":
            try expect(m, "a{sv}")
            return .start(profile: profile, persist: try startOptions(m.arguments().first))
        case "Stop":
            try expect(m, "")
            return .stop(profile: profile)
        case "Toggle":
            try expect(m, "")
            return .toggle(profile: profile)
        case "Verify":
            try expect(m, "s")
            guard case .string(let probe) = m.arguments().first else { throw invalid("Verify's argument does not read as (s)") }
            return .verify(profile: profile, probe: probe)
        case "Stats":
            try expect(m, "")
            return .stats(profile: profile)
        default:
            throw BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(ProfileObjects.profileInterface).\(member)")
        }
    }

    /// Start's a{sv}: the one option is persist (b).
    static func startOptions(_ value: BusValue?) throws(BusError) -> Bool {
        guard case .dictionary(let options) = value else { throw invalid("Start's options do not read as a{sv}") }
        var persist = false
        for (key, value) in options {
            switch (key, value) {
            case ("persist", .bool(let b)): persist = b
            default: throw invalid("unknown option \(key.quotedForMessage) of type \(value.signature) (Start takes persist: b)")
            }
        }
        return persist
    }

    static func expect(_ m: BusMessage, _ signature: String) throws(BusError) {
        guard m.signature == signature else {
            throw invalid("\(m.interface).\(m.member) takes (\(signature)), not (\(m.signature))")
        }
    }

    static func invalid(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }
}
