#if canImport(Glibc)
import Glibc
#endif

/// Runs programs with posix_spawn. Foundation.Process closes every fd >= 3
/// and leaks its own socket, and fork() after threads exist is unsafe.
public enum Spawn {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let program: String
        public let errno: Errno
        public var description: String { "cannot run \(program): \(errno)" }
    }

    /// Runs argv[0] (searched in PATH) with the caller's stdio and waits.
    /// Returns the exit status, or 128+signal when it was killed.
    public static func runAndWait(_ argv: [String], environment: [String: String]) throws -> Int32 {
        let pid = try spawn(argv, environment: environment)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { throw Failure(program: argv[0], errno: .current) }
        }
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    public static func spawn(_ argv: [String], environment: [String: String]) throws -> pid_t {
        precondition(!argv.isEmpty)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArgs.append(nil)
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        cEnv.append(nil)
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let r = posix_spawnp(&pid, argv[0], nil, nil, cArgs, cEnv)
        if r != 0 { throw Failure(program: argv[0], errno: Errno(r)) }
        return pid
    }
}
