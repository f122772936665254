#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A fresh private directory per test, removed afterwards.
public final class TempDir {
    public let path: String
    public init() {
        var template = Array("/tmp/vpnctl-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}
