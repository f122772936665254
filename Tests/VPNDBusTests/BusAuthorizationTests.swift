import Testing
@testable import VPNDBus
@testable import VPNService
import VPNCore

/// Which refusals polkit is asked about, and what polkit's answers mean.
@Suite struct BusAuthorizationTests {
    @Test func onlyThePolicysRefusalsArePutToPolkit() {
        let denial = AgentAuthorization.Denial(error: VPNError(.permissionDenied, "no"), decision: AccessDecision(allowed: false, why: .needsProfile(.start)))
        #expect(VPNBusService.polkitMayOverturn(denial))
        // A profile the policy hides reads as absent: polkit may still grant it.
        #expect(VPNBusService.polkitMayOverturn(VPNError(.configurationUnknown, "no profile named 'office'")))
        // Anything else is not a refusal of the caller.
        #expect(!VPNBusService.polkitMayOverturn(VPNError(.configurationInvalid, "broken")))
        #expect(!VPNBusService.polkitMayOverturn(VPNError(.failure, "32 requests of yours are running already")))
        #expect(!VPNBusService.polkitMayOverturn(BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "bad")))
    }

    @Test func aCallerIsAskedAboutOffTheLoopOnly() {
        let who = Asker(caller: Caller(uid: 1000, gid: 1000, userName: "alice", groupNames: []), busName: ":1.7", interactive: true)
        #expect(!who.isOffLoop)
        #expect(who.offLoop.isOffLoop)
        #expect(who.offLoop.busName == ":1.7" && who.offLoop.interactive)
    }

    @Test func noPolkitOnTheBusIsNotAnError() {
        #expect(PolkitAuthority.meansAbsent("org.freedesktop.DBus.Error.ServiceUnknown"))
        #expect(PolkitAuthority.meansAbsent("org.freedesktop.DBus.Error.NameHasNoOwner"))
        #expect(!PolkitAuthority.meansAbsent("org.freedesktop.DBus.Error.AccessDenied"))
        #expect(!PolkitAuthority.meansAbsent("org.freedesktop.DBus.Error.NoReply"))
    }
}
