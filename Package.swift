// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "vpnctl",
    products: [
        .executable(name: "vpnctl", targets: ["vpnctl"]),
        .library(name: "VPNProviderKit", targets: ["VPNProviderKit"]),
        .executable(name: "vpnctl-example-udp-relay", targets: ["vpnctl-example-udp-relay"]),
        .executable(name: "vpnctl-dbus", targets: ["vpnctl-dbus"]),
    ],
    targets: [
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        .target(name: "CVPNShims"),
        .target(name: "VPNSystem", dependencies: ["CNetlink", "CVPNShims"]),
        .target(name: "VPNCore", dependencies: ["VPNSystem", "CCrypto"]),
        .target(name: "VPNService", dependencies: ["VPNCore", "VPNSystem"]),
        .target(name: "VPNCLI", dependencies: ["VPNService", "VPNCore", "VPNSystem"]),
        .executableTarget(name: "vpnctl", dependencies: ["VPNCLI"]),
        // The D-Bus front end: an executable of its own, linked against the
        // shared libdbus-1 (its static archive needs libsystemd, which
        // Debian ships only shared), so that vpnctl stays static.
        .target(name: "VPNDBus", dependencies: ["CDBus", "VPNService", "VPNCore", "VPNSystem"]),
        .executableTarget(name: "vpnctl-dbus", dependencies: ["VPNDBus"]),
        .target(name: "VPNProviderKit"),
        .executableTarget(name: "vpnctl-example-udp-relay", dependencies: ["VPNProviderKit"]),
        // Fakes of the system's ports for unit tests: never in vpnctl itself.
        .target(name: "VPNTestSupport", dependencies: ["VPNCore", "VPNSystem"], path: "Tests/Support"),
        .testTarget(name: "VPNSystemTests", dependencies: ["VPNSystem"]),
        .testTarget(name: "VPNCoreTests", dependencies: ["VPNCore", "VPNSystem", "VPNTestSupport"]),
        .testTarget(name: "VPNServiceTests", dependencies: ["VPNService", "VPNCore", "VPNSystem", "VPNTestSupport"]),
        .testTarget(name: "VPNCLITests", dependencies: ["VPNCLI", "VPNService", "VPNCore"]),
        .testTarget(name: "VPNDBusTests", dependencies: ["VPNDBus", "VPNService", "VPNCore"]),
        .testTarget(name: "VPNProviderKitTests", dependencies: ["VPNProviderKit"]),
    ],
    swiftLanguageModes: [.v5]
)
