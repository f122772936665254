import Testing
@testable import VPNDBus

/// What a method call decodes to, or the D-Bus error it gets, before
/// anything is decided or run.
@Suite struct BusCallTests {
    static let profile = "/org/vpnctl/VPN1/profile/18380c8262064bf6b96cf46ec4d630e7"
    static let id = "18380c82-6206-4bf6-b96c-f46ec4d630e7"

    func decode(_ path: String, _ interface: String, _ member: String, _ values: [BusValue] = []) throws -> BusCall {
        let m = try #require(BusMessage.methodCall(destination: "org.vpnctl.VPN1", path: path, interface: interface, member: member, values))
        return try BusCall.decode(m)
    }

    func error(_ path: String, _ interface: String, _ member: String, _ values: [BusValue] = []) throws -> BusError? {
        do { _ = try decode(path, interface, member, values); return nil } catch let e as BusError { return e }
    }

    @Test func theProfileMethodsNameTheirProfileByTheObjectsId() throws {
        let i = ProfileObjects.profileInterface
        #expect(try decode(Self.profile, i, "Start", [.dictionary([])]) == .start(profile: Self.id, persist: false))
        #expect(try decode(Self.profile, i, "Start", [.dictionary([("persist", .bool(true))])]) == .start(profile: Self.id, persist: true))
        #expect(try decode(Self.profile, i, "Stop") == .stop(profile: Self.id))
        #expect(try decode(Self.profile, i, "Toggle") == .toggle(profile: Self.id))
        #expect(try decode(Self.profile, i, "Verify", [.string("198.19.0.1:80")]) == .verify(profile: Self.id, probe: "198.19.0.1:80"))
        #expect(try decode(Self.profile, i, "Stats") == .stats(profile: Self.id))
    }

    @Test func theManagersMethodsAreOnTheManagerAlone() throws {
        let i = ProfileObjects.managerInterface
        #expect(try decode(ProfileObjects.managerPath, i, "ListProfiles") == .listProfiles)
        #expect(try decode(ProfileObjects.managerPath, i, "GetProfileByName", [.string("office")]) == .profileByName("office"))
        #expect(try decode(ProfileObjects.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects") == .managedObjects)
        #expect(try error(Self.profile, i, "ListProfiles")?.name == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(try error(Self.profile, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")?.name == "org.freedesktop.DBus.Error.UnknownMethod")
    }

    @Test func wrongSignaturesAndOptionsAreInvalidArgsNamingWhatIsWrong() throws {
        let i = ProfileObjects.profileInterface
        let noOptions = try #require(try error(Self.profile, i, "Start"))
        #expect(noOptions.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(noOptions.message == "org.vpnctl.VPN1.Profile.Start takes (a{sv}), not ()")
        let unknown = try #require(try error(Self.profile, i, "Start", [.dictionary([("bogus", .string("x"))])]))
        #expect(unknown.message == "unknown option 'bogus' of type s (Start takes persist: b)")
        let badType = try #require(try error(Self.profile, i, "Start", [.dictionary([("persist", .string("yes"))])]))
        #expect(badType.message == "unknown option 'persist' of type s (Start takes persist: b)")
        #expect(try error(Self.profile, i, "Verify", [.int32(1)])?.message == "org.vpnctl.VPN1.Profile.Verify takes (s), not (i)")
        #expect(try error(ProfileObjects.managerPath, ProfileObjects.managerInterface, "GetProfileByName")?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try error(Self.profile, "org.freedesktop.DBus.Properties", "Get", [.string("x")])?.name == "org.freedesktop.DBus.Error.InvalidArgs")
    }

    @Test func propertiesAreReadOnlyAndUnknownObjectsAreNamed() throws {
        #expect(try decode(Self.profile, "org.freedesktop.DBus.Properties", "Get", [.string(""), .string("Status")])
                == .getProperty(path: Self.profile, interface: "", name: "Status"))
        #expect(try error(Self.profile, "org.freedesktop.DBus.Properties", "Set", [.string(""), .string("Name"), .variant(.string("x"))])?.name
                == "org.freedesktop.DBus.Error.PropertyReadOnly")
        let noObject = try #require(try error("/org/vpnctl/VPN1/profile/nothex", ProfileObjects.profileInterface, "Stop"))
        #expect(noObject.name == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(noObject.message == "no object at /org/vpnctl/VPN1/profile/nothex")
        #expect(try error(Self.profile, "org.example.Nope", "Nope")?.name == "org.freedesktop.DBus.Error.UnknownMethod")
    }

    /// The wire form read back (what the fuzz target starts from) decodes to the same call.
    @Test func aMessageReadFromItsWireFormDecodesTheSame() throws {
        let m = try #require(BusMessage.methodCall(destination: "org.vpnctl.VPN1", path: Self.profile, interface: ProfileObjects.profileInterface,
                                                   member: "Start", [.dictionary([("persist", .bool(true))])]))
        let bytes = try #require(m.marshal())
        let again = try #require(BusMessage.demarshal(bytes))
        #expect(try BusCall.decode(again) == .start(profile: Self.id, persist: true))
        #expect(BusMessage.demarshal(Array(bytes.dropLast())) == nil)
        #expect(BusMessage.demarshal([]) == nil)
    }
}
