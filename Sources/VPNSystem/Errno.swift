#if canImport(Glibc)
import Glibc
#endif

/// A kernel or libc error number, kept apart from libnl's own codes.
public struct Errno: Error, Equatable, CustomStringConvertible, Sendable {
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The current thread's errno.
    public static var current: Errno { Errno(errno) }

    public static let notFound = Errno(ENOENT)
    public static let permissionDenied = Errno(EACCES)
    public static let notPermitted = Errno(EPERM)
    public static let exists = Errno(EEXIST)
    public static let interrupted = Errno(EINTR)
    public static let tooManyLinks = Errno(ELOOP)

    public var isPermission: Bool { rawValue == EACCES || rawValue == EPERM }

    /// strerror(3) text, lower-cased the way tools print it after a colon.
    public var description: String {
        guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
        let s = String(cString: text)
        guard let first = s.first else { return s }
        return first.lowercased() + s.dropFirst()
    }
}

/// An operation on a path that failed with an errno.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let path: String
    public let errno: Errno

    public init(_ operation: String, path: String, errno: Errno) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var description: String { "cannot \(operation) \(path): \(errno)" }
}

/// Calls `body` again while it fails with EINTR.
@inline(__always)
func retryingOnInterrupt(_ body: () -> Int32) -> Int32 {
    while true {
        let r = body()
        if r == -1 && errno == EINTR { continue }
        return r
    }
}
