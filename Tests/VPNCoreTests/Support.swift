import Foundation
@testable import VPNCore

enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent("fixtures/\(name)"), encoding: .utf8)
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent("fixtures/\(name)")))
    }
}

/// A fresh private directory per test, removed afterwards.
final class TempDir {
    let path: String
    init() {
        var template = Array("/tmp/vpnctl-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

let samplePeer = WireGuardPeer(publicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
                               allowedIPs: ["0.0.0.0/0"], endpoint: "198.18.0.1:51820")

func sampleProfile(_ name: String) -> Profile {
    Profile(name: name, protocol: .wireguard(WireGuardConfiguration(
        privateKeySecret: "private-key", addresses: ["10.0.0.2/32"], peers: [samplePeer])))
}
