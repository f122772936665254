/// How long on-demand waits before starting a tunnel again after a start
/// that did not connect: 1 s, doubling to 5 min, each delay drawn between
/// half and all of its step (jitter, so that many machines behind one
/// captive portal do not retry in step). A network change starts over.
public struct OnDemandBackoff: Sendable {
    public static let firstMs: Int64 = 1000
    public static let maximumMs: Int64 = 300_000

    /// Starts that have failed since the last success or network change.
    public private(set) var failures = 0
    /// No start before this time (the clock's milliseconds).
    public private(set) var notBeforeMs: Int64 = 0

    public init() {}

    /// The step for the n-th failure (1-based), before jitter.
    public static func stepMs(failures n: Int) -> Int64 {
        guard n > 0 else { return 0 }
        let shift = min(n - 1, 20)
        return min(maximumMs, firstMs << Int64(shift))
    }

    /// A start failed at `nowMs`; `random` returns a fraction in [0, 1).
    /// Returns the delay chosen.
    @discardableResult
    public mutating func failed(atMs nowMs: Int64, random: () -> Double) -> Int64 {
        failures += 1
        let step = Self.stepMs(failures: failures)
        let fraction = min(max(random(), 0), 1)
        let delay = step / 2 + Int64(Double(step / 2) * fraction)
        notBeforeMs = nowMs + delay
        return delay
    }

    /// A connection, or a network change: the next start may go at once.
    public mutating func reset() {
        failures = 0
        notBeforeMs = 0
    }

    public func allows(atMs nowMs: Int64) -> Bool { nowMs >= notBeforeMs }
}
