#if canImport(Glibc)
import Glibc
#endif

/// What the event loop waits on: the real one is poll(2); unit tests script it.
public protocol EventSource: AnyObject {
    /// Waits up to `timeoutMs` for any of `fds` to be readable (or hung up);
    /// returns the indices of the ready ones.
    func wait(_ fds: [Int32], timeoutMs: Int32) -> [Int]
}

/// Where the loop reads the time: the monotonic clock, or a test's.
public protocol Clock: AnyObject {
    var nowMs: Int64 { get }
}

public final class PollEventSource: EventSource {
    public init() {}
    public func wait(_ fds: [Int32], timeoutMs: Int32) -> [Int] { pollReadable(fds, timeoutMs: timeoutMs) }
}

public final class MonotonicClock: Clock {
    public init() {}
    public var nowMs: Int64 { monotonicMilliseconds() }
}

/// One single-threaded loop over file descriptors and timers: the only place
/// a supervisor waits. Handlers run on the loop's thread, one at a time; a
/// handler may add or remove sources and timers, or stop the loop.
public final class EventLoop {
    public struct Token: Hashable, Sendable { let value: Int }

    struct Watch { let fd: Int32; let handler: () -> Void }
    struct Timer { var dueMs: Int64; let handler: () -> Void }

    public let clock: any Clock
    let source: any EventSource
    var watches: [Int: Watch] = [:]
    var timers: [Int: Timer] = [:]
    var nextToken = 0
    var stopped = false
    /// The longest the loop sleeps with no timer due.
    let idleMs: Int64

    public init(source: any EventSource = PollEventSource(), clock: any Clock = MonotonicClock(), idleMs: Int64 = 1000) {
        self.source = source
        self.clock = clock
        self.idleMs = idleMs
    }

    public var nowMs: Int64 { clock.nowMs }

    func token() -> Int { nextToken += 1; return nextToken }

    /// Calls `handler` whenever `fd` is readable (or hung up) until removed.
    @discardableResult
    public func watch(_ fd: Int32, _ handler: @escaping () -> Void) -> Token {
        let t = token()
        watches[t] = Watch(fd: fd, handler: handler)
        return Token(value: t)
    }

    /// Calls `handler` once, `ms` from now, unless cancelled first.
    @discardableResult
    public func after(_ ms: Int64, _ handler: @escaping () -> Void) -> Token {
        let t = token()
        timers[t] = Timer(dueMs: clock.nowMs + max(0, ms), handler: handler)
        return Token(value: t)
    }

    /// Removes a watch or a timer; removing one that is gone is harmless.
    public func cancel(_ token: Token?) {
        guard let token else { return }
        watches[token.value] = nil
        timers[token.value] = nil
    }

    public var isStopped: Bool { stopped }

    /// Ends `run` after the handler that called it returns.
    public func stop() { stopped = true }

    /// Runs handlers until `stop`.
    public func run() {
        while !stopped { turn() }
    }

    /// One wait and the handlers it makes due: ready fds in the order they
    /// were added, then due timers in the order they fall due.
    public func turn() {
        let order = watches.keys.sorted()
        let now = clock.nowMs
        let nextDue = timers.values.map(\.dueMs).min()
        let timeout = max(0, min(idleMs, (nextDue ?? now + idleMs) - now))
        let ready = source.wait(order.map { watches[$0]!.fd }, timeoutMs: Int32(timeout))
        for i in ready.sorted() where i < order.count {
            if stopped { return }
            // A handler before this one may have removed it.
            watches[order[i]]?.handler()
        }
        let after = clock.nowMs
        let due = timers.filter { $0.value.dueMs <= after }.sorted { ($0.value.dueMs, $0.key) < ($1.value.dueMs, $1.key) }
        for (t, timer) in due {
            if stopped { return }
            guard timers.removeValue(forKey: t) != nil else { continue }
            timer.handler()
        }
    }
}
