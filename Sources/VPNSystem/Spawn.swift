#if canImport(Glibc)
import Glibc
#endif
import CVPNShims

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

extension Spawn {
    /// Runs the executable a checked walk opened (ExecutablePath.open), as
    /// `user`, tied to this process like Processes.spawnTied: the child
    /// execs the open fd with execveat(AT_EMPTY_PATH), so the inode that was
    /// checked is the one that runs, whatever its path names by then.
    /// posix_spawn has no fexecve, and exec through /proc/self/fd/N would need
    /// /proc and an fd left open; the shim's vfork child calls execveat itself.
    /// A script's fd becomes its stdin (the kernel passes the interpreter
    /// "/dev/fd/0"), so it too reads the checked inode; argv[0] is replaced
    /// by the kernel in that case.
    public static func tied(_ executable: CheckedExecutable, _ argv: [String], environment: [String: String], passFDs: [Int32],
                            outputFD: Int32, as user: UserIdentity) throws -> pid_t {
        try Processes.spawning(executable.resolved, argv, environment, passFDs) { args, env, fds, count in
            vpn_spawn_tied_fd_as(executable.resolved, executable.handle, executable.isScript ? 1 : 0, args, env, fds, count, outputFD,
                                 SIGKILL, Int32(bitPattern: user.uid), Int32(bitPattern: user.gid))
        }
    }
}
