#if canImport(Glibc)
import Glibc
#endif
import VPNSystem

/// A detached thread running `body` (pthread_create): the bus's signals
/// are sent from one while the main thread dispatches calls (libdbus is
/// thread-safe once dbus_threads_init_default has run).
enum BackgroundThread {
    final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    static func start(_ body: @escaping () -> Void) throws {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let r = pthread_create(&thread, nil, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard r == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            throw SystemError("start a thread", path: "pthread_create", errno: Errno(r))
        }
        pthread_detach(thread)
    }
}
