import Foundation
@testable import VPNCore
// TempDir and the fakes of the system's ports, for every file of this target.
@_exported import VPNTestSupport

enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent("fixtures/\(name)"), encoding: .utf8)
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent("fixtures/\(name)")))
    }
}

let samplePeer = WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                               allowedIPs: ["0.0.0.0/0"], endpoint: "198.18.0.1:51820")

func sampleProfile(_ name: String) -> Profile {
    Profile(name: name, protocol: .wireguard(WireGuardConfiguration(
        privateKeySecret: "private-key", addresses: ["10.0.0.2/32"], peers: [samplePeer])))
}
